"""The first HNSW graph, grown in a background thread while the collection is written
(ann/grower.py). Fake clustered vectors set directly: these tests are about plumbing; the
expected top-k come from a numpy scan of the float16-rounded vectors the file stores."""

from __future__ import annotations

import logging
import sqlite3
import threading
from pathlib import Path

import numpy as np
import pytest

import semsearch
from semsearch.ann import graph as ann_graph
from semsearch.ann import grower as ann_grower
from semsearch.ann import rows as ann_rows
from semsearch.ann.file import ann_path
from semsearch.ann.policy import AnnOptions
from tests.ann import synthetic as syn

DIM, THRESHOLD, N, K = 16, 300, 1200, 10
LOGGER = "semsearch.stores.ann"


def exact_top(vectors: np.ndarray, alive: list[int], q: np.ndarray) -> list[str]:
    """Record names of the true top-K among rows ``alive``, at the stored (float16) precision."""
    stored = vectors.astype(np.float16).astype(np.float32)
    rows = np.asarray(alive)
    scores = stored[rows] @ q
    return [syn.name(int(rows[i])) for i in np.argsort(-scores, kind="stable")[:K]]


def recall(hits: list[str], truth: list[str]) -> float:
    return len(set(hits) & set(truth)) / len(truth)


def write_in_batches(coll: semsearch.Collection, vectors: np.ndarray, batch: int = 100) -> None:
    for start in range(0, vectors.shape[0], batch):
        ids = list(range(start, min(start + batch, vectors.shape[0])))
        syn.write(coll, vectors[ids], ids)


