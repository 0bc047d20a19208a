"""Sidecar format 4: an fp16 graph file without its codes, which are read back from the SQLite
file's float16 vectors on open, against format-3 files that carry them.

Plumbing tests: synthetic clustered vectors written through the real store
(tests/ann/synthetic.py), real faiss graphs and real files. Expected scores are numpy dot
products of the vectors rounded to float16 in the test (the precision the file stores).
"""

from __future__ import annotations

import glob
import logging
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import semsearch
from semsearch.ann import file as ann_file
from tests.ann import synthetic as syn
from tests.file_formats import stored_blobs

N, DIM, K = 3000, 32, 10
ANN = {"threshold": 1000, "ef_search": 128, "codes_in_graph": False}


def header(db_path: Path) -> dict[str, Any]:
    return ann_file.read_header(ann_file.ann_path(str(db_path), 1))[0]


def graph_file(db_path: Path) -> Path:
    (found,) = glob.glob(f"{db_path}.c1.*.hnsw")
    return Path(found)


def to_format_3(db_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Rewrite a collection's sidecar as the previous version wrote it: a format-3 ``.ann``
    (no ``codes_in_sqlite``) naming a graph file that holds its fp16 codes."""
    import faiss

    old = graph_file(db_path)
    head = header(db_path)
    car = ann_file.read_sidecar(ann_file.ann_path(str(db_path), 1), {})
    with semsearch.connect(db_path) as db:
        coll = db.collection("vecs")
        coll.store.vector_search(coll.name, np.ones(DIM, np.float32) / DIM**0.5, 1, None)
        graph = next(iter(coll.store._cache.values())).state.graph
        storage = faiss.downcast_index(graph.storage)
        assert storage.codes.is_owned  # the codes came from the SQLite file
        token = ann_file.new_token()
        gpath = ann_file.graph_path(str(db_path), 1, token)
        faiss.write_index(graph, gpath)
    arrays = {
        "chunk_ids": np.array(car.chunk_ids),
        "record_rowids": np.array(car.record_rowids),
        "alive": np.array(car.alive),
    }
    graph_info = {k: v for k, v in head["graph"].items() if k != "codes_in_sqlite"}
    graph_info.update(token=token, size=Path(gpath).stat().st_size)
    keep = {k: v for k, v in head.items() if k not in ("format", "arrays", "crc32", "file_size")}
    monkeypatch.setattr(ann_file, "FORMAT", 3)
    ann_file.write_sidecar(ann_file.ann_path(str(db_path), 1), dict(keep, graph=graph_info), arrays)
    monkeypatch.undo()
    old.unlink()


def snapshot(db_path: Path) -> dict[str, bytes]:
    return {Path(p).name: Path(p).read_bytes() for p in glob.glob(f"{db_path}.c1.*")}


def search(db_path: Path, queries: np.ndarray) -> list[tuple[list[str], list[float]]]:
    with semsearch.connect(db_path) as db:
        coll = db.collection("vecs")
        out = []
        for q in queries:
            hits = coll.store.vector_search("vecs", q, K, None)
            out.append(([h.record_id for h in hits], [h.score for h in hits]))
        return out


def check_scores(vectors: np.ndarray, got: list[tuple[list[str], list[float]]], queries) -> None:
    """Each hit's score is its float16-stored vector's cosine with the query (numpy), clamped
    to [-1, 1] as the store reports cosines."""
    half = vectors.astype(np.float16).astype(np.float32)
    for (names, scores), q in zip(got, queries, strict=True):
        rows = [int(n[1:]) for n in names]
        expected = np.clip(half[rows] @ q, -1.0, 1.0)
        np.testing.assert_allclose(scores, expected, rtol=0, atol=2e-6)


def reembed(coll: Any, ids: list[int], vectors: np.ndarray) -> None:
    """New text for records ``ids`` (so their chunks are re-embedded), vectors ``vectors``."""
    coll.upsert(
        [{"id": syn.name(i), "text": f"{syn.name(i)} new", "bucket": i} for i in ids], embed=False
    )
    pending = coll.store.pending_chunks(coll.name, len(ids) + 10)
    assert len(pending) == len(ids)
    row = {syn.name(i): k for k, i in enumerate(ids)}
    picked = [row[p.embed_text.split()[0]] for p in pending]
    coll.store.set_vectors(coll.name, [p.chunk_id for p in pending], vectors[picked])


@pytest.fixture
def built(db_path: Path) -> np.ndarray:
    return syn.build_with_sidecar(db_path, N, DIM, **ANN)


def test_plumbing_a_format_4_graph_file_holds_no_codes_and_is_smaller_by_them(
    built: np.ndarray, db_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    head = header(db_path)
    assert head["format"] == 4 and head["graph"]["codes_in_sqlite"] is True
    size4 = graph_file(db_path).stat().st_size
    to_format_3(db_path, monkeypatch)
    size3 = graph_file(db_path).stat().st_size
    # the codes (2 bytes a value) plus the storage's own header of a few dozen bytes
    assert N * 2 * DIM < size3 - size4 < N * 2 * DIM + 200


def test_plumbing_format_4_loads_codes_from_sqlite_same_top_k_and_scores_as_format_3(
    built: np.ndarray, db_path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    queries = syn.clustered(20, DIM, seed=41)
    other = tmp_path / "f3"
    other.mkdir()
    for p in glob.glob(f"{db_path}*"):
        shutil.copy(p, other / Path(p).name)
    db3 = other / db_path.name
    to_format_3(db3, monkeypatch)
    assert header(db3)["format"] == 3 and header(db_path)["format"] == 4
    got4, got3 = search(db_path, queries), search(db3, queries)
    assert got4 == got3  # the same graph over the same codes: identical rows and scores
    check_scores(built, got4, queries)
    truth = [syn.exact_top(built, np.ones(N, bool), q, K) for q in queries]
    recall = np.mean([len(set(g[0]) & set(t)) / K for g, t in zip(got4, truth, strict=True)])
    assert recall >= 0.95


def test_plumbing_a_format_3_sidecar_is_read_unchanged_until_the_graph_is_merged(
    built: np.ndarray, db_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    to_format_3(db_path, monkeypatch)
    before = snapshot(db_path)
    queries = syn.clustered(5, DIM, seed=43)
    check_scores(built, search(db_path, queries), queries)
    extra = syn.clustered(1100, DIM, seed=44)
    with semsearch.connect(db_path) as db:  # a few writes: caught up, the sidecar stays
        syn.write(db.collection("vecs"), extra[:10], list(range(N, N + 10)))
    vectors = np.concatenate([built, extra[:10]])
    check_scores(vectors, search(db_path, queries), queries)
    assert snapshot(db_path) == before and header(db_path)["format"] == 3
    with semsearch.connect(db_path) as db:  # past merge_fraction: merged and saved as format 4
        coll = db.collection("vecs")
        syn.write(coll, extra[10:], list(range(N + 10, N + 1100)))
        coll.store.vector_search("vecs", queries[0], K, None)
    head = header(db_path)
    assert head["format"] == 4 and head["graph"]["codes_in_sqlite"] is True
    assert head["graph_rows"] == N + 1100
    vectors = np.concatenate([built, extra])
    got = search(db_path, queries)
    check_scores(vectors, got, queries)
    truth = [syn.exact_top(vectors, np.ones(N + 1100, bool), q, K) for q in queries]
    assert np.mean([len(set(g[0]) & set(t)) / K for g, t in zip(got, truth, strict=True)]) >= 0.9


def test_plumbing_vectors_changed_or_deleted_since_the_save_are_never_scored_stale(
    built: np.ndarray, db_path: Path
) -> None:
    """Chunks re-embedded or deleted after the format-4 save: on the next open their rows get
    the file's current values and the catch-up tombstones them, so every hit scores the
    vector the file now stores, and deleted records never come back."""
    queries = syn.clustered(4, DIM, seed=45)
    moved = [7, 8, 9]
    with semsearch.connect(db_path) as db:
        coll = db.collection("vecs")
        reembed(coll, moved, queries[: len(moved)])  # their vectors become the queries
        coll.delete([syn.name(i) for i in (20, 21)])
    files = snapshot(db_path)
    vectors = built.copy()
    vectors[moved] = queries[: len(moved)]
    live = np.ones(N, bool)
    live[[20, 21]] = False
    old_queries = built[[7, 20, 21]]
    got = search(db_path, np.concatenate([queries, old_queries]))
    assert snapshot(db_path) == files  # read only: catch-up, no rewrite
    check_scores(vectors, got, np.concatenate([queries, old_queries]))
    for i, row in enumerate(moved):
        assert got[i][0][0] == syn.name(row)
    for names, _ in got:
        assert syn.name(20) not in names and syn.name(21) not in names
    for (names, _), q in zip(got, np.concatenate([queries, old_queries]), strict=True):
        truth = syn.exact_top(vectors, live, q, K)
        assert len(set(names) & set(truth)) >= K - 1


def name_graph(db_path: Path, head: dict[str, Any], graph: Path) -> None:
    """Rewrite the ``.ann`` header (format 4, same arrays) to name ``graph`` with its size."""
    head["graph"].update(size=graph.stat().st_size, token=graph.name.split(".")[-2])
    car = ann_file.read_sidecar(ann_file.ann_path(str(db_path), 1), {})
    arrays = {
        "chunk_ids": np.array(car.chunk_ids),
        "record_rowids": np.array(car.record_rowids),
        "alive": np.array(car.alive),
    }
    keep = {k: v for k, v in head.items() if k not in ("format", "arrays", "crc32")}
    ann_file.write_sidecar(ann_file.ann_path(str(db_path), 1), keep, arrays)


@pytest.mark.parametrize("damage", ["truncate", "storage_bytes", "codes_included", "foreign_graph"])
def test_plumbing_a_damaged_format_4_graph_file_is_rebuilt_never_misread(
    built: np.ndarray,
    db_path: Path,
    damage: str,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    path = graph_file(db_path)
    data = path.read_bytes()
    if damage == "truncate":
        path.write_bytes(data[:-100])
    elif damage == "storage_bytes":  # same size: the "null" storage tag becomes another index's
        assert data[-4:] == b"null"
        path.write_bytes(data[:-4] + b"IxSQ")
    elif damage == "codes_included":  # a graph with codes where the header says they are not
        import faiss

        head = header(db_path)
        to_format_3(db_path, monkeypatch)
        full = graph_file(db_path)
        assert faiss.read_index(str(full)).storage is not None
        name_graph(db_path, head, full)
    else:  # another collection's format-4 graph (1,500 rows), named by our header
        other = tmp_path / "other" / "o.embed.db"
        other.parent.mkdir()
        syn.build_with_sidecar(other, N // 2, DIM, **ANN)
        head = header(db_path)
        foreign = graph_file(other)
        mine = db_path.parent / foreign.name.replace("o.embed.db", db_path.name)
        foreign.rename(mine)
        path.unlink()
        name_graph(db_path, head, mine)
    queries = syn.clustered(5, DIM, seed=47)
    with caplog.at_level(logging.INFO, logger="semsearch.stores.ann"):
        got = search(db_path, queries)
    assert any("ANN graph built" in r.getMessage() for r in caplog.records)
    check_scores(built, got, queries)
    truth = [syn.exact_top(built, np.ones(N, bool), q, K) for q in queries]
    assert np.mean([len(set(g[0]) & set(t)) / K for g, t in zip(got, truth, strict=True)]) >= 0.95
    assert header(db_path)["graph"]["codes_in_sqlite"] is True


@pytest.mark.parametrize("layout", ["ascending", "shuffled"])
def test_plumbing_codes_are_matched_to_graph_rows_by_chunk_id(
    built: np.ndarray, db_path: Path, layout: str
) -> None:
    """Graph rows in any chunk-id order, with a chunk owning two rows (a dead old row and its
    new one) and a chunk that is gone: each row gets its chunk's blob, the gone one zeros."""
    import sqlite3

    from semsearch.ann.rows import _fill_codes

    conn = sqlite3.connect(db_path)
    blobs = stored_blobs(conn)
    ids = np.array(sorted(blobs), np.int64)
    missing = int(ids.max()) + 1000  # no such chunk
    rows = np.concatenate([ids, ids[[5]], [missing]])
    # sorted: whole batches take the contiguous path, the duplicate's batch the general one
    shuffled = layout == "shuffled"
    rows = np.random.default_rng(2).permutation(rows) if shuffled else np.sort(rows)
    out = np.full((rows.size, DIM), np.float16(7.0))  # not zeros: the fill must write them
    out[rows == missing] = 0  # the graph's storage starts zeroed (load_graph_without_codes)
    found = np.zeros(rows.size, np.bool_)
    _fill_codes(conn, 1, rows, out, found)
    conn.close()
    for i, chunk in enumerate(rows):
        if chunk == missing:
            assert not found[i] and not out[i].any()
        else:
            assert found[i] and out[i].tobytes() == blobs[int(chunk)]


def test_plumbing_codes_in_graph_keeps_them_in_the_graph_file_memory_mapped(
    db_path: Path,
) -> None:
    """``codes_in_graph=True`` (an open that reads nothing): the graph file holds the fp16
    codes (the header says so), a new connection maps them instead of reading SQLite, and hits
    score as numpy does at float16."""
    import faiss

    from semsearch.ann import graph as ann_graph

    vectors = syn.build_with_sidecar(db_path, N, DIM, **{**ANN, "codes_in_graph": True})
    head = header(db_path)
    assert head["format"] == 4 and head["graph"]["codes_in_sqlite"] is False
    assert faiss.read_index(str(graph_file(db_path))).storage is not None
    queries = syn.clustered(5, DIM, seed=49)
    with semsearch.connect(db_path) as db:
        coll = db.collection("vecs")
        got = [coll.store.vector_search("vecs", q, K, None) for q in queries]
        (index,) = coll.store._cache.values()
        assert ann_graph.is_mapped(index.state.graph)
    check_scores(vectors, [([h.record_id for h in g], [h.score for h in g]) for g in got], queries)


def test_plumbing_a_graph_opened_with_mapped_links_merges_into_an_owned_copy(
    built: np.ndarray, db_path: Path, caplog
) -> None:
    """The default open maps the graph's links from its file (read-only, shared between
    processes) and reads its codes from SQLite; enough new vectors to merge them (over 1,024)
    go into an owned copy, since faiss aborts the process on an add to mapped links, and the
    scores stay numpy's on the float16 values."""
    from semsearch.ann import graph as ann_graph

    extra = syn.clustered(1100, DIM, seed=61)
    queries = syn.clustered(3, DIM, seed=62)
    with caplog.at_level(logging.INFO, "semsearch.stores.ann"), semsearch.connect(db_path) as db:
        coll = db.collection("vecs")
        coll.store.vector_search("vecs", queries[0], K, None)
        (index,) = coll.store._cache.values()
        assert not index.state.graph.hnsw.neighbors.is_owned
        assert ann_graph.is_mapped(index.state.graph)
        syn.write(coll, extra, list(range(N, N + 1100)))
        got = [coll.store.vector_search("vecs", q, K, None) for q in queries]
        assert index.state.graph_rows == N + 1100  # merged into the graph
        assert index.state.graph.hnsw.neighbors.is_owned
    assert "merged 1100 fresh vectors" in caplog.text
    every = np.concatenate([built, extra])
    check_scores(every, [([h.record_id for h in g], [h.score for h in g]) for g in got], queries)
