"""The SQLite store under concurrent threads and processes on one file (real SQLite, WAL mode).

Searches read through their own connection while writes go through another (stores/sqlite.py).
These tests run readers against writers, drops, ANALYZE and close() at the same time and check
what a user would see: no errors but the documented ones, no half-written batch, no lost write,
keyword scores equal to FTS5's own bm25() on the same file. The fake embedder only does the
plumbing; no test here is about meaning. Every wait has a timeout; nothing asserts a speed.
"""

from __future__ import annotations

import random
import sqlite3
import threading
from collections.abc import Callable
from typing import Any

import pytest

import semsearch
from semsearch.errors import BackendUnavailable, IndexNotFound
from semsearch.stores.sqlite import SQLiteStore

BATCH = 10


def _run(threads: list[threading.Thread], stop: threading.Event, seconds: float) -> None:
    for t in threads:
        t.start()
    stop.wait(seconds)
    stop.set()
    for t in threads:
        t.join(60)
    assert not any(t.is_alive() for t in threads), "a thread is stuck (deadlock?)"


def _guard(errors: list[str], fn: Callable[[], Any]) -> Callable[[], None]:
    """Run ``fn`` and keep any exception's text (the tests assert the list stays empty)."""

    def call() -> None:
        try:
            fn()
        except Exception as exc:  # every error is a finding: the test prints them all
            errors.append(f"{type(exc).__name__}: {exc}")

    return call


def test_fake_embedder_threads_search_while_others_write_and_drop(db, fake_embedder) -> None:
    schema = semsearch.Schema.from_types({"batch": "int"})
    coll = db.collection("a", schema=schema, embedder=fake_embedder)
    coll.upsert([{"id": "seed", "text": "seed apple", "batch": -1}])
    stop, errors, written = threading.Event(), [], set()

    def writer(wid: int) -> None:
        for i in range(10_000):
            if stop.is_set():
                return
            b = wid * 100_000 + i
            rows = [
                {"id": f"w{b}-{j}", "text": f"apple word{j} n{b}", "batch": b} for j in range(BATCH)
            ]
            coll.upsert(rows)
            written.add(b)
            if i % 3 == 2:  # delete an earlier batch whole
                coll.delete([f"w{b - 2}-{j}" for j in range(BATCH)])
                written.discard(b - 2)

    def dropper() -> None:
        while not stop.is_set():
            other = db.collection("b", embedder=fake_embedder)
            other.upsert([{"id": f"x{j}", "text": f"banana {j}"} for j in range(20)])
            db.drop_collection("b")

    def reader(seed: int) -> None:
        rnd = random.Random(seed)
        while not stop.is_set():
            for mode in ("keyword", "semantic", "hybrid"):
                coll.search("apple word3", mode=mode, limit=5, min_score=None)
            if written:  # a batch is written in one transaction: all of it or none
                batch = rnd.choice(sorted(written))
                assert len(coll.find({"batch": batch}, limit=100)) in (0, BATCH)
            coll.get(["seed", "w1-1"])
            coll.stats()
            coll.count()
            db.collections()
            try:
                other = db.collection("b", embedder=fake_embedder, create=False)
                other.search("banana", mode="keyword")
                other.count()
            except IndexNotFound:
                pass  # dropped between the calls: the documented answer

    def forever(fn: Callable[[], None]) -> Callable[[], None]:
        def loop() -> None:
            while not stop.is_set():
                fn()

        return loop

    threads = [threading.Thread(target=_guard(errors, lambda w=w: writer(w))) for w in (1, 2)]
    threads.append(threading.Thread(target=forever(_guard(errors, dropper))))
    threads += [
        threading.Thread(target=forever(_guard(errors, lambda s=s: reader(s)))) for s in range(3)
    ]
    _run(threads, stop, 4)
    assert errors == []
    expected = {"seed"} | {f"w{b}-{j}" for b in written for j in range(BATCH)}
    assert set(coll.ids()) == expected  # no lost or resurrected write


def test_fake_embedder_close_while_threads_read_raises_backend_unavailable(db, fake_embedder):
    coll = db.collection("a", embedder=fake_embedder)
    coll.upsert([{"id": "1", "text": "apple"}])
    store = coll.store
    assert isinstance(store, SQLiteStore)
    errors: list[str] = []
    store._read_lock.acquire()  # another thread is in the middle of a read
    try:
        closer = threading.Thread(target=db.close)
        closer.start()  # close() now waits for that read to end
        readers = [
            threading.Thread(target=_guard(errors, lambda: store.count("a"))) for _ in range(4)
        ]
        for t in readers:
            t.start()  # these readers arrive before close() has run
        closer.join(0.5)
    finally:
        store._read_lock.release()
    for t in [closer, *readers]:
        t.join(30)
        assert not t.is_alive()
    # each read either ran before the close or says the index is closed (never a raw
    # sqlite3.ProgrammingError: "Cannot operate on a closed database")
    assert all(e.startswith("BackendUnavailable: the index is closed") for e in errors), errors
    with pytest.raises(BackendUnavailable):
        coll.count()


class _SignalAfterAnalyze:
    """The writer connection, calling ``after()`` once its ANALYZE has committed."""

    def __init__(self, conn: sqlite3.Connection, after: Callable[[], None]) -> None:
        self._conn, self._after = conn, after

    def execute(self, sql: str, *args: Any) -> sqlite3.Cursor:
        cur = self._conn.execute(sql, *args)
        if sql == "ANALYZE":
            self._after()
        return cur

    def __getattr__(self, name: str) -> Any:
        return getattr(self._conn, name)


def test_fake_embedder_searches_never_wait_for_another_writer_after_analyze(
    db, db_path, fake_embedder
):
    coll = db.collection("a", embedder=fake_embedder)
    coll.upsert([{"id": "1", "text": "apple"}])
    store = coll.store
    assert isinstance(store, SQLiteStore) and store._conn is not None
    other = SQLiteStore(str(db_path))  # another process's handle on the file
    inside, release = threading.Event(), threading.Event()

    def other_writes() -> None:
        with other._write("a"):  # a long write transaction of another process
            inside.set()
            release.wait(60)

    def after_analyze() -> None:  # the other process starts writing right after our ANALYZE
        threading.Thread(target=other_writes).start()
        assert inside.wait(30)

    store._conn = _SignalAfterAnalyze(store._conn, after_analyze)  # type: ignore[assignment]
    errors: list[str] = []
    analyzer = threading.Thread(target=_guard(errors, store.analyze))
    analyzer.start()
    found: list[list[str]] = []
    try:
        assert inside.wait(30)
        search = threading.Thread(
            target=lambda: found.append(coll.search("apple", mode="keyword").ids)
        )
        search.start()
        search.join(15)  # the reader must not need the write lock the other process holds
        assert not search.is_alive(), "a search waited for another process's write"
        assert found == [["1"]]
    finally:
        release.set()
        analyzer.join(60)
        other.close()
    assert errors == []
