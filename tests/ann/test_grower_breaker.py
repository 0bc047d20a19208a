"""Breaker tests for the background graph build (ann/grower.py)."""

from __future__ import annotations

import json
import logging
import sqlite3
import threading
import time
from pathlib import Path

import pytest

import semsearch
from semsearch.ann import cache as ann_cache
from semsearch.ann import grower as ann_grower
from semsearch.ann.policy import configure_ann
from semsearch.errors import InvalidQuery
from semsearch.stores.sqlite import vectors as sqlite_vectors
from tests.ann import synthetic as syn

DIM, THRESHOLD, N = 16, 300, 1200


def test_plumbing_close_does_not_wait_for_a_graph_it_would_throw_away(
    db_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """persist=False: nothing is saved, so close() must not finish (build) the graph."""
    monkeypatch.setattr(ann_grower, "SETTLE", 60.0)  # writes never count as paused here
    adopted: list[int] = []
    adopt = ann_cache.AnnIndex.adopt

    def spy(self: ann_cache.AnnIndex, state: ann_cache.AnnState, read: object) -> bool:
        adopted.append(state.graph_rows)
        return adopt(self, state, read)  # type: ignore[arg-type]

    monkeypatch.setattr(ann_cache.AnnIndex, "adopt", spy)
    vectors = syn.clustered(N, DIM, seed=31)
    db = semsearch.connect(db_path)
    coll = syn.open_collection(db, DIM, threshold=THRESHOLD, persist=False)
    for start in range(0, N, 100):
        ids = list(range(start, start + 100))
        syn.write(coll, vectors[ids], ids)
    (index,) = coll.store._cache.values()
    grower = index._grower
    assert grower is not None and grower.running()
    db.close()
    deadline = time.monotonic() + 5
    while grower.running() and time.monotonic() < deadline:
        time.sleep(0.01)
    assert not grower.running()
    assert adopted == []  # no graph finished (and dropped) on close


@pytest.mark.parametrize("bad", [["x"], 5, "abc"])
def test_plumbing_a_committed_set_vectors_never_raises_for_ann_options_that_are_not_an_object(
    db_path: Path, bad: object
) -> None:
    """grow() runs after the commit: malformed ``ann`` options must not fail the write."""
    vectors = syn.clustered(200, DIM, seed=32)
    with semsearch.connect(db_path) as db:
        coll = syn.open_collection(db, DIM, threshold=THRESHOLD)
        syn.write(coll, vectors[:100], list(range(100)))
        with sqlite3.connect(db_path) as conn:
            conn.execute("UPDATE collections SET options = ?", (json.dumps({"ann": bad}),))
        syn.write(coll, vectors[100:], list(range(100, 200)))  # raised after its commit
        with pytest.raises(InvalidQuery):  # the search reports the bad options
            coll.store.vector_search(coll.name, vectors[0], 5, None)


def test_plumbing_a_failed_background_build_is_not_restarted_by_every_later_write(
    db_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """After an error the first search builds the graph (module docstring); a grower restarted
    by each write would re-read every row and fail again, once per write batch."""
    attempts: list[int] = []

    def failing(state: ann_cache.AnnState, *args: object) -> tuple[ann_cache.AnnState, int]:
        attempts.append(state.rows)
        raise MemoryError("no room for the graph")

    monkeypatch.setattr(ann_grower.ann_upkeep, "grown", failing)
    vectors = syn.clustered(N, DIM, seed=33)
    with semsearch.connect(db_path) as db:
        coll = syn.open_collection(db, DIM, threshold=THRESHOLD)
        for start in range(0, N, 50):
            ids = list(range(start, start + 50))
            syn.write(coll, vectors[ids], ids)
            (index,) = coll.store._cache.values()
            if index._grower is not None and attempts:  # let the failed thread end
                deadline = time.monotonic() + 5
                while index._grower.running() and time.monotonic() < deadline:
                    time.sleep(0.005)
        hits = [h.record_id for h in coll.store.vector_search(coll.name, vectors[7], 10, None)]
    assert len(attempts) == 1
    assert hits[0] == syn.name(7)


def test_plumbing_a_write_racing_close_starts_no_grower_on_the_closed_store(
    db_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """close() lands between set_vectors' commit and its poke of the grower: no thread may
    start on the closed store (it would only fail, with a warning, and save nothing)."""
    vectors = syn.clustered(N, DIM, seed=34)
    db = semsearch.connect(db_path)
    coll = syn.open_collection(db, DIM, threshold=THRESHOLD, build_while_writing=False)
    for start in range(0, N - 100, 100):
        ids = list(range(start, start + 100))
        syn.write(coll, vectors[ids], ids)
    configure_ann(coll, build_while_writing=True)
    real = sqlite_vectors.cache_for

    closer = threading.Thread(target=db.close)

    def close_first(*args: object) -> ann_cache.AnnIndex:
        closer.start()  # another thread's close(), between the commit and the poke
        closer.join(0.5)
        return real(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(sqlite_vectors, "cache_for", close_first)
    with caplog.at_level(logging.WARNING, "semsearch.stores.ann"):
        ids = list(range(N - 100, N))
        syn.write(coll, vectors[ids], ids)
        closer.join(10)
        time.sleep(0.3)
    assert not closer.is_alive()
    assert not [t for t in threading.enumerate() if t.name.startswith("semsearch-ann-grow")]
    assert not [r for r in caplog.records if "background ANN build" in r.getMessage()]
