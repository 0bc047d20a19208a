"""The Milvus store's filter guarantee (issue 23): a filtered vector search returns
min(limit, matches) hits, all matching, scored as an exact scan scores them.

5,000 records with fake vectors (seeded gaussian, unit length; no model) in a real Milvus Lite
store, filled through the Store primitives. Record ``i`` has ``bucket = i % 1000``, so
``bucket < 1`` keeps 0.1% (5 records), ``< 10`` 1% (50), ``< 100`` 10% (500) and ``< 500``
50% (2,500). The reference is an exact numpy scan over the matching vectors, in the test.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from semsearch.filters import parse_filter
from semsearch.results import Chunk
from semsearch.schema import Schema
from semsearch.stores.base import ChunkWrite, CollectionInfo, RecordWrite
from semsearch.stores.milvus import query as milvus_query
from semsearch.stores.milvus.state import EXACT_MAX
from semsearch.stores.milvus.store import MilvusStore

N, DIM, NAME = 5000, 64, "guarantee"
SCHEMA = Schema.from_types({"bucket": "int"})
#: bucket bound -> selectivity label (bucket = i % 1000, so bound / 1000 of the records match)
BOUNDS = {1: "0.1%", 10: "1%", 100: "10%", 500: "50%"}


def _vectors(n: int, seed: int) -> np.ndarray:
    x = np.random.default_rng(seed).normal(size=(n, DIM)).astype(np.float32)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def _record(i: int) -> RecordWrite:
    text = f"record {i}"
    digest = hashlib.sha256(text.encode()).hexdigest()
    fields = {"bucket": i % 1000}
    chunk = ChunkWrite(Chunk(text, 0, 0, len(text)), text, digest)
    return RecordWrite(f"r{i:05d}", fields, fields, text, digest, [chunk])


@pytest.fixture(scope="module")
def filled(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[MilvusStore, np.ndarray]]:
    """The store with N records and their vectors (row i of the array is record i's)."""
    path: Path = tmp_path_factory.mktemp("milvus") / "guarantee.db"
    store = MilvusStore(f"milvus-lite://{path}")
    vectors = _vectors(N, seed=23)
    store.create_collection(CollectionInfo(NAME, SCHEMA.to_json(), "fake:64", DIM))
    for start in range(0, N, 1000):
        result = store.write_records(NAME, [_record(i) for i in range(start, start + 1000)])
        ids = [p.chunk_id for p in result.pending]
        store.set_vectors(NAME, ids, vectors[start : start + 1000])
    yield store, vectors
    store.close()


def _exact(vectors: np.ndarray, query: np.ndarray, bound: int) -> dict[str, float]:
    """Record id -> cosine of every record with bucket < bound (numpy, in the test)."""
    rows = [i for i in range(N) if i % 1000 < bound]
    return {f"r{i:05d}": float(vectors[i] @ query) for i in rows}


@pytest.mark.parametrize("bound", list(BOUNDS), ids=list(BOUNDS.values()))
@pytest.mark.parametrize("limit", [10, 100])
def test_filtered_search_returns_min_of_limit_and_matches_fake_vectors(
    filled: tuple[MilvusStore, np.ndarray], bound: int, limit: int
) -> None:
    store, vectors = filled
    where = parse_filter({"bucket": {"$lt": bound}}, SCHEMA)
    for query in _vectors(5, seed=bound + limit):
        truth = _exact(vectors, query, bound)
        hits = store.vector_search(NAME, query, limit, where)
        assert len(hits) == min(limit, len(truth))
        assert len({h.record_id for h in hits}) == len(hits)
        for h in hits:
            assert h.record_id in truth  # every hit matches the filter
            assert h.score == pytest.approx(truth[h.record_id], abs=1e-5)
        assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
        best = sorted(truth, key=lambda r: (-truth[r], r))[:limit]
        found = {h.record_id for h in hits}
        if len(truth) <= EXACT_MAX:  # small match sets are ranked exactly
            assert found == set(best)
        else:  # larger ones by HNSW: most of the true top-k
            assert len(found & set(best)) >= 0.9 * len(best)


def test_a_write_forgets_which_filters_are_large_fake_vectors(
    filled: tuple[MilvusStore, np.ndarray],
) -> None:
    store, vectors = filled
    where = parse_filter({"bucket": {"$lt": 100}}, SCHEMA)
    expr = store.filter_expr(where)
    store.vector_search(NAME, vectors[0], 10, where)
    assert store.state.known_large(
        NAME, expr
    )  # 500 matches > EXACT_MAX: the next search skips the probe
    store.delete_records(NAME, ["r04999"])  # bucket 999: no match changes, but a write happened
    assert not store.state.known_large(NAME, expr)
    assert len(store.vector_search(NAME, vectors[0], 10, where)) == 10


def test_a_filter_whose_ann_starved_is_ranked_exactly_until_the_next_write_fake_vectors(
    filled: tuple[MilvusStore, np.ndarray], monkeypatch: pytest.MonkeyPatch
) -> None:
    store, vectors = filled
    calls: list[int] = []
    ann = milvus_query.ann

    def counted(*args, **kwargs):  # type: ignore[no-untyped-def]
        calls.append(args[3])  # k
        return ann(*args, **kwargs)

    monkeypatch.setattr(milvus_query, "ann", counted)
    where = parse_filter({"bucket": {"$lt": 100}}, SCHEMA)  # 500 matches > EXACT_MAX
    expr = store.filter_expr(where)
    truth = _exact(vectors, vectors[1], 100)
    everything = sorted(truth, key=lambda r: (-truth[r], r))
    # k = 600 > 500 matches: the filtered ANN must come back short, and the exact scan answers
    first = store.vector_search(NAME, vectors[1], 600, where)
    assert calls == [600] and store.state.ann_starved(NAME, expr, 600)
    assert not store.state.ann_starved(NAME, expr, 10)  # a smaller k may not starve
    again = store.vector_search(NAME, vectors[1], 700, where)  # deeper still: no ANN call
    assert calls == [600]
    for hits in (first, again):
        assert [h.record_id for h in hits] == everything  # every match, exact order
    store.vector_search(NAME, vectors[1], 10, where)
    assert calls == [600, 10]
    store.delete_records(NAME, ["r04998"])  # bucket 998, no match changes; still a write
    assert not store.state.ann_starved(NAME, expr, 600)
    assert len(store.vector_search(NAME, vectors[1], 600, where)) == 500
    assert calls == [600, 10, 600]
