"""The SQLite store under concurrent threads and processes on one file (real SQLite, WAL mode).

Searches read through their own connection while writes go through another (stores/sqlite/store.py).
These tests run readers against writers, drops, ANALYZE and close() at the same time and check
what a user would see: no errors but the documented ones, no half-written batch, no lost write,
keyword scores equal to FTS5's own bm25() on the same file. The fake embedder only does the
plumbing; no test here is about meaning. Every wait has a timeout; nothing asserts a speed.
"""

from __future__ import annotations

import math
import os
import random
import re
import sqlite3
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

import semsearch
from semsearch.errors import BackendUnavailable, IndexNotFound
from semsearch.stores.sqlite.store import SQLiteStore

BATCH = 10


def rel(ratio: float) -> float:
    """semsearch's relative length: |d| / avgdl up to 1.5 times the average, then growing
    with the logarithm: 1.5 * (1 + ln(ratio / 1.5))."""
    return ratio if ratio <= 1.5 else 1.5 * (1 + math.log(ratio / 1.5))


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
    stop, errors, written, guard = threading.Event(), [], set(), threading.Lock()

    def writer(wid: int) -> None:
        for i in range(10_000):
            if stop.is_set():
                return
            b = wid * 100_000 + i
            rows = [
                {"id": f"w{b}-{j}", "text": f"apple word{j} n{b}", "batch": b} for j in range(BATCH)
            ]
            coll.upsert(rows)
            with guard:
                written.add(b)
            if i % 3 == 2:  # delete an earlier batch whole
                coll.delete([f"w{b - 2}-{j}" for j in range(BATCH)])
                with guard:
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
            with guard:
                batches = sorted(written)
            if batches:  # a batch is written in one transaction: all of it or none
                batch = rnd.choice(batches)
                assert len(coll.find({"batch": batch}, limit=100)) in (0, BATCH)
            coll.get(["seed", "w1-1"])
            coll.stats()
            coll.count()
            db.collections()
            try:
                other = db.collection("b", embedder=fake_embedder, create=False)
                other.search("banana", mode="keyword")
                other.search("banana 3", mode="hybrid", min_score=None)
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


WRITER = """
import sys
import semsearch
from semsearch.embedders.fake import FakeEmbedder

with semsearch.connect(sys.argv[1]) as db:
    coll = db.collection("a", embedder=FakeEmbedder(dim=32, max_tokens=64))
    for line in sys.stdin:
        n = int(line)
        ids = [f"c{n - n % 2}-{i}" for i in range(600)]
        if n % 2 == 0:  # 600 'car' chunks: car turns weightless
            coll.upsert([{"id": i, "text": f"car number {i}"} for i in ids], embed=False)
        else:  # deleted again: car is weighty again
            coll.delete(ids)
        print("done", flush=True)
"""


def _bm25_scores(path: Path, words: list[str], k: int) -> list[float]:
    """The oracle: BM25 (Lucene's IDF, k1 1.2, b 0.75) of ``words`` over every record's text as
    the file holds it now, read on a fresh plain connection; the words here are ASCII and left
    alone by the stemmer, so FTS5's tokens are the runs of letters and digits."""
    with sqlite3.connect(path) as conn:
        texts = [r[0] for r in conn.execute("SELECT text FROM records")]
    docs = [re.findall(r"[^\W_]+", t.lower()) for t in texts]
    avgdl = sum(map(len, docs)) / len(docs)
    scores = []
    for doc in docs:
        total = 0.0
        for word in words:
            n = sum(1 for d in docs if word in d)
            f = doc.count(word)
            if f:
                idf = math.log(1 + (len(docs) - n + 0.5) / (n + 0.5))
                total += idf * f * 2.2 / (f + 1.2 * (0.25 + 0.75 * rel(len(doc) / avgdl)))
        scores.append(total)
    return sorted((s for s in scores if s > 0), reverse=True)[:k]


