"""Searches under the HNSW graph keep the exact scan's promises: the filter guarantee, recall,
and no deleted or replaced vector ever coming back.

Plumbing tests on synthetic clustered vectors written through the real SQLite store
(tests/ann/synthetic.py); ground truth is a plain numpy scan over the same vectors.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import semsearch
from semsearch.filters import parse_filter
from tests.ann import synthetic as syn

DIM = 32
N_FILTER = 20_000


@pytest.fixture(scope="module")
def filtered_db(tmp_path_factory: pytest.TempPathFactory):
    """20,000 vectors; graph above 1,000 chunks; filters passing <= 500 chunks scan exactly."""
    path = tmp_path_factory.mktemp("ann") / "filter.embed.db"
    vectors = syn.clustered(N_FILTER, DIM, seed=0)
    db = semsearch.connect(path)
    coll = syn.open_collection(db, DIM, threshold=1000, exact_filter_rows=500)
    syn.write(coll, vectors, list(range(N_FILTER)))
    yield coll, vectors
    db.close()


# bucket = i % 1000, so {"bucket": {"$lt": b}} lets b/1000 of the records through.
@pytest.mark.parametrize(("buckets", "k"), [(1, 10), (1, 50), (10, 10), (100, 10), (500, 10)])
def test_plumbing_filter_returns_min_k_matches_with_recall_095_against_exact_scan(
    filtered_db, buckets: int, k: int
) -> None:
    coll, vectors = filtered_db
    where = parse_filter({"bucket": {"$lt": buckets}}, syn.SCHEMA)
    passing = (np.arange(N_FILTER) % 1000) < buckets
    recalls = []
    for q in syn.clustered(40, DIM, seed=21):
        got = [h.record_id for h in coll.store.vector_search(coll.name, q, k, where)]
        truth = syn.exact_top(vectors, passing, q, k)
        assert len(got) == min(k, int(passing.sum()))  # 20 pass at 0.1%: k=50 gives 20
        assert all(int(g[1:]) % 1000 < buckets for g in got)
        recalls.append(len(set(got) & set(truth)) / len(truth))
    assert np.mean(recalls) >= 0.95


def test_plumbing_graph_is_used_for_broad_filters_and_unfiltered_search(filtered_db) -> None:
    coll, _ = filtered_db
    coll.store.vector_search(coll.name, syn.clustered(1, DIM, seed=1)[0], 10, None)
    state = coll.store._matrix(coll.name)[-1]
    assert state.graph is not None and state.graph_rows == N_FILTER


def test_plumbing_graph_that_runs_dry_widens_or_falls_back_to_exact(tmp_path: Path) -> None:
    """exact_filter_rows=0 sends even a 0.1% filter (20 chunks) through the graph."""
    vectors = syn.clustered(5000, DIM, seed=4)
    with semsearch.connect(tmp_path / "dry.embed.db") as db:
        coll = syn.open_collection(db, DIM, threshold=1000, exact_filter_rows=0, ef_search=16)
        syn.write(coll, vectors, list(range(5000)))
        where = parse_filter({"bucket": {"$in": [3, 777]}}, syn.SCHEMA)
        passing = np.isin(np.arange(5000) % 1000, [3, 777])
        for q in syn.clustered(10, DIM, seed=8):
            got = [h.record_id for h in coll.store.vector_search(coll.name, q, 10, where)]
            assert got == syn.exact_top(vectors, passing, q, 10)


def test_plumbing_deleted_and_replaced_vectors_never_appear_under_hnsw(tmp_path: Path) -> None:
    n = 4000
    vectors = syn.clustered(n, DIM, seed=2)
    with semsearch.connect(tmp_path / "del.embed.db") as db:
        coll = syn.open_collection(db, DIM, threshold=1000)
        syn.write(coll, vectors, list(range(n)))
        coll.store.vector_search(coll.name, vectors[0], 10, None)  # graph built and saved
        deleted = list(range(0, n, 10))
        coll.delete([syn.name(i) for i in deleted])
        # Replace 100 more: same ids, vectors far from their old ones (negated).
        replaced = list(range(5, 1000, 10))
        coll.delete([syn.name(i) for i in replaced])
        syn.write(coll, -vectors[replaced], replaced)
        state = coll.store._matrix(coll.name)[-1]
        assert state.graph is not None  # still the graph, with tombstones
        gone = {syn.name(i) for i in deleted}
        for i in deleted[:100] + replaced[:50]:
            hits = coll.store.vector_search(coll.name, vectors[i], 10, None)
            names = [h.record_id for h in hits]
            assert len(names) == 10
            assert not gone & set(names)
            if i in replaced:  # its old vector is gone: the query no longer finds it first
                assert names[0] != syn.name(i)
        live = np.ones(n, bool)
        live[deleted] = False
        current = vectors.copy()
        current[replaced] = -vectors[replaced]
        q = syn.clustered(1, DIM, seed=30)[0]
        exact = [h.record_id for h in coll.store.vector_search(coll.name, q, 10, None, exact=True)]
        assert exact == syn.exact_top(current, live, q, 10)


@pytest.mark.parametrize("exact_filter_rows", [0, 100_000])
def test_plumbing_repeated_filter_sees_every_write_between_searches(
    tmp_path: Path, exact_filter_rows: int
) -> None:
    """A filter's allowed set is cached per snapshot; a write (delete, add, field change) makes
    a new snapshot, so the same filter answers from the new data. Both plans: in the graph
    (exact_filter_rows=0) and an exact scan of the filtered chunks."""
    n = 4000
    vectors = syn.clustered(n, DIM, seed=5)
    with semsearch.connect(tmp_path / "cache.embed.db") as db:
        coll = syn.open_collection(
            db, DIM, threshold=1000, exact_filter_rows=exact_filter_rows, ef_search=16
        )
        syn.write(coll, vectors, list(range(n)))
        seven = parse_filter({"bucket": 7}, syn.SCHEMA)
        q = vectors[1007]

        def names(where) -> list[str]:
            return [h.record_id for h in coll.store.vector_search(coll.name, q, 10, where)]

        # bucket 7 holds ids 7, 1007, 2007, 3007; 1007 is the query itself, so it ranks first.
        assert names(seven)[0] == syn.name(1007)
        assert sorted(names(seven)) == [syn.name(i) for i in (7, 1007, 2007, 3007)]
        coll.delete([syn.name(1007)])
        assert sorted(names(seven)) == [syn.name(i) for i in (7, 2007, 3007)]
        syn.write(coll, q[None, :], [5007])  # bucket 5007 % 1000 = 7, the query's own vector
        assert names(seven)[0] == syn.name(5007)
        # A field-only change (same text, no re-embedding) moves 2007 out of bucket 7.
        coll.upsert([{"id": syn.name(2007), "text": syn.name(2007), "bucket": 8}], embed=False)
        assert sorted(names(seven)) == [syn.name(i) for i in (7, 3007, 5007)]
        eight = parse_filter({"bucket": 8}, syn.SCHEMA)
        assert syn.name(2007) in names(eight)
