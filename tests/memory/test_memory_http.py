"""The /memory HTTP endpoints on the real app and a real SQLite file (fake embedder: plumbing).

The caller's API key decides whose memory is used; the body can never name a user.
"""

from __future__ import annotations

import hashlib

import pytest

from tests.http.conftest import auth

ALICE = "alice-key-0123456789"
BOB = "bob-key-0123456789ab"
READER = "reader-key-0123456789"
KEYS = f"{ALICE}:write,{BOB}:write,{READER}:read"


def user_of(key: str) -> str:
    return "key-" + hashlib.sha256(key.encode()).hexdigest()[:16]


@pytest.fixture
def client(make_client):
    c, _ = make_client(keys=KEYS)
    return c


def post(client, key, path, body):
    return client.post(path, json=body, headers=auth(key))


def remember(client, key, conversation, content, role="user"):
    r = post(
        client,
        key,
        "/memory/messages",
        {"conversation_id": conversation, "role": role, "content": content},
    )
    assert r.status_code == 201, r.text
    return r.json()


def test_each_key_sees_only_its_own_memory_fake_embedder(client):
    a = remember(client, ALICE, "c1", "my sister lives in Lisbon")
    b = remember(client, BOB, "c1", "my sister lives in Lisbon")
    assert a["user_id"] == user_of(ALICE) and b["user_id"] == user_of(BOB)
    for key in (ALICE, BOB):
        assert post(client, key, "/memory/backfill", {}).json()["remaining"] == 0
    query = {"query": "my sister lives in Lisbon", "min_score": None, "limit": 50}
    alice_hits = post(client, ALICE, "/memory/search", query).json()
    assert [h["message"]["id"] for h in alice_hits] == [a["id"]]
    bob_hits = post(client, BOB, "/memory/search", query).json()
    assert [h["message"]["id"] for h in bob_hits] == [b["id"]]
    assert post(client, READER, "/memory/search", query).json() == []  # its own, empty memory
    recent = client.get("/memory/conversations/c1/messages", headers=auth(ALICE)).json()
    assert [m["id"] for m in recent] == [a["id"]]


def test_the_body_cannot_choose_the_user(client):
    body = {"conversation_id": "c1", "role": "user", "content": "hi", "user_id": user_of(BOB)}
    r = post(client, ALICE, "/memory/messages", body)
    assert r.status_code == 422
    search = {"query": "hi", "user_id": user_of(BOB)}
    assert post(client, ALICE, "/memory/search", search).status_code == 422


def test_roles_and_missing_keys(client):
    body = {"conversation_id": "c1", "role": "user", "content": "hi"}
    assert post(client, READER, "/memory/messages", body).status_code == 403
    assert client.post("/memory/messages", json=body).status_code == 401
    assert client.post("/memory/search", json={"query": "hi"}).status_code == 401
    assert client.delete("/memory", headers=auth(READER)).status_code == 403


def test_context_stats_and_deletes_over_http_fake_embedder(client):
    remember(client, ALICE, "old", "we planned a trip to Kyoto in April")
    remember(client, ALICE, "now", "hello")
    remember(client, ALICE, "now", "hi, how can I help?", role="assistant")
    remember(client, BOB, "old", "we planned a trip to Kyoto in April")
    post(client, ALICE, "/memory/backfill", {})
    body = {
        "conversation_id": "now",
        "query": "trip to Kyoto",
        "min_score": 0.2,
        "token_budget": 100,
    }
    ctx = post(client, ALICE, "/memory/context", body).json()
    assert [i["source"] for i in ctx["items"]] == ["semantic", "recent", "recent", "query"]
    assert ctx["tokens"] <= 100 and ctx["items"][0]["message"]["user_id"] == user_of(ALICE)
    stats = client.get("/memory/stats", headers=auth(ALICE)).json()
    assert (stats["messages"], stats["conversations"]) == (3, 2)
    deleted = client.delete("/memory/conversations/old", headers=auth(ALICE)).json()
    assert deleted == {"deleted": 1}
    again = post(client, ALICE, "/memory/context", body).json()
    assert [i["source"] for i in again["items"]] == ["recent", "recent", "query"]
    assert client.delete("/memory", headers=auth(ALICE)).json() == {"deleted": 2}
    assert client.get("/memory/stats", headers=auth(BOB)).json()["messages"] == 1


