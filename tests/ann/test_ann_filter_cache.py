"""The filter cache's byte budget for gathered vectors: proportional to the collection, and the
least recently used filters' vectors make room for new ones.

Plumbing tests on a fake snapshot (only the attributes the cache reads: ``alive``, ``rows``,
``dim``); nothing here is about meaning.
"""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np

from semsearch.ann.filter import VECTOR_BUDGET, FilterCache, vector_budget

ROWS, DIM = 1000, 8


def fake_state() -> SimpleNamespace:
    return SimpleNamespace(alive=np.ones(ROWS, np.bool_), rows=ROWS, dim=DIM)


def entry(cache: FilterCache, state: SimpleNamespace, key: str):  # type: ignore[no-untyped-def]
    return cache.allowed(state, key, lambda: np.arange(ROWS) % 10 == 0)


def test_fake_state_budget_is_a_quarter_of_the_collection_at_float32_capped() -> None:
    assert vector_budget(ROWS, DIM) == ROWS * DIM * 4 // 4  # 8,000 bytes
    assert vector_budget(10**8, 384) == VECTOR_BUDGET == 256 * 1024 * 1024


def test_fake_state_least_recently_used_vectors_make_room_for_new_ones() -> None:
    cache, state = FilterCache(), fake_state()
    block = np.zeros((100, DIM), np.float32)  # 3,200 bytes: two fit in 8,000, three do not
    a, b, c = (entry(cache, state, k) for k in "abc")
    for e in (a, b):
        cache.keep_vectors(state, e, block.copy())
    assert a.vectors is not None and b.vectors is not None
    cache.keep_vectors(state, c, block.copy())
    assert a.vectors is None and b.vectors is not None and c.vectors is not None
    assert entry(cache, state, "b") is b  # b used again: c is now the least recent
    d = entry(cache, state, "d")
    cache.keep_vectors(state, d, block.copy())
    assert b.vectors is not None and c.vectors is None and d.vectors is not None


def test_fake_state_a_set_larger_than_the_budget_is_not_kept_and_evicts_nothing() -> None:
    cache, state = FilterCache(), fake_state()
    small, big = entry(cache, state, "small"), entry(cache, state, "big")
    cache.keep_vectors(state, small, np.zeros((100, DIM), np.float32))
    cache.keep_vectors(state, big, np.zeros((251, DIM), np.float32))  # 8,032 > 8,000 bytes
    assert big.vectors is None and small.vectors is not None
