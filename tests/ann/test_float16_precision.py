"""Exact search at the stored precision: the SQLite file keeps float16 vectors (format 5), and
every exact path (no graph, a filtered scan, ``exact=True`` over an fp16 graph) returns the
true top-k of those values, against a numpy reference computed here from the float32 input
rounded to float16 and upcast. Graph answers carry the same stored-precision scores.

Plumbing: synthetic clustered vectors set through the real store (tests/ann/synthetic.py), the
fake embedder only sizes chunks. Nothing here is about meaning.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import numpy as np
import pytest

import semsearch
from semsearch.filters import parse_filter
from tests.ann import synthetic as syn
from tests.file_formats import stored_blobs

N, DIM, K = 3000, 48, 10


def reference(vectors: np.ndarray, query: np.ndarray, live: np.ndarray) -> tuple[list, np.ndarray]:
    """(names, scores) of the true top-K at float16 precision, computed without the store."""
    half = vectors.astype(np.float16).astype(np.float32)
    scores = half @ query
    scores[~live] = -np.inf
    top = np.argsort(-scores, kind="stable")[:K]
    return [syn.name(int(i)) for i in top], scores[top]


def search(coll, query: np.ndarray, where=None, exact: bool = False) -> tuple[list, np.ndarray]:
    hits = coll.store.vector_search(coll.name, query, K, where, exact)
    return [h.record_id for h in hits], np.array([h.score for h in hits], np.float32)


@pytest.mark.parametrize("ann", [{}, {"threshold": 1000}, {"threshold": 1000, "storage": "int8"}])
def test_fake_embedder_exact_paths_return_the_true_float16_top_k(db_path: Path, ann) -> None:
    vectors = syn.clustered(N, DIM, seed=3)
    queries = syn.clustered(12, DIM, seed=4)
    everyone = np.ones(N, np.bool_)
    tenth = np.arange(N) % 1000 < 100  # bucket < 100: 300 rows, scanned exactly
    with semsearch.connect(db_path) as db:
        coll = syn.open_collection(db, DIM, **ann)
        syn.write(coll, vectors, list(range(N)))
        where = parse_filter({"bucket": {"$lt": 100}}, coll.schema)
        for q in queries:
            for got, (names, scores) in [
                (search(coll, q, exact=True), reference(vectors, q, everyone)),
                (search(coll, q, where), reference(vectors, q, tenth)),
            ]:
                assert got[0] == names
                np.testing.assert_allclose(got[1], scores, rtol=0, atol=2e-6)


@pytest.mark.parametrize("storage", ["float16", "int8"])
def test_fake_embedder_graph_hits_score_at_the_stored_precision(db_path: Path, storage) -> None:
    """fp16 graph distances are the stored values' cosines; int8 candidates are rescored."""
    vectors = syn.clustered(N, DIM, seed=5)
    half = vectors.astype(np.float16).astype(np.float32)
    with semsearch.connect(db_path) as db:
        coll = syn.open_collection(db, DIM, threshold=1000, storage=storage)
        syn.write(coll, vectors, list(range(N)))
        recall = []
        for q in syn.clustered(12, DIM, seed=6):
            names, scores = search(coll, q)
            rows = [int(n[1:]) for n in names]
            np.testing.assert_allclose(scores, half[rows] @ q, rtol=0, atol=2e-6)
            assert list(scores) == sorted(scores, reverse=True)
            recall.append(len(set(names) & set(reference(vectors, q, np.ones(N, bool))[0])) / K)
        assert np.mean(recall) >= 0.95


def test_fake_embedder_the_vectors_are_on_disk_once_as_float16(db_path: Path) -> None:
    """fp16 storage with ``codes_in_graph=False``: the sidecar holds no vectors array and the
    graph file no codes (sidecar format 4), so the vectors' only bytes on disk are the SQLite file's float16 blobs; opened,
    the graph's fp16 codes (2 * dim bytes a row) are those blobs."""
    import faiss

    from semsearch.ann import file as ann_file

    syn.build_with_sidecar(db_path, N, DIM, threshold=1000, codes_in_graph=False)
    car = ann_file.read_sidecar(ann_file.ann_path(str(db_path), 1), {})
    assert car.vectors is None and car.header["graph"]["codes_in_sqlite"] is True
    graph = faiss.read_index(ann_file.graph_path(str(db_path), 1, car.header["graph"]["token"]))
    assert graph.storage is None and graph.ntotal == N
    conn = sqlite3.connect(db_path)
    blobs = stored_blobs(conn)
    conn.close()
    assert {len(b) for b in blobs.values()} == {2 * DIM}
    with semsearch.connect(db_path) as db:
        coll = db.collection("vecs")
        coll.store.vector_search(coll.name, syn.clustered(1, DIM, seed=4)[0], K, None)
        state = next(iter(coll.store._cache.values())).state
        storage = faiss.downcast_index(state.graph.storage)
        assert storage.sq.qtype == faiss.ScalarQuantizer.QT_fp16 and storage.code_size == 2 * DIM
        for row in (0, N // 2, N - 1):
            assert state.graph_vectors[row].tobytes() == blobs[int(state.chunk_ids[row])]


def test_fake_embedder_int8_sidecar_reopened_rescores_and_scans_from_the_sqlite_file(
    db_path: Path,
) -> None:
    """An int8 graph keeps no vectors beside its codes: a new connection (the sidecar memory-
    mapped, nothing else loaded) still returns stored-precision scores and exact filtered sets."""
    from semsearch.ann import file as ann_file

    vectors = syn.build_with_sidecar(db_path, N, DIM, threshold=1000, storage="int8")
    car = ann_file.read_sidecar(ann_file.ann_path(str(db_path), 1), {})
    assert car.vectors is None and "vectors" not in car.header["arrays"]
    half = vectors.astype(np.float16).astype(np.float32)
    tenth = np.arange(N) % 1000 < 100
    with semsearch.connect(db_path) as db:
        coll = db.collection("vecs")
        where = parse_filter({"bucket": {"$lt": 100}}, coll.schema)
        for q in syn.clustered(6, DIM, seed=8):
            names, scores = search(coll, q)
            np.testing.assert_allclose(scores, half[[int(n[1:]) for n in names]] @ q, atol=2e-6)
            got = search(coll, q, where)
            want = reference(vectors, q, tenth)
            assert got[0] == want[0]
            np.testing.assert_allclose(got[1], want[1], rtol=0, atol=2e-6)