def test_bad_input_is_a_clear_400(client):
    body = {"conversation_id": "c1", "role": "robot", "content": "hi"}
    r = post(client, ALICE, "/memory/messages", body)
    assert r.status_code == 400 and "role" in r.json()["message"] and r.json()["hint"]
    too_long = {"conversation_id": "c", "query": "one two three", "token_budget": 1}
    r = post(client, ALICE, "/memory/context", too_long)
    assert r.status_code == 400 and "token_budget" in r.json()["hint"]


def test_local_mode_uses_one_local_user(make_client):
    client, _ = make_client()
    ref = client.post(
        "/memory/messages", json={"conversation_id": "c", "role": "user", "content": "x"}
    ).json()
    assert ref["user_id"] == "local"


def test_reads_on_a_missing_memory_answer_empty_and_create_nothing_fake_embedder(make_client):
    client, state = make_client(keys=KEYS)
    reader = auth(READER)
    stats = client.get("/memory/stats", headers=reader)
    assert stats.status_code == 200, stats.text
    assert stats.json() == {
        "messages": 0, "embedded": 0, "pending": 0, "failed": 0, "conversations": 0, "topics": {},
    }  # fmt: skip
    assert client.get("/memory/conversations/c1/messages", headers=reader).json() == []
    assert post(client, READER, "/memory/search", {"query": "hi"}).json() == []
    ctx = post(client, READER, "/memory/context", {"conversation_id": "c1", "query": "hi"})
    assert ctx.status_code == 200, ctx.text
    assert [i["source"] for i in ctx.json()["items"]] == ["query"]
    assert client.delete("/memory", headers=auth(ALICE)).json() == {"deleted": 0}
    assert client.delete("/memory/conversations/c1", headers=auth(ALICE)).json() == {"deleted": 0}
    assert post(client, ALICE, "/memory/backfill", {}).json()["remaining"] == 0
    assert client.get("/collections", headers=reader).json() == []
    assert state.db.collections() == []


def test_created_at_accepts_iso_8601_and_posix_seconds(client):
    # 365 days after the epoch is 1971-01-01 00:00 UTC (1970 is no leap year)
    for given in (31_536_000.5, "1971-01-01T00:00:00.5+00:00"):
        body = {"conversation_id": "t", "role": "user", "content": "x", "created_at": given}
        r = post(client, ALICE, "/memory/messages", body)
        assert r.status_code == 201, r.text
        assert r.json()["created_at"] == "1971-01-01T00:00:00.500000+00:00"
    body["created_at"] = True  # a JSON boolean is no time
    assert post(client, ALICE, "/memory/messages", body).status_code == 422


def test_memory_health_probes_store_embedder_and_worker_over_http_fake_embedder(make_client):
    """Issue 46, item 10: ``GET /memory/health`` (404 before) probes the store, the embedder and
    the worker as ``ConversationMemory.health()`` does, with the caller's counts as
    ``/memory/stats`` gives them."""
    from semsearch.embedders.fake import FakeEmbedder

    embedder = FakeEmbedder(32)
    client, state = make_client(keys=KEYS, embedder=embedder)
    empty = client.get("/memory/health", headers=auth(ALICE))
    assert empty.status_code == 200, empty.text  # before any message: the embedder is probed
    assert empty.json()["ok"] is True and empty.json()["embedder"]["ok"] is True
    assert (empty.json()["pending"], empty.json()["failed"]) == (0, 0)
    remember(client, BOB, "c1", "bob's message")  # another caller's: never counted for Alice
    assert state.worker.wait_idle(10)
    embedder.fail = True
    remember(client, ALICE, "c1", "said during the outage")
    assert state.worker.wait_idle(10)  # tried, retried, gave up: the chunk is marked failed
    health = client.get("/memory/health", headers=auth(ALICE)).json()
    stats = client.get("/memory/stats", headers=auth(ALICE)).json()
    assert (stats["messages"], stats["pending"], stats["failed"]) == (1, 0, 1)
    assert (health["pending"], health["failed"]) == (stats["pending"], stats["failed"])
    assert health["ok"] is False and health["store"]["ok"] is True
    assert health["embedder"]["ok"] is False and "switched off" in health["embedder"]["detail"]
    assert (
        "1 messages" in health["store"]["detail"]
        and "0 pending, 1 failed" in (health["store"]["detail"])
    )
    assert health["worker"]["failures"] >= 1 and health["worker"]["last_error"]
    assert client.get("/memory/health").status_code == 401  # needs a key, as every /memory route
    embedder.fail = False
    assert client.get("/memory/health", headers=auth(READER)).json()["ok"] is True
