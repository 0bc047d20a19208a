"""The SQLite store's vector cache: exact scans below a threshold, an HNSW graph above it.

The ``.embed.db`` file is the source of truth. This module keeps a derived cache per
collection and checks it against the collection's change counter before every search:

- rows: the collection's embedded chunks (chunk id, record rowid, unit vector), split
  into *graph rows* (indexed by an HNSW graph, :mod:`~semsearch.ann.graph`) and *fresh
  rows* (added since the graph was built; scanned exactly);
- tombstones: rows whose chunk was deleted or re-embedded are marked dead and never returned;
  when dead rows pass ``compact_fraction`` of the graph it is rebuilt from the live rows, and
  fresh rows are merged into the graph once they pass ``merge_fraction`` of it
  (:mod:`~semsearch.ann.upkeep`);
- catch-up: when the counter moved (this or another process wrote), the ``changes`` log since
  the cache's last sequence number names the touched chunks: their old rows are tombstoned and
  their current vectors appended, all read in one SQLite read transaction;
- sidecar: collections with a graph persist it next to the SQLite file
  (:mod:`~semsearch.ann.file`), so a 1M-chunk collection answers its first query without
  rebuilding; an fp16 graph's file holds no codes (they are the SQLite file's float16 vectors,
  read back on open in graph row order), other graphs are memory-mapped. A missing, truncated
  or foreign sidecar is logged and rebuilt; it never fails a search.

Searches follow :func:`~semsearch.ann.policy.plan_search`: an exact scan when the
collection (or the filtered set) is small or ``exact=True``; otherwise a graph search that
evaluates the filter inside the graph, widens ``ef`` when it runs dry and finally falls back to
an exact scan, so a search returns min(k, matching chunks) rows (:mod:`~semsearch.ann.scan`).
"""

from __future__ import annotations

import logging
import os
import sqlite3
import threading
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

import numpy as np
from numpy.typing import NDArray

from semsearch.ann import LOGGER
from semsearch.ann import file as ann_file
from semsearch.ann import graph as ann_graph
from semsearch.ann import scan as ann_scan
from semsearch.ann import upkeep as ann_upkeep
from semsearch.ann.exact import clamp_cosine
from semsearch.ann.filter import FilterCache, rowid_mask
from semsearch.ann.grower import GraphGrower
from semsearch.ann.policy import AnnOptions, configure_ann, plan_search
from semsearch.ann.rows import (
    AnnState,
    LogPruned,
    Reader,
    catch_up,
    collection_meta,
    load_rows,
    open_sidecar,
)
from semsearch.errors import BackendUnavailable, InvalidQuery
from semsearch.stores.sqlite.allowed import Allowed
from semsearch.stores.sqlite.changes import data_version
from semsearch.stores.sqlite.vector_reads import chunk_slots

__all__ = ["AnnIndex", "AnnState", "configure_ann"]

log = logging.getLogger(LOGGER)