def test_fake_embedder_keyword_scores_follow_another_process_s_writes(db, db_path, fake_embedder):
    coll = db.collection("a", embedder=fake_embedder)
    coll.upsert(
        [{"id": f"s{i:02d}", "text": "apple " * (i % 3 + 1) + ("car" if i % 5 == 0 else "tree")}
         for i in range(40)]
    )  # fmt: skip
    proc = subprocess.Popen(
        [sys.executable, "-c", WRITER, str(db_path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdin is not None and proc.stdout is not None
    errors: list[str] = []
    try:
        for n in range(6):
            proc.stdin.write(f"{n}\n")
            proc.stdin.flush()
            waiter = threading.Thread(target=proc.stdout.readline)  # "done" once committed
            waiter.start()
            searches = 0
            while waiter.is_alive() and searches < 100_000:  # searches during the write
                _guard(errors, lambda: coll.search("apple car", mode="keyword"))()
                searches += 1
            waiter.join(60)
            assert not waiter.is_alive(), "the writing process did not answer"
            assert proc.poll() is None, "the writing process died"
            assert coll.count() == (640 if n % 2 == 0 else 40)  # the write is visible
            # car is in 8 of 40 records after odd rounds, 608 of 640 after even ones: stale
            # counts (N, n(car), avgdl) would give other scores
            got = [c.score for c in coll.store.keyword_search("a", "apple car", 5, None)]
            assert got == pytest.approx(_bm25_scores(db_path, ["apple", "car"], 5), rel=1e-9)
    finally:
        proc.stdin.close()
        proc.wait(60)
    assert proc.returncode == 0
    assert errors == []


def test_fake_embedder_wal_stays_bounded_with_searches_between_writes(db, db_path, fake_embedder):
    coll = db.collection("a", embedder=fake_embedder)
    filler = "x" * 2000
    for n in range(50):  # 50 write transactions of about 0.8 MB, searches between them
        coll.upsert([{"id": f"{n}-{i}", "text": f"apple {i} {filler}"} for i in range(100)])
        assert coll.search("apple 3", mode="hybrid", limit=3).ids
        assert coll.search("apple", mode="keyword", limit=3).ids
        # A keyword search may start the keyword sidecar's background build, a reader that
        # holds one snapshot while it runs (so the WAL grows for that long: CI once saw 23 MB
        # at load 2); this test is about the searches' own readers, so let it finish.
        for sidecar in coll.store._keywords.sidecars.values():
            sidecar.wait(60)
    wal = os.path.getsize(f"{db_path}-wal")
    # the reader holds no snapshot between searches, so automatic checkpoints (every 1000
    # pages) restart the WAL: it stays near 5 MB while the file grows to about 40 MB.
    # A reader pinning the WAL would make it hold every transaction (>= the file's size).
    assert wal < os.path.getsize(db_path) / 2, (wal, os.path.getsize(db_path))


def test_fake_embedder_store_opened_before_the_file_exists(db_path, fake_embedder):
    with semsearch.connect(db_path) as db:
        assert db.collections() == [] and not db_path.exists()  # reads never create the file
        with pytest.raises(IndexNotFound):
            db.collection("a", embedder=fake_embedder, create=False)
        create = (
            "import sys, semsearch\n"
            "from semsearch.embedders.fake import FakeEmbedder\n"
            "with semsearch.connect(sys.argv[1]) as d:\n"
            "    c = d.collection('a', embedder=FakeEmbedder(dim=32, max_tokens=64))\n"
            "    c.upsert([{'id': '1', 'text': 'apple'}, {'id': '2', 'text': 'car'}])\n"
        )
        subprocess.run([sys.executable, "-c", create, str(db_path)], check=True, timeout=120)
        coll = db.collection("a", embedder=fake_embedder, create=False)
        assert coll.search("apple", mode="keyword").ids == ["1"]
        assert sorted(coll.search("apple", mode="hybrid", min_score=None).ids) == ["1", "2"]
        assert coll.count() == 2
        assert coll.store._conn is None  # reading never opened the writer connection


def test_fake_embedder_in_memory_store_threads_read_while_one_writes(fake_embedder):
    with semsearch.connect(":memory:") as db:
        coll = db.collection("m", embedder=fake_embedder)
        stop, errors = threading.Event(), []

        def write() -> None:
            for i in range(30):
                coll.upsert([{"id": f"{i}-{j}", "text": f"apple {j}"} for j in range(BATCH)])
            stop.set()

        def read() -> None:
            while not stop.is_set():
                for mode in ("keyword", "semantic", "hybrid"):
                    coll.search("apple 3", mode=mode, min_score=None)
                assert coll.count() % BATCH == 0  # whole upserts only
                coll.find(limit=5)

        threads = [threading.Thread(target=_guard(errors, write))]
        threads += [threading.Thread(target=_guard(errors, read)) for _ in range(3)]
        _run(threads, stop, 60)
        assert errors == []
        assert coll.count() == 30 * BATCH


@contextmanager
def _read_only(folder: Path) -> Iterator[None]:
    """Make ``folder`` read-only: chmod for a normal user, a read-only bind mount for root."""
    if os.geteuid() != 0:
        folder.chmod(0o555)
        try:
            yield
        finally:
            folder.chmod(0o755)
        return
    bind = subprocess.run(["mount", "--bind", str(folder), str(folder)], capture_output=True)
    if bind.returncode != 0:
        pytest.skip("root without mount rights cannot make a read-only folder")
    try:
        subprocess.run(["mount", "-o", "remount,bind,ro", str(folder)], check=True)
        yield
    finally:
        subprocess.run(["umount", "--lazy", str(folder)], check=True)


def test_fake_embedder_index_in_a_read_only_folder_reads_and_refuses_writes(
    tmp_path, fake_embedder
):
    folder = tmp_path / "shipped"
    folder.mkdir()
    path = folder / "docs.embed.db"
    with semsearch.connect(path) as db:
        db.collection("a", embedder=fake_embedder).upsert(
            [{"id": "1", "text": "apple pie"}, {"id": "2", "text": "car wash"}]
        )
    assert sorted(p.name for p in folder.iterdir()) == ["docs.embed.db"]  # WAL checkpointed
    with _read_only(folder), semsearch.connect(path) as db:
        coll = db.collection("a", embedder=fake_embedder, create=False)
        assert coll.search("apple", mode="keyword").ids == ["1"]
        assert sorted(coll.search("car", mode="hybrid", min_score=None).ids) == ["1", "2"]
        assert coll.count() == 2
        with pytest.raises(BackendUnavailable) as caught:
            coll.upsert([{"id": "3", "text": "fig"}])
        assert "writable" in (caught.value.hint or "")
        assert coll.count() == 2


def _drop_twice_at_once(db: semsearch.Database) -> tuple[list[bool], list[str]]:
    """Two threads drop collection b at the same moment; (their results, their errors)."""
    results: list[bool] = []
    errors: list[str] = []
    start = threading.Barrier(2, timeout=30)

    def drop() -> None:
        start.wait()
        results.append(db.drop_collection("b"))

    threads = [threading.Thread(target=_guard(errors, drop)) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    return results, errors


def test_fake_embedder_two_threads_drop_one_collection(db, fake_embedder):
    for _ in range(20):
        db.collection("b", embedder=fake_embedder).upsert([{"id": "1", "text": "fig"}])
        results, errors = _drop_twice_at_once(db)
        # one drop deletes it, the other finds nothing to drop (never "collection vanished")
        assert errors == [] and sorted(results) == [False, True]
        assert db.collections() == []


CREATOR = """
import os, sys, time
import semsearch
from semsearch.embedders.fake import FakeEmbedder

db = semsearch.connect(sys.argv[1])
print("ready", flush=True)
while not os.path.exists(sys.argv[2]):
    time.sleep(0.001)
try:
    coll = db.collection("a", embedder=FakeEmbedder(dim=32, max_tokens=64))
    coll.upsert([{"id": sys.argv[3], "text": "apple"}])
    print("ok", flush=True)
except Exception as exc:
    print(type(exc).__name__, exc, flush=True)
"""


def test_fake_embedder_processes_create_one_new_file_at_once(tmp_path, fake_embedder):
    for round_ in range(3):  # e.g. semsearch serve --workers 4 on a new index
        path, go = tmp_path / f"new{round_}.embed.db", tmp_path / f"go{round_}"
        procs = [
            subprocess.Popen(
                [sys.executable, "-c", CREATOR, str(path), str(go), f"r{i}"],
                stdout=subprocess.PIPE,
                text=True,
            )
            for i in range(4)
        ]
        for proc in procs:
            assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
        go.touch()  # all four open, then create, the same file at the same moment
        answers = [proc.communicate(timeout=120)[0].strip() for proc in procs]
        # before: "OperationalError database is locked" (the switch to WAL) and
        # "OperationalError table semsearch_meta already exists" (a migration run twice)
        assert answers == ["ok"] * 4
        with semsearch.connect(path) as db:
            coll = db.collection("a", embedder=fake_embedder, create=False)
            assert sorted(coll.ids()) == ["r0", "r1", "r2", "r3"]


def _upsert_and_drop_at_once(db: semsearch.Database, coll: semsearch.Collection) -> list[str]:
    """One thread upserts into collection b while another drops it; the errors raised."""
    errors: list[str] = []
    start = threading.Barrier(2, timeout=30)
    rows = [{"id": str(i), "text": "plum"} for i in range(50)]

    def drop() -> None:
        start.wait()
        db.drop_collection("b")

    def upsert() -> None:
        start.wait()
        coll.upsert(rows)

    threads = [threading.Thread(target=_guard(errors, fn)) for fn in (drop, upsert)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    return errors


def test_fake_embedder_upsert_racing_a_drop_raises_index_not_found(db, fake_embedder):
    errors: list[str] = []
    for _ in range(20):
        coll = db.collection("b", embedder=fake_embedder)
        coll.upsert([{"id": "1", "text": "fig"}])
        errors += _upsert_and_drop_at_once(db, coll)
    # the upsert ran before the drop, or it says the collection is gone (IndexNotFound, the
    # documented answer): never StoreCorrupted (nothing in the file is inconsistent) nor a
    # TypeError from a row that is no longer there
    assert all(e.startswith("IndexNotFound") for e in errors), errors


def test_fake_embedder_semantic_search_during_a_swap_sees_old_or_new(db, fake_embedder):
    db.collection("a", embedder=fake_embedder).upsert(
        [{"id": str(i), "text": f"apple {i}"} for i in range(30)]
    )
    store, query = db.store, fake_embedder.embed_query("apple 3")
    stop, errors, found = threading.Event(), [], []

    def search() -> None:
        while not stop.is_set():
            found.append(len(store.vector_search("a", query, 5, None)))

    readers = [threading.Thread(target=_guard(errors, search)) for _ in range(2)]
    for t in readers:
        t.start()
    try:
        for n in range(30):  # semsearch reembed: build a shadow, then swap it in
            shadow = db.collection(f"shadow{n}", embedder=fake_embedder)
            shadow.upsert([{"id": str(i), "text": f"apple {i} v{n}"} for i in range(30)])
            assert store.replace_collection("a", f"shadow{n}")
    finally:
        stop.set()
        for t in readers:
            t.join(60)
    assert errors == [] and found
    # replace_collection's promise: readers see the old collection or the new one, never neither
    assert set(found) == {5}


@contextmanager
def after_first_snapshot(store: SQLiteStore, action: Callable[[], None]) -> Iterator[None]:
    """Run ``action`` (another process's write) right after the store's first read snapshot:
    the vector cache has read a collection's identity but not yet its rows."""
    read_snapshot = store._in_read_txn
    reads: list[int] = []

    def read_then_act(fn: Callable[[sqlite3.Connection], Any]) -> Any:
        out = read_snapshot(fn)
        reads.append(1)
        if len(reads) == 1:
            action()
        return out

    store._in_read_txn = read_then_act  # type: ignore[method-assign]
    try:
        yield
    finally:
        del store._in_read_txn


def test_fake_embedder_collection_recreated_while_the_vector_cache_loads(
    db, db_path, fake_embedder
):
    db.collection("a", embedder=fake_embedder).upsert([{"id": "a1", "text": "apple"}])
    db.collection("b", embedder=fake_embedder).upsert(
        [{"id": "old", "text": "banana"}], embed=False
    )  # no vectors yet: its dimension is unknown
    store = db.store
    assert isinstance(store, SQLiteStore)

    def recreate_b() -> None:  # another process drops and re-creates b, with vectors
        with semsearch.connect(db_path) as other:
            other.drop_collection("b")
            other.collection("b", embedder=fake_embedder).upsert(
                [{"id": "new", "text": "banana split"}]
            )

    query = fake_embedder.embed_query("banana")
    with after_first_snapshot(store, recreate_b):
        found = store.vector_search("b", query, 5, None)
    # the old b (no vectors) or the new one, never a mix: was ValueError "cannot reshape
    # array of size 32 into shape (0)" (the new b reused the old b's id, so the cache read
    # the new b's vectors with the old b's unknown dimension)
    assert [c.record_id for c in found] in ([], ["new"])
    assert [c.record_id for c in store.vector_search("b", query, 5, None)] == ["new"]


def test_fake_embedder_a_recreated_collection_gets_a_new_id(db, fake_embedder):
    ids = []
    for _ in range(3):  # caches keyed by id (vectors, word counts) never see an old one's rows
        db.collection("a", embedder=fake_embedder).upsert([{"id": "1", "text": "apple"}])
        ids.append(db.store._collection_id(db.store._conn, "a"))
        db.drop_collection("a")
    with semsearch.connect(db.location) as other:  # ids are kept in the file, not the process
        other.collection("a", embedder=fake_embedder).upsert([{"id": "1", "text": "apple"}])
        ids.append(other.store._collection_id(other.store._conn, "a"))
    assert ids == [1, 2, 3, 4]


def test_fake_embedder_first_vectors_arrive_while_the_vector_cache_loads(
    db, db_path, fake_embedder
):
    db.collection("b", embedder=fake_embedder).upsert(
        [{"id": "r1", "text": "banana"}], embed=False
    )  # no vectors yet: its dimension is unknown
    store = db.store
    assert isinstance(store, SQLiteStore)

    def embed_b() -> None:  # another process embeds b
        with semsearch.connect(db_path) as other:
            assert other.collection("b", embedder=fake_embedder).embed_pending() == 1

    query = fake_embedder.embed_query("banana")
    with after_first_snapshot(store, embed_b):
        # was ValueError "cannot reshape array of size 32 into shape (0)": the cache read the
        # vectors with the dimension of the earlier snapshot (unknown: 0)
        found = store.vector_search("b", query, 5, None)
    assert [c.record_id for c in found] in ([], ["r1"])
    assert [c.record_id for c in store.vector_search("b", query, 5, None)] == ["r1"]


def test_fake_embedder_a_search_racing_a_reembed_to_another_dimension_says_so(
    db_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``semsearch reembed`` swaps in a collection of another dimension while a search runs:
    the search's snapshot lost its records, so it searches a fresh one, which holds 32-d
    vectors for a 16-d query. That is a DimensionMismatch naming both, not numpy's ValueError
    from the dot product (a breaker saw it about once in 330 searches during a reembed)."""
    from semsearch.embedders.fake import FakeEmbedder
    from semsearch.stores.sqlite import vectors as sqlite_vectors

    with semsearch.connect(db_path) as db:
        old = db.collection("k", embedder=FakeEmbedder(16))
        old.upsert([{"id": f"r{i}", "text": f"note {i}"} for i in range(20)])
        new = db.collection("k_next", embedder=FakeEmbedder(32))
        new.upsert([{"id": f"r{i}", "text": f"note {i}"} for i in range(20)])
        real = sqlite_vectors.record_names
        calls = []

        def swap_then_name(rows: Any, rowids: list[int]) -> dict[int, str]:
            if not calls:  # the swap lands between the snapshot and naming its records
                assert db.store.replace_collection("k", "k_next")
            calls.append(1)
            return real(rows, rowids)

        monkeypatch.setattr(sqlite_vectors, "record_names", swap_then_name)
        query = FakeEmbedder(16).embed_query("note 3")
        with pytest.raises(semsearch.DimensionMismatch) as info:
            db.store.vector_search("k", query, 5, None)
        assert "16-d" in info.value.message and "32-d" in info.value.message
