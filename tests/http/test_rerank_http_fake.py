"""The HTTP search's rerank field and the server-wide reranker, with the fake reranker; and the
query-embedding cache's hit rate in /health (fake embedder)."""

from __future__ import annotations

from semsearch.embedders.fake import FakeEmbedder
from semsearch.rerank.fake import FakeReranker

SEARCH = "/collections/items/search"


def test_server_reranker_reranks_unless_the_request_turns_it_off_fake(items_client) -> None:
    client, state = items_client
    state.reranker = FakeReranker()
    body = {"query": "green steel bottle", "mode": "keyword"}
    on = client.post(SEARCH, json=body).json()
    assert on["reranked_by"] == "fake:"
    assert on["hits"][0]["id"] == "bottle" and on["hits"][0]["score"] == 1.0  # all 3 words
    assert on["hits"][0]["components"]["rerank"] == {"score": 1.0, "rank": 1, "percent": None}
    off = client.post(SEARCH, json=body | {"rerank": False}).json()
    assert off["reranked_by"] is None


def test_reranked_semantic_hits_carry_no_cosine_percent_fake(items_client) -> None:
    client, state = items_client
    state.reranker = FakeReranker()
    hits = client.post(SEARCH, json={"query": "umbrella", "min_score": None}).json()["hits"]
    assert all(h["percent"] is None for h in hits)
    assert all(h["components"]["semantic"]["percent"] is not None for h in hits)


def test_rerank_true_without_a_server_reranker_is_400_fake(items_client) -> None:
    client, _ = items_client
    answer = client.post(SEARCH, json={"query": "bottle", "rerank": True})
    assert answer.status_code == 400 and answer.json()["error"] == "no_reranker"


def test_a_failing_server_reranker_degrades_fake(items_client) -> None:
    client, state = items_client
    state.reranker = FakeReranker(fail=True)
    out = client.post(SEARCH, json={"query": "bottle", "mode": "keyword"}).json()
    assert out["degraded"] and out["hits"] and out["reranked_by"] is None


def test_rerank_top_n_is_bounded_fake(items_client) -> None:
    client, _ = items_client
    assert client.post(SEARCH, json={"query": "x", "rerank_top_n": 0}).status_code == 422


def test_repeated_query_is_embedded_once_and_health_shows_the_hit_rate_fake(make_client) -> None:
    embedder = FakeEmbedder()
    client, state = make_client(embedder=embedder)
    assert client.post("/collections", json={"name": "items"}).status_code == 201
    state.collection("items").upsert([{"id": "a", "text": "navy blazer"}])
    before = embedder.calls
    for _ in range(3):
        assert client.post(SEARCH, json={"query": "blazer"}).status_code == 200
    assert embedder.calls == before + 1
    cache = client.get("/health").json()["query_cache"]
    assert cache["hits"] == 2 and cache["misses"] == 1 and cache["hit_rate"] == 2 / 3


def test_collection_stats_carry_the_query_cache_fake(make_client) -> None:
    client, _ = make_client()
    assert client.post("/collections", json={"name": "items"}).status_code == 201
    client.post(SEARCH, json={"query": "blazer", "mode": "semantic"})
    client.post(SEARCH, json={"query": "blazer", "mode": "semantic"})
    cache = client.get("/collections/items/stats").json()["query_cache"]
    assert (cache["hits"], cache["misses"], cache["capacity"]) == (1, 1, 1024)