class AnnIndex:
    """The cache of one collection of one SQLite file.

    Args:
        db_path: the SQLite file (``":memory:"`` keeps the cache in memory only).
        collection_id: the collection's row id in ``collections``.
        fetch: reads chunks' stored vectors from the file (see :data:`~semsearch.ann.scan.Fetch`).
    """

    def __init__(self, db_path: str, collection_id: int, fetch: ann_scan.Fetch) -> None:
        self.db_path = db_path
        self.collection_id = collection_id
        self._fetch = fetch
        self.state: AnnState | None = None
        self._lock = threading.Lock()
        self._persist_failed = False
        self._graph_unavailable = False
        self._filters = FilterCache()
        #: (reader connection, data_version, upkeep, snapshot) of the last refresh; see unchanged
        self._current: tuple[sqlite3.Connection, int, bool, AnnState] | None = None
        self._grower: GraphGrower | None = None  # the first graph, grown while written

    # -- the first graph, grown while the collection is written (ann/grower.py) ---------------

    def grow(self, read: Reader, options: Mapping[str, Any]) -> None:
        """A write of vectors committed: grow the collection's first graph in the background
        when it has none yet (none in the cache, no sidecar on disk; a file store only) and
        its ANN options (``options``: the collection's options object) allow it."""
        state = self.state
        if self.db_path == ":memory:" or self._graph_unavailable:
            return
        if state is not None and state.graph is not None:
            return
        if os.path.exists(ann_file.ann_path(self.db_path, self.collection_id)):
            return
        try:
            opts = AnnOptions.from_options(options)
            if not opts.build_while_writing or opts.storage == "int8":  # see ann/grower.py
                return
        except InvalidQuery:  # never fail a committed write; the search reports bad options
            return
        if self._grower is None:
            self._grower = GraphGrower(self, read)
        self._grower.poke()

    def adopt(self, state: AnnState, read: Reader) -> bool:
        """Take a graph grown in the background as the cache's, saved as its sidecar; refused
        (False) when the cache already holds a graph (a search built one meanwhile)."""
        with self._lock:
            if self.state is not None and self.state.graph is not None:
                return False
            self.state = self._save(state, read)
            self._current = None
            log.info(
                "ANN graph built while writing for %r: %d vectors",
                state.identity["collection"], state.graph_rows,
            )  # fmt: skip
            return True

    def finish_growing(self) -> None:
        """Wait for a background build to end and hand over its graph (no-op without one)."""
        if self._grower is not None:
            self._grower.finish()

    def close_growing(self) -> None:
        """The store is closing: finish a background build whose graph is saved as the
        sidecar; drop one that would only live in memory (``persist=False``)."""
        if self._grower is not None:
            self._grower.close()

    def stop_growing(self) -> None:
        """Drop a background build without waiting (the collection is gone)."""
        if self._grower is not None:
            self._grower.stop()

    # -- keeping up with the SQLite file -------------------------------------------------------

    def refresh(self, read: Reader, upkeep: bool = True) -> AnnState | None:
        """Bring the cache up to date with the file and return the snapshot to search.

        Args:
            read: runs a function in one read transaction of the store.
            upkeep: build, merge or compact the graph when due; False (exact searches) only
                catches up, so an exact search never waits for a graph build.
        Returns:
            The snapshot, or None when the collection no longer exists. Never raises for a bad
            sidecar.
        """
        if upkeep:  # a graph being grown in the background: take it rather than build another
            self.finish_growing()
        with self._lock:
            self._current = None
            cid = self.collection_id
            meta, seen = read(lambda conn: (collection_meta(conn, cid), self._file_version(conn)))
            if meta is None:
                self.state = None
                return None
            identity, version, options = meta
            opts = AnnOptions.from_options(options)
            state = self.state
            if state is None or state.identity != identity or ann_upkeep.rebuild_for(state, opts):
                state = self._open(read, identity, opts, upkeep)
            elif state.version != version:
                current = state
                try:
                    state = read(lambda conn: catch_up(conn, self.collection_id, current))
                except LogPruned:  # another writer pruned what this cache had not read
                    state = self._open(read, identity, opts, upkeep)
            if state.options != opts:
                state = replace(state, options=opts)
            self.state = self._upkeep(state, read) if upkeep else state
            if seen is not None:
                self._current = (*seen, upkeep, self.state)
            return self.state

    def unchanged(
        self, seen: tuple[sqlite3.Connection, int], collection: str, upkeep: bool = True
    ) -> AnnState | None:
        """The last :meth:`refresh`'s snapshot when nothing was committed to the file since it
        was taken, else None (call :meth:`refresh`): a search's check of the change counter in
        about 3 us instead of a read transaction and the option parsing of a refresh.

        Args:
            seen: (reader connection, ``PRAGMA data_version``) read just now
                (``SQLiteConnections._file_version``); it matches the pair read inside the
                refresh's read transaction only when no connection of any process committed
                since (another connection object, e.g. a reopened reader, never matches).
            collection: the name searched; a snapshot of a collection renamed since (a swap)
                does not answer for it.
            upkeep: as for :meth:`refresh`; a snapshot refreshed without upkeep does not answer
                a search that wants it.
        Returns:
            The snapshot, or None. Always None for an in-memory file (no version to compare).
        """
        current = self._current  # one tuple, replaced whole: no lock needed to read it
        if current is None:
            return None
        conn, version, upkept, state = current
        if conn is not seen[0] or version != seen[1] or (upkeep and not upkept):
            return None
        return state if state.identity["collection"] == collection else None

    def _file_version(self, conn: sqlite3.Connection) -> tuple[sqlite3.Connection, int] | None:
        """(conn, its data_version) inside a refresh's read transaction; None in memory, where
        the reader is the writer and its own commits leave the number unchanged."""
        return None if self.db_path == ":memory:" else (conn, data_version(conn))

    def _open(
        self, read: Reader, identity: dict[str, Any], opts: AnnOptions, upkeep: bool
    ) -> AnnState:
        if self._persistent(opts):  # leftovers of a writer killed mid-write (any process)
            ann_file.remove_dead_temps(self.db_path, self.collection_id)
        state = self._load_sidecar(read, identity, opts) if self._persistent(opts) else None
        if state is None:  # rows a graph is about to be built from stay float16 (no f32 copy)
            half = upkeep and not self._graph_unavailable
            cid = self.collection_id
            state = read(lambda conn: load_rows(conn, cid, identity, opts, half))
        return state

    def _persistent(self, opts: AnnOptions) -> bool:
        return opts.persist and self.db_path != ":memory:" and not self._persist_failed

    def _load_sidecar(
        self, read: Reader, identity: dict[str, Any], opts: AnnOptions
    ) -> AnnState | None:
        path = ann_file.ann_path(self.db_path, self.collection_id)
        try:
            car = ann_file.read_sidecar(path, identity)
            cid = self.collection_id
            return read(lambda conn: open_sidecar(conn, self.db_path, cid, car, identity, opts))
        except LogPruned as exc:  # the sidecar is older than the pruned log
            log.warning(
                "ANN sidecar for %r is behind the change log (%s); rebuilding",
                identity["collection"], exc,
            )  # fmt: skip
        except ann_file.SidecarInvalid as exc:
            level = logging.DEBUG if str(exc) == "missing" else logging.WARNING
            log.log(
                level, "ANN sidecar for %r not usable (%s); rebuilding", identity["collection"], exc
            )
        except (RuntimeError, ValueError, OSError) as exc:
            log.warning(
                "ANN sidecar for %r unreadable (%s); rebuilding", identity["collection"], exc
            )
        return None

    # -- graph upkeep ------------------------------------------------------------------------

    def _upkeep(self, state: AnnState, read: Reader) -> AnnState:
        """Build, merge or compact the graph when due; stay exact if faiss is unavailable."""
        if self._graph_unavailable:
            return ann_upkeep.drop_graph(state, self._fetch) if state.graph is not None else state
        try:
            return self._maintain(state, read)
        except BackendUnavailable as exc:
            log.warning("%s; searches stay exact (%s)", exc.message, exc.hint)
            self._graph_unavailable = True
            return replace(state, fresh=state.fresh.astype(np.float32, copy=False))  # exact: f32

    def _maintain(self, state: AnnState, read: Reader) -> AnnState:
        opts = state.options
        live = state.live()
        if state.graph is None:
            if live < opts.threshold:
                return ann_upkeep.compact_fresh(state) if state.rows > 2 * live + 1024 else state
            return self._rebuild(state, "built", read)
        dead = state.graph_rows - int(np.count_nonzero(state.alive[: state.graph_rows]))
        if dead > opts.compact_fraction * state.graph_rows:
            if live < opts.threshold:
                return ann_upkeep.compact_fresh(ann_upkeep.drop_graph(state, self._fetch))
            return self._rebuild(state, "compacted", read)
        fresh = state.rows - state.graph_rows
        if fresh > max(1024, opts.merge_fraction * state.graph_rows):
            return self._merge(state, read)
        return state

    def _rebuild(self, state: AnnState, why: str, read: Reader) -> AnnState:
        built = ann_upkeep.rebuilt(state, self._fetch)
        log.info(
            "ANN graph %s for %r: %d vectors", why, state.identity["collection"], built.graph_rows
        )
        return self._save(built, read)

    def _merge(self, state: AnnState, read: Reader) -> AnnState:
        merged, added = ann_upkeep.merged(state, self.db_path, self.collection_id)
        log.info("ANN graph for %r: merged %d fresh vectors", state.identity["collection"], added)
        return self._save(merged, read)

    def _save(self, state: AnnState, read: Reader) -> AnnState:
        """Persist a graph state (graph file, then the ``.ann`` naming it); keep it on failure.

        An fp16 graph's codes are the file's float16 vectors bit for bit: unless
        ``codes_in_graph``, the graph file leaves them to the SQLite file when its vectors are
        in blocks (format 6), and the ``.ann`` file records each row's slot for the open.
        """
        if not self._persistent(state.options) or state.graph is None:
            return state
        token = ann_file.new_token()
        try:
            gpath = ann_file.graph_path(self.db_path, self.collection_id, token)
            apart = ann_graph.fp16_codes(state.graph) and state.identity["precision"] == "float16"
            slots = None
            if apart and not state.options.codes_in_graph:
                rows, cid = state.chunk_ids[: state.graph_rows], self.collection_id
                slots = read(lambda conn: chunk_slots(conn, cid, rows))
            apart = slots is not None
            graph_size = ann_graph.save_graph(state.graph, gpath, codes=not apart)
            header = dict(
                state.identity,
                version=state.version,
                last_seq=state.last_seq,
                graph={
                    "token": token,
                    "size": graph_size,
                    "codes_in_sqlite": apart,
                    **state.options.graph_key(),
                },
                graph_rows=state.graph_rows,
            )
            arrays: dict[str, NDArray[Any]] = {
                "chunk_ids": state.chunk_ids[: state.graph_rows],
                "record_rowids": state.record_rowids[: state.graph_rows],
                "alive": state.alive[: state.graph_rows].astype(np.uint8),
            }
            if slots is not None:
                arrays["slots"] = slots
            ann_file.write_sidecar(
                ann_file.ann_path(self.db_path, self.collection_id), header, arrays
            )
        except OSError as exc:
            log.warning("cannot write the ANN sidecar (%s); keeping it in memory", exc)
            self._persist_failed = True
            return state
        ann_file.remove_stale(self.db_path, self.collection_id, token)
        return replace(state, token=token)

    # -- queries ------------------------------------------------------------------------------

    def search(
        self,
        state: AnnState,
        vector: NDArray[np.float32],
        k: int,
        where: Allowed | None,
        exact: bool,
    ) -> tuple[NDArray[np.int64], NDArray[np.float32]]:
        """Top-``k`` live rows by cosine similarity in [-1, 1], best first.

        Args:
            state: a snapshot from :meth:`refresh`.
            vector: float32[dim] unit query.
            k: results wanted, >= 1.
            where: None for no filter, else ``(key, allowed_rowids)``: a hashable name of the
                filter and a function returning int64[m] record rowids that pass it. It is
                called at most once per snapshot and key (ann/filter.py).
            exact: force an exact scan.
        Returns:
            (rows int64[m], scores float32[m], cosine similarity clamped to [-1, 1]) with
            m == min(k, live rows that pass); map rows
            to chunks with ``state.chunk_ids`` / ``state.record_rowids``.
        """
        if where is None:
            allowed = self._filters.allowed(state, None, None)
        else:
            key, rowids = where
            allowed = self._filters.allowed(
                state, key, lambda: rowid_mask(state.record_rowids, rowids())
            )
        want = min(k, allowed.count)
        if want == 0:
            return np.empty(0, np.int64), np.empty(0, np.float32)
        plan = plan_search(
            allowed.count, state.graph_rows, exact, state.graph is not None, state.options
        )
        run = ann_scan.exact if plan == "exact" else ann_scan.graph_search
        rows, scores = run(state, vector, want, allowed, self._fetch, self._filters)
        return rows, clamp_cosine(scores)  # the one place SQLite's cosine scores are made
