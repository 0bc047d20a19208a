"""Adding a record never waits on, or fails because of, the embedder.

The FakeEmbedder (plumbing only) is switched off with ``fail = True``: adds still succeed, keyword
search finds the new item at once, stats show it pending/failed, semantic search answers 503, and
``reindex`` embeds it once the embedder works again.
"""

from __future__ import annotations

from semsearch.embedders.fake import FakeEmbedder


def _stats(client) -> dict:
    return client.get("/collections/items/stats").json()


def test_add_search_stats_reindex_through_an_embedder_outage(make_client) -> None:
    embedder = FakeEmbedder()
    client, state = make_client(embedder=embedder)
    client.post(
        "/collections",
        json={"name": "items", "fields": {"category": "str"}, "text": ["name", "description"]},
    )
    embedder.fail = True

    item = {
        "id": "blazer",
        "name": "navy school blazer",
        "description": "dark blue wool",
        "category": "clothing",
    }
    added = client.post("/collections/items/records", json={"records": [item]})
    assert added.status_code == 200
    assert added.json()["added"] == 1 and added.json()["chunks_pending"] == 1

    hits = client.post(
        "/collections/items/search", json={"query": "blazer", "mode": "keyword"}
    ).json()["hits"]
    assert [h["id"] for h in hits] == ["blazer"]

    assert state.worker.wait_idle(10)  # the worker tried, retried and gave up
    stats = _stats(client)
    assert stats["records"] == 1 and stats["embedded"] == 0
    assert stats["pending"] + stats["failed"] == 1
    assert stats["worker"]["failures"] >= 1
    assert "switched off" in stats["worker"]["last_error"]

    down = client.post("/collections/items/search", json={"query": "blazer", "mode": "semantic"})
    assert down.status_code == 503
    degraded = client.post(
        "/collections/items/search", json={"query": "blazer", "fallback": "keyword"}
    ).json()
    assert degraded["degraded"] is True and [h["id"] for h in degraded["hits"]] == ["blazer"]
    assert client.post("/collections/items/reindex").status_code == 503

    embedder.fail = False
    reindexed = client.post("/collections/items/reindex").json()
    assert reindexed == {"embedded": 1, "pending": 0, "failed": 0, "queued": False}
    stats = _stats(client)
    assert (stats["embedded"], stats["pending"], stats["failed"]) == (1, 0, 0)
    found = client.post("/collections/items/search", json={"query": "navy blazer"}).json()["hits"]
    assert found[0]["id"] == "blazer" and found[0]["percent"] is not None


def test_add_returns_before_the_embedder_runs(make_client) -> None:
    """The upsert call itself never calls the embedder: its call counter stays at zero."""
    embedder = FakeEmbedder()
    client, state = make_client(embedder=embedder)
    state.worker.stop()  # no background embedding at all
    client.post("/collections", json={"name": "items"})
    assert (
        client.post(
            "/collections/items/records", json={"records": [{"id": "a", "text": "red scarf"}]}
        ).status_code
        == 200
    )
    assert embedder.calls == 0
    assert _stats(client)["pending"] == 1


def test_background_worker_embeds_new_records(make_client) -> None:
    embedder = FakeEmbedder()
    client, state = make_client(embedder=embedder)
    client.post("/collections", json={"name": "items"})
    records = [{"id": f"r{i}", "text": f"item number {i}"} for i in range(150)]
    assert (
        client.post("/collections/items/records", json={"records": records}).json()["queued"]
        is True
    )
    assert state.worker.wait_idle(20)
    stats = _stats(client)
    assert (stats["embedded"], stats["pending"], stats["failed"]) == (150, 0, 0)
    assert stats["worker"]["embedded"] == 150


def test_fake_embedder_reindex_without_waiting_hands_the_backlog_to_the_worker(make_client) -> None:
    embedder = FakeEmbedder()
    client, state = make_client(embedder=embedder)
    client.post("/collections", json={"name": "items", "text": ["name"]})
    embedder.fail = True
    names = [f"item {i}" for i in range(5)]
    client.post(
        "/collections/items/records",
        json={"records": [{"id": str(i), "name": n} for i, n in enumerate(names)]},
    )
    assert state.worker.wait_idle(10)  # the worker tried and gave up: 5 chunks left behind
    before = _stats(client)
    assert before["pending"] + before["failed"] == 5

    embedder.fail = False
    answer = client.post("/collections/items/reindex", params={"wait": "false"})
    assert answer.status_code == 202
    body = answer.json()
    assert body["queued"] is True and body["embedded"] == 0
    assert state.worker.wait_idle(30)
    after = _stats(client)
    assert (after["embedded"], after["pending"], after["failed"]) == (5, 0, 0)


def test_fake_embedder_reindex_without_waiting_is_503_when_the_worker_is_stopped(
    make_client,
) -> None:
    client, state = make_client(embedder=FakeEmbedder())
    state.worker.stop()
    client.post("/collections", json={"name": "items", "text": ["name"]})
    client.post("/collections/items/records", json={"records": [{"id": "a", "name": "lamp"}]})
    answer = client.post("/collections/items/reindex", params={"wait": "false"})
    assert answer.status_code == 503
    assert set(answer.json()) == {"error", "message", "hint"}
    assert "wait=true" in answer.json()["hint"]
    assert _stats(client)["pending"] == 1  # still stored, still pending
