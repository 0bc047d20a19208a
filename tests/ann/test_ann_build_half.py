"""A graph built at a collection's first search reads its rows as float16 (no float32 copy of
them all): the rows are the stored values, the graph is the one float32 rows would give, and
if faiss cannot build, the float16 rows still answer exactly.

Plumbing tests: synthetic clustered vectors through the real store (tests/ann/synthetic.py),
real faiss graphs. Expected scores are numpy dot products of the vectors rounded to float16.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import numpy as np
import pytest

import semsearch
from semsearch.ann import graph as ann_graph
from semsearch.ann.policy import AnnOptions
from semsearch.ann.rows import load_rows
from semsearch.errors import BackendUnavailable
from tests.ann import synthetic as syn
from tests.file_formats import stored_blobs

N, DIM, K = 3000, 32, 10


def written(db_path: Path) -> np.ndarray:
    vectors = syn.clustered(N, DIM, seed=3)
    with semsearch.connect(db_path) as db:
        # the first search builds the graph (what these tests look at), not the writes
        coll = syn.open_collection(db, DIM, threshold=1000, build_while_writing=False)
        syn.write(coll, vectors, list(range(N)))
    return vectors


def test_plumbing_rows_loaded_for_a_build_are_the_stored_float16_values(db_path: Path) -> None:
    vectors = written(db_path)
    conn = sqlite3.connect(db_path)
    identity = {"dim": DIM}
    state = load_rows(conn, 1, identity, AnnOptions(threshold=1000), half=True)
    below = load_rows(conn, 1, identity, AnnOptions(threshold=N + 1), half=True)
    blobs = [b for _, b in sorted(stored_blobs(conn).items())]
    conn.close()
    # below the threshold no graph follows: exact scans get float32 rows as before
    assert state.fresh.dtype == np.float16 and below.fresh.dtype == np.float32
    np.testing.assert_array_equal(
        state.fresh, np.frombuffer(b"".join(blobs), "<f2").reshape(N, DIM)
    )
    np.testing.assert_array_equal(state.fresh.astype(np.float32), below.fresh)
    stored = {row.tobytes() for row in vectors.astype("<f2")}
    assert {row.tobytes() for row in state.fresh} == stored


@pytest.mark.parametrize("storage", ["float16", "int8", "float32"])
def test_plumbing_a_graph_from_float16_rows_equals_one_from_their_float32_upcast(
    storage: str,
) -> None:
    half = syn.clustered(N, DIM, seed=4).astype(np.float16)
    opts = AnnOptions(storage=storage, M=16, ef_construction=40)
    a = ann_graph.build_graph(half, opts)
    b = ann_graph.build_graph(half.astype(np.float32), opts)
    queries = syn.clustered(5, DIM, seed=5)
    for q in queries:
        ra, sa = ann_graph.search_graph(a, q, K, 64, None)
        rb, sb = ann_graph.search_graph(b, q, K, 64, None)
        np.testing.assert_array_equal(ra, rb)
        np.testing.assert_array_equal(sa, sb)
    va, vb = ann_graph.graph_vectors(a), ann_graph.graph_vectors(b)
    if va is not None and vb is not None:
        np.testing.assert_array_equal(va, vb)


def test_plumbing_without_faiss_the_rows_loaded_for_a_build_answer_exactly_in_float32(
    db_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    vectors = written(db_path)

    def no_faiss() -> None:
        raise BackendUnavailable("faiss is not installed", hint="pip install faiss-cpu")

    monkeypatch.setattr(ann_graph, "_faiss", no_faiss)
    half = vectors.astype(np.float16).astype(np.float32)
    with semsearch.connect(db_path) as db:
        coll = db.collection("vecs")
        coll.store.vector_search("vecs", vectors[0], K, None)
        (index,) = coll.store._cache.values()
        assert index.state.graph is None and index.state.fresh.dtype == np.float32
        for q in syn.clustered(4, DIM, seed=6):
            hits = coll.store.vector_search("vecs", q, K, None)
            scores = half @ q
            order = np.argsort(-scores, kind="stable")[:K]
            assert [h.record_id for h in hits] == [syn.name(int(i)) for i in order]
            np.testing.assert_allclose([h.score for h in hits], scores[order], rtol=0, atol=2e-6)


def test_plumbing_a_compacted_fp16_graph_holds_the_stored_values_of_the_live_rows(
    db_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Compaction rebuilds from float16 rows (graph codes and fresh rows, no float32 copy): the
    new graph's codes are the live chunks' blobs bit for bit, and hits score as numpy does."""
    import logging

    vectors = written(db_path)
    gone = list(range(0, N, 3))  # 1,000 of 3,000: past compact_fraction (20%)
    with semsearch.connect(db_path) as db, caplog.at_level(logging.INFO, "semsearch.stores.ann"):
        coll = db.collection("vecs")
        coll.store.vector_search("vecs", vectors[0], K, None)  # builds the graph
        syn.write(coll, syn.clustered(50, DIM, seed=8), list(range(N, N + 50)))  # fresh rows
        coll.delete([syn.name(i) for i in gone])
        q = syn.clustered(1, DIM, seed=9)[0]
        hits = coll.store.vector_search("vecs", q, K, None)
        (index,) = coll.store._cache.values()
        state = index.state
    assert any("compacted" in r.getMessage() for r in caplog.records)
    assert state.graph_rows == N - len(gone) + 50 and state.graph_vectors.dtype == np.float16
    conn = sqlite3.connect(db_path)
    blobs = stored_blobs(conn)
    conn.close()
    assert len(blobs) == state.graph_rows
    for row in range(state.graph_rows):
        assert state.graph_vectors[row].tobytes() == blobs[int(state.chunk_ids[row])]
    every = np.concatenate([vectors, syn.clustered(50, DIM, seed=8)])
    half = every.astype(np.float16).astype(np.float32)
    rows = [int(h.record_id[1:]) for h in hits]
    np.testing.assert_allclose([h.score for h in hits], half[rows] @ q, rtol=0, atol=2e-6)
    assert not set(rows) & set(gone)
