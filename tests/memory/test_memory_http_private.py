"""The memory collection is reachable only through /memory (real app, real SQLite file; fake
embedder: plumbing).

/memory scopes every call to the caller's own messages. The generic collection routes must not
open a side door: before, any read key could search or read every user's messages through
``POST /collections/messages/search`` and any write key could change or delete them.
"""

from __future__ import annotations

import pytest

from tests.http.conftest import ADMIN_KEY, KEYS, READ_KEY, WRITE_KEY, auth


@pytest.fixture
def client(make_client):
    c, state = make_client(keys=KEYS)
    body = {"conversation_id": "c1", "role": "user", "content": "my bank PIN is 4321"}
    added = c.post("/memory/messages", json=body, headers=auth(WRITE_KEY))
    assert added.status_code == 201
    assert state.worker.wait_idle(10)
    return c, added.json()["id"]


@pytest.mark.parametrize("key", [READ_KEY, WRITE_KEY, ADMIN_KEY])
def test_fake_embedder_no_key_reaches_memory_through_collection_routes(client, key) -> None:
    c, message_id = client
    headers = auth(key)
    assert "messages" not in [x["name"] for x in c.get("/collections", headers=headers).json()]
    calls = [
        c.get("/collections/messages", headers=headers),
        c.get("/collections/messages/stats", headers=headers),
        c.post(
            "/collections/messages/search",
            json={"query": "PIN", "mode": "keyword"},
            headers=headers,
        ),
        c.post(
            "/collections/messages/search",
            json={"query": "", "where": {"role": "user"}},
            headers=headers,
        ),
        c.get(f"/collections/messages/records/{message_id}", headers=headers),
    ]
    if key != READ_KEY:
        calls += [
            c.post(
                "/collections/messages/records",
                json={"records": [{"id": "x", "content": "hi"}]},
                headers=headers,
            ),
            c.delete(f"/collections/messages/records/{message_id}", headers=headers),
        ]
    if key == ADMIN_KEY:
        calls.append(c.post("/collections/messages/reindex", headers=headers))
    for answer in calls:
        assert answer.status_code == 404, (answer.request.url, answer.text)
        assert answer.json()["error"] == "index_not_found"
        assert "messages" not in answer.json()["hint"]  # the hint lists no private collection
    # the message is untouched and still the writer's own
    own = c.post(
        "/memory/search", json={"query": "bank PIN", "min_score": None}, headers=auth(WRITE_KEY)
    )
    assert [h["message"]["id"] for h in own.json()] == [message_id]


def test_fake_embedder_admin_cannot_create_or_reshape_the_memory_collection(client) -> None:
    c, _ = client
    answer = c.post(
        "/collections", json={"name": "messages", "fields": {"x": "int"}}, headers=auth(ADMIN_KEY)
    )
    assert answer.status_code == 400
    assert "reserved" in answer.json()["message"]
