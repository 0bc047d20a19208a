"""HTTP search applies the embedder's default min_score and notes a threshold a mode ignores."""

from __future__ import annotations

from tests.unit.test_thresholds_fake_embedder import TEXTS, Strict


def test_http_search_uses_the_embedders_default_fake_embedder(make_client) -> None:
    client, state = make_client(embedder=Strict(32))
    assert client.post("/collections", json={"name": "t"}).status_code == 201
    records = [{"id": k, "text": v} for k, v in TEXTS.items()]
    assert client.post("/collections/t/records", json={"records": records}).status_code == 200
    assert state.worker.wait_idle(10)
    body = client.post("/collections/t/search", json={"query": TEXTS["a"]}).json()
    assert [h["id"] for h in body["hits"]] == ["a"] and body["min_score"] == 0.999
    named = {"query": TEXTS["a"], "min_score": "default"}
    assert client.post("/collections/t/search", json=named).json()["min_score"] == 0.999
    keyword = {"query": "alpha owls", "mode": "keyword", "min_score": 0.5}
    body = client.post("/collections/t/search", json=keyword).json()
    assert body["min_score"] is None and "min_score=0.5 ignored" in body["notes"][0]
    hybrid = {"query": "alpha owls", "mode": "hybrid", "min_score": 0.5}
    body = client.post("/collections/t/search", json=hybrid).json()
    assert body["min_score"] == 0.5 and all(h["score"] >= 0.5 for h in body["hits"])
    every = {"query": TEXTS["a"], "min_score": None}
    assert len(client.post("/collections/t/search", json=every).json()["hits"]) == 3
