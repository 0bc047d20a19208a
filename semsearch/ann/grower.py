"""Grows a collection's first HNSW graph in a background thread while the collection is written.

Without it, the first search after a large fill reads every vector back and builds the whole
graph while the caller waits: at 1M x 384 about 38 s of SQLite writes, then 3.5 s of reading
and 170 s of graph (docs/benchmarks.md, "ANN at scale"). The writes run on one core; the faiss
build can use them all. So from the graph threshold on, each ``set_vectors`` pokes a grower:
a daemon thread that reads the committed rows through the cache's own catch-up from the
change log (:func:`~semsearch.ann.rows.catch_up`, so other processes' writes, deletes and
re-embeds count too) and adds them to a private graph, in place.

- While writes keep coming (one in the last :data:`SETTLE` seconds) it adds with one faiss
  (OpenMP) thread, leaving the writer its core; otherwise, or once a search or ``close()``
  waits for it, with every thread faiss would use.
- It stops once it has caught up and writes have paused for :data:`SETTLE` seconds, or a
  waiter asked it to finish (then after one last catch-up). The graph is saved as the sidecar
  and handed to the cache (:meth:`~semsearch.ann.cache.AnnIndex.adopt`), whose next refresh
  catches up with whatever came since, as after any build.
- It never fails a write or a search: an error is logged, the grower gives up (later writes
  do not restart it) and the first search builds the graph as it would without a grower.

It only builds a collection's *first* graph (no graph in the cache, no sidecar on disk); a
graph that exists is kept up by the cache's merges. An ``int8`` graph is left to the first
search: its quantiser is trained on a sample of the rows, and at the threshold the grower would
see only the first ones (a breaker's run: the graph's own recall fell from 0.91 to 0.84 on
drifting data). ``AnnOptions.build_while_writing=False`` turns it off for a collection.
"""

from __future__ import annotations

import logging
import sqlite3
import threading
import time
from dataclasses import replace
from functools import partial
from typing import Protocol

from semsearch.ann import LOGGER
from semsearch.ann import graph as ann_graph
from semsearch.ann import upkeep as ann_upkeep
from semsearch.ann.policy import AnnOptions
from semsearch.ann.rows import (
    AnnState,
    LogPruned,
    Reader,
    catch_up,
    collection_meta,
    embedded_at_least,
    load_rows,
)

__all__ = ["BATCH", "SETTLE", "GraphGrower", "GraphTaker"]

log = logging.getLogger(LOGGER)

#: Seconds without a write after which writes count as paused (all threads; stop when caught up).
SETTLE = 1.0
#: Rows per faiss add: the thread count is revisited between adds (about 2 s at one thread).
BATCH = 8192


class GraphTaker(Protocol):
    """What a grower hands its graph to (:class:`~semsearch.ann.cache.AnnIndex`)."""

    collection_id: int

    def adopt(self, state: AnnState, read: Reader) -> bool:
        """Take the grown graph; False when the cache holds one already."""
        ...


class _Stopped(Exception):
    """The collection was dropped or the store is closing without waiting: drop the graph."""


