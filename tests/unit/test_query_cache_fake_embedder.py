"""The LRU cache of query embeddings: keyed by (model, text), bounded, counted (fake embedder)."""

from __future__ import annotations

import numpy as np
import pytest

import semsearch
from semsearch.embedders.fake import FakeEmbedder
from semsearch.embedders.query_cache import CachedEmbedder, QueryCache, uncached, with_query_cache
from semsearch.errors import EmbedderUnavailable


def test_repeated_query_hits_the_cache_fake() -> None:
    inner = FakeEmbedder()
    cached = CachedEmbedder(inner, QueryCache(4))
    first = cached.embed_query("blue pot")
    second = cached.embed_query("blue pot")
    assert inner.calls == 1
    assert np.array_equal(first, inner.embed_query("blue pot"))  # same vector as uncached
    assert np.array_equal(first, second)
    stats = cached.cache.stats()
    assert (stats.hits, stats.misses, stats.entries, stats.hit_rate) == (1, 1, 1, 0.5)


def test_least_recently_used_goes_first_fake() -> None:
    inner = FakeEmbedder()
    cached = CachedEmbedder(inner, QueryCache(2))
    for text in ("a", "b", "a", "c"):  # "b" is the least recently used when "c" arrives
        cached.embed_query(text)
    calls = inner.calls
    cached.embed_query("a")
    assert inner.calls == calls  # still held
    cached.embed_query("b")
    assert inner.calls == calls + 1  # evicted, embedded again
    assert cached.cache.stats().entries == 2


def test_keys_carry_the_model_id_fake() -> None:
    cache = QueryCache()
    small, large = FakeEmbedder(16), FakeEmbedder(32)
    assert with_query_cache(small, cache).embed_query("x").shape == (16,)
    assert with_query_cache(large, cache).embed_query("x").shape == (32,)
    assert cache.stats().misses == 2


def test_a_failure_is_not_cached_fake() -> None:
    inner = FakeEmbedder(fail=True)
    cached = CachedEmbedder(inner, QueryCache())
    with pytest.raises(EmbedderUnavailable):
        cached.embed_query("x")
    inner.fail = False
    assert cached.embed_query("x").shape == (32,) and cached.cache.stats().entries == 1


def test_callers_cannot_change_what_the_cache_holds_fake() -> None:
    cached = CachedEmbedder(FakeEmbedder(), QueryCache())
    vector = cached.embed_query("x")
    vector[:] = 0.0
    assert np.linalg.norm(cached.embed_query("x")) == pytest.approx(1.0)


def test_wrapper_passes_everything_else_through_fake() -> None:
    inner = FakeEmbedder()
    cached = with_query_cache(inner, QueryCache())
    assert with_query_cache(cached, QueryCache()) is cached  # never wrapped twice
    assert uncached(cached) is inner and with_query_cache(inner, None) is inner
    assert (cached.model_id, cached.dim, cached.max_tokens) == ("fake:32", 32, 64)
    assert cached.token_spans("a b") == inner.token_spans("a b")
    assert cached.default_min_score == inner.default_min_score  # type: ignore[attr-defined]
    cached.embed_documents(["a"])
    cached.embed_documents(["a"])
    assert inner.calls == 2  # documents are never cached


def test_plain_library_search_does_not_cache_fake() -> None:
    db = semsearch.connect(":memory:")
    embedder = FakeEmbedder()
    coll = db.collection("n", embedder=embedder, create=True)
    coll.upsert([{"id": "a", "text": "blue pot"}])
    before = embedder.calls
    coll.search("pot")
    coll.search("pot")
    assert embedder.calls == before + 2
    db.close()


def test_capacity_must_be_positive() -> None:
    with pytest.raises(ValueError, match="capacity"):
        QueryCache(0)