def test_plumbing_a_graph_grown_while_writing_is_the_one_the_first_search_uses(
    db_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    vectors = syn.clustered(N, DIM, seed=11)
    queries = syn.clustered(8, DIM, seed=12)
    with semsearch.connect(db_path) as db, caplog.at_level(logging.INFO, LOGGER):
        coll = syn.open_collection(db, DIM, threshold=THRESHOLD)
        write_in_batches(coll, vectors)
        got = [
            [h.record_id for h in coll.store.vector_search(coll.name, q, K, None)] for q in queries
        ]
        (index,) = coll.store._cache.values()
        assert index.state is not None and index.state.graph is not None
        assert index.state.graph_rows == N and index.state.graph.ntotal == N
    messages = [r.getMessage() for r in caplog.records]
    assert any("built while writing" in m for m in messages)
    assert not any(m.startswith("ANN graph built for") for m in messages)  # no second build
    everyone = list(range(N))
    mean = np.mean(
        [recall(g, exact_top(vectors, everyone, q)) for g, q in zip(got, queries, strict=True)]
    )
    assert mean >= 0.95


def test_plumbing_close_saves_the_graph_grown_while_writing(
    db_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    vectors = syn.clustered(N, DIM, seed=13)
    with semsearch.connect(db_path) as db:
        coll = syn.open_collection(db, DIM, threshold=THRESHOLD)
        write_in_batches(coll, vectors)
    sidecar = Path(ann_path(str(db_path), 1))
    assert sidecar.exists()  # nothing searched: close() finished the build and saved it
    q = syn.clustered(1, DIM, seed=14)[0]
    with semsearch.connect(db_path) as db, caplog.at_level(logging.DEBUG, LOGGER):
        coll = syn.open_collection(db, DIM)
        hits = [h.record_id for h in coll.store.vector_search(coll.name, q, K, None)]
        (index,) = coll.store._cache.values()
        assert index.state is not None and index.state.token is not None  # opened, not rebuilt
        assert index.state.graph_rows == N
    assert not any("rebuilding" in r.getMessage() for r in caplog.records)
    assert recall(hits, exact_top(vectors, list(range(N)), q)) >= 0.9


def test_plumbing_deletes_and_new_vectors_during_the_build_are_caught_up(db_path: Path) -> None:
    vectors = syn.clustered(N, DIM, seed=15)
    moved = syn.clustered(100, DIM, seed=16)  # new vectors for records 200..299
    queries = np.concatenate([moved[:4], syn.clustered(4, DIM, seed=17)])
    with semsearch.connect(db_path) as db:
        coll = syn.open_collection(db, DIM, threshold=THRESHOLD)
        write_in_batches(coll, vectors)
        coll.delete([syn.name(i) for i in range(100)])
        with sqlite3.connect(db_path) as conn:  # records 200..299 get new vectors
            chunk_of = dict(conn.execute(
                "SELECT r.id, c.id FROM chunks c JOIN records r ON r.rowid = c.record_rowid"
            ).fetchall())  # fmt: skip
        coll.store.set_vectors(coll.name, [chunk_of[syn.name(i)] for i in range(200, 300)], moved)
        got = [
            [h.record_id for h in coll.store.vector_search(coll.name, q, K, None)] for q in queries
        ]
    final = vectors.copy()
    final[200:300] = moved
    alive = list(range(100, N))
    for hits in got:
        assert not set(hits) & {syn.name(i) for i in range(100)}  # deleted: never returned
    mean = np.mean(
        [recall(g, exact_top(final, alive, q)) for g, q in zip(got, queries, strict=True)]
    )
    assert mean >= 0.95


@pytest.mark.parametrize("ann", [{"build_while_writing": False}, {"storage": "int8"}])
def test_plumbing_switched_off_the_first_search_builds_the_graph(
    db_path: Path, caplog: pytest.LogCaptureFixture, ann: dict[str, object]
) -> None:
    """Off by option, and for int8 graphs (their quantiser trains on a sample of every row)."""
    vectors = syn.clustered(N, DIM, seed=18)
    with semsearch.connect(db_path) as db, caplog.at_level(logging.INFO, LOGGER):
        coll = syn.open_collection(db, DIM, threshold=THRESHOLD, **ann)
        write_in_batches(coll, vectors)
        (index,) = coll.store._cache.values()
        assert index._grower is None or not index._grower.running()
        assert not Path(ann_path(str(db_path), 1)).exists()
        coll.store.vector_search(coll.name, vectors[0], K, None)
    messages = [r.getMessage() for r in caplog.records]
    assert any(m.startswith("ANN graph built for") for m in messages)
    assert not any("built while writing" in m for m in messages)


def test_plumbing_below_the_threshold_nothing_is_grown(db_path: Path) -> None:
    vectors = syn.clustered(THRESHOLD - 1, DIM, seed=19)
    with semsearch.connect(db_path) as db:
        coll = syn.open_collection(db, DIM, threshold=THRESHOLD)
        write_in_batches(coll, vectors)
        hits = [h.record_id for h in coll.store.vector_search(coll.name, vectors[5], K, None)]
        (index,) = coll.store._cache.values()
        assert index.state is not None and index.state.graph is None  # exact scans
    assert not Path(ann_path(str(db_path), 1)).exists()
    assert hits == exact_top(vectors, list(range(THRESHOLD - 1)), vectors[5])


def test_plumbing_the_grower_adds_on_one_thread_while_writes_come_and_on_all_after(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The thread-count rule of ``_before_batch``: 1 while a write came in the last SETTLE
    seconds, faiss's own count once writes pause or a waiter hurries it."""
    set_to: list[int] = []
    monkeypatch.setattr(ann_graph, "set_build_threads", set_to.append)
    clock = [100.0]
    monkeypatch.setattr(ann_grower.time, "monotonic", lambda: clock[0])
    grower = ann_grower.GraphGrower(index=None, read=None)  # type: ignore[arg-type]
    grower._threads = 7
    grower._last_write = 100.0 - ann_grower.SETTLE / 2  # a write half a SETTLE ago
    grower._before_batch()
    clock[0] += ann_grower.SETTLE  # now 1.5 SETTLE since it: paused
    grower._before_batch()
    grower._last_write = clock[0]  # writing again, but a search waits
    grower._hurry.set()
    grower._before_batch()
    assert set_to == [1, 7, 7]


def test_plumbing_catch_up_reads_new_rows_as_stored_float16_or_upcast(db_path: Path) -> None:
    vectors = syn.clustered(600, DIM, seed=20)
    with semsearch.connect(db_path) as db:
        coll = syn.open_collection(db, DIM, build_while_writing=False)
        syn.write(coll, vectors[:200], list(range(200)))
        conn = sqlite3.connect(db_path)
        conn.execute("BEGIN")
        first = ann_rows.load_rows(conn, 1, {"dim": DIM}, AnnOptions(), half=True)
        conn.execute("COMMIT")
        syn.write(coll, vectors[200:], list(range(200, 600)))
    stored = vectors[200:].astype(np.float16)
    empty = ann_rows.AnnState(
        first.version, first.last_seq, first.identity, first.options, first.chunk_ids,
        first.record_rowids, first.alive, None, 0, first.graph_vectors,
        np.empty((0, DIM), np.float32),
    )  # fmt: skip
    conn.execute("BEGIN")
    half = ann_rows.catch_up(conn, 1, empty, half=True)
    full = ann_rows.catch_up(conn, 1, empty)
    conn.execute("COMMIT")
    owner = dict(conn.execute(
        "SELECT c.id, r.id FROM chunks c JOIN records r ON r.rowid = c.record_rowid"
    ).fetchall())  # fmt: skip
    conn.close()
    expected = np.stack([stored[int(owner[int(c)][1:]) - 200] for c in half.chunk_ids[200:]])
    assert half.fresh.dtype == np.float16 and full.fresh.dtype == np.float32
    np.testing.assert_array_equal(half.fresh, expected)
    np.testing.assert_array_equal(full.fresh, expected.astype(np.float32))
    assert half.rows == 600 and half.live() == 600


def test_plumbing_a_finish_racing_the_start_of_the_build_thread_never_joins_it_unstarted(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A search (finish) can run while a write's poke is starting the thread: it must see
    either no thread or a started one (joining an unstarted thread raises RuntimeError; CI
    caught it in tests/integration/test_sqlite_concurrency.py)."""
    grower: ann_grower.GraphGrower

    class FinishFirst(threading.Thread):
        def start(self) -> None:
            grower.finish()  # what another thread may do at this very moment
            super().start()

    monkeypatch.setattr(ann_grower.threading, "Thread", FinishFirst)
    monkeypatch.setattr(ann_grower.GraphGrower, "_run", lambda self: None)
    taker = type("Taker", (), {"collection_id": 1})()
    grower = ann_grower.GraphGrower(index=taker, read=None)  # type: ignore[arg-type]
    grower.poke()  # raised RuntimeError("cannot join thread before it is started") before
    grower.finish()
    assert not grower.running()