class GraphGrower:
    """The background build of one collection's first graph (see the module docstring).

    Args:
        index: the collection's cache (an :class:`~semsearch.ann.cache.AnnIndex`); it receives
            the graph (``adopt``).
        read: runs a function in one read transaction of the store (the cache's reader).
    """

    def __init__(self, index: GraphTaker, read: Reader) -> None:
        self._index = index
        self._read = read
        self._wake = threading.Event()
        self._hurry = threading.Event()
        self._stop = threading.Event()
        self._start_lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._last_write = 0.0
        self._threads = 1
        self._persist = True  # the collection's ``persist`` option at the last catch-up

    def poke(self) -> None:
        """A write committed: start the build thread, or wake the running one."""
        self._last_write = time.monotonic()
        with self._start_lock:
            if self._stop.is_set():
                return
            if self._thread is not None and self._thread.is_alive():
                self._wake.set()
                return
            self._hurry.clear()
            thread = threading.Thread(
                target=self._run, name=f"semsearch-ann-grow-{self._index.collection_id}",
                daemon=True,
            )  # fmt: skip
            thread.start()
            self._thread = thread  # only once started: finish() may join it at any moment

    def running(self) -> bool:
        """True while the build thread is alive."""
        thread = self._thread
        return thread is not None and thread.is_alive()

    def finish(self) -> None:
        """Wait for the build to end: after one more catch-up it adds with every thread, saves
        and hands its graph to the cache. Returns at once when no build runs."""
        thread = self._thread
        if thread is None or thread is threading.current_thread():
            return
        self._hurry.set()
        self._wake.set()
        thread.join()

    def close(self) -> None:
        """The store is closing: finish the build when its graph will be saved (``persist``),
        else drop it (nothing would keep it) and wait for the thread to end."""
        if self._persist:
            self.finish()
            return
        thread = self._thread
        self.stop()
        if thread is not None and thread is not threading.current_thread():
            thread.join()

    def stop(self) -> None:
        """Drop the build (a dropped collection): the thread ends at its next batch, saving
        nothing; never waits."""
        self._stop.set()
        self._wake.set()

    # -- the build thread --------------------------------------------------------------------

    def _run(self) -> None:
        self._threads = ann_graph.build_threads()  # this new thread's default: faiss's own
        try:
            state = self._grow()
            if state is not None and not self._stop.is_set():
                self._index.adopt(state, self._read)
        except _Stopped:
            return
        except Exception as exc:  # a background thread: report, and the search builds instead
            self._stop.set()  # for good: retrying on each write would re-read every row
            log.warning(
                "background ANN build of collection %d stopped (%s: %s); the first search "
                "builds the graph", self._index.collection_id, type(exc).__name__, exc,
            )  # fmt: skip

    def _grow(self) -> AnnState | None:
        """Catch up and add until caught up and settled (or hurried); None: nothing to build."""
        state: AnnState | None = None
        while not self._stop.is_set():
            hurried = self._hurry.is_set()
            self._wake.clear()
            started = time.perf_counter()
            state = self._read(partial(self._next, state=state))
            read_s = time.perf_counter() - started
            if state is None:  # below the threshold (or off): wait for more writes
                if hurried or not self._wake.wait(SETTLE * 2):
                    return None
                continue
            added = 0
            if state.rows > state.graph_rows or state.graph is None:
                state, added = ann_upkeep.grown(state, BATCH, self._before_batch)
                log.debug(
                    "ANN graph growing: %d rows read in %.2f s, added in %.2f s; %d in all",
                    added, read_s, time.perf_counter() - started - read_s, state.graph_rows,
                )  # fmt: skip
            if hurried:
                return state
            if added == 0 and self._settled():
                return state
            if added == 0:
                self._wake.wait(SETTLE)
        raise _Stopped

    def _next(self, conn: sqlite3.Connection, state: AnnState | None) -> AnnState | None:
        """The rows to build from: ``state`` caught up, or all rows once the collection holds
        a graph's worth; None while it does not (or the background build is off)."""
        cid = self._index.collection_id
        meta = collection_meta(conn, cid)
        if meta is None:
            raise _Stopped
        identity, _, options = meta
        opts = AnnOptions.from_options(options)
        self._persist = opts.persist
        if not opts.build_while_writing or opts.storage == "int8":
            raise _Stopped  # int8 codes train on a sample: the first search sees every row
        if (
            state is not None
            and state.identity == identity
            and state.options.graph_key() == opts.graph_key()
        ):
            try:  # rows read as stored (float16), as load_rows(half=True) reads them
                return replace(catch_up(conn, cid, state, half=True), options=opts)
            except LogPruned:  # another writer pruned the log: read the rows again
                pass
        if not embedded_at_least(conn, cid, opts.threshold):
            return None
        return load_rows(conn, cid, identity, opts, half=True)

    def _settled(self) -> bool:
        return time.monotonic() - self._last_write >= SETTLE

    def _before_batch(self) -> None:
        if self._stop.is_set():
            raise _Stopped
        writing = not self._hurry.is_set() and not self._settled()
        ann_graph.set_build_threads(1 if writing else self._threads)
