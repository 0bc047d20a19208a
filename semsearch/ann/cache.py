"""The SQLite store's vector cache: exact scans below a threshold, an HNSW graph above it.

The ``.embed.db`` file is the source of truth. This module keeps a derived cache per
collection and checks it against the collection's change counter before every search:

- rows: the collection's embedded chunks (chunk id, record rowid, unit vector), split
  into *graph rows* (indexed by an HNSW graph, :mod:`~semsearch.ann.graph`) and *fresh
  rows* (added since the graph was built; scanned exactly);
- tombstones: rows whose chunk was deleted or re-embedded are marked dead and never returned;
  when dead rows pass ``compact_fraction`` of the graph it is rebuilt from the live rows, and
  fresh rows are merged into the graph once they pass ``merge_fraction`` of it;
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
an exact scan, so a search returns min(k, matching chunks) rows.
"""

from __future__ import annotations

import logging
import sqlite3
import threading
from collections.abc import Callable, Hashable
from dataclasses import replace
from typing import Any, Protocol, TypeVar

import numpy as np
from numpy.typing import NDArray

from semsearch.ann import file as ann_file
from semsearch.ann import graph as ann_graph
from semsearch.ann.exact import clamp_cosine, dot_rows
from semsearch.ann.filter import AllowedSet, FilterCache, vector_budget
from semsearch.ann.policy import AnnOptions, graph_ef, plan_search
from semsearch.ann.rows import (
    AnnState,
    LogPruned,
    catch_up,
    collection_meta,
    configure_ann,
    load_rows,
    open_sidecar,
)
from semsearch.errors import BackendUnavailable

__all__ = ["AnnIndex", "AnnState", "configure_ann"]

log = logging.getLogger(__name__)

T = TypeVar("T")


class Reader(Protocol):
    """Runs a function inside one read transaction of the store's connection."""

    def __call__(self, fn: Callable[[sqlite3.Connection], T], /) -> T: ...


_MAX_EF = 4096

#: Reads the stored vectors of chunks from the SQLite file: ``fetch(chunk_ids int64[m], dim)``
#: -> float32[m, dim] (the float16 values upcast; zeros for chunks gone since). An int8 graph
#: keeps no vectors beside its codes, so its rescoring and exact scans read them through this.
Fetch = Callable[[NDArray[np.int64], int], NDArray[np.float32]]


class AnnIndex:
    """The cache of one collection of one SQLite file.

    Args:
        db_path: the SQLite file (``":memory:"`` keeps the cache in memory only).
        collection_id: the collection's row id in ``collections``.
        fetch: reads chunks' stored vectors from the file (see :data:`Fetch`).
    """

    def __init__(self, db_path: str, collection_id: int, fetch: Fetch) -> None:
        self.db_path = db_path
        self.collection_id = collection_id
        self._fetch = fetch
        self.state: AnnState | None = None
        self._lock = threading.Lock()
        self._persist_failed = False
        self._graph_unavailable = False
        self._filters = FilterCache()

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
        with self._lock:
            meta = read(lambda conn: collection_meta(conn, self.collection_id))
            if meta is None:
                self.state = None
                return None
            identity, version, options = meta
            opts = AnnOptions.from_options(options)
            state = self.state
            if state is None or state.identity != identity or _rebuild_for(state, opts):
                state = self._open(read, identity, opts, upkeep)
            elif state.version != version:
                current = state
                try:
                    state = read(lambda conn: catch_up(conn, self.collection_id, current))
                except LogPruned:  # another writer pruned what this cache had not read
                    state = self._open(read, identity, opts, upkeep)
            if state.options != opts:
                state = replace(state, options=opts)
            self.state = self._upkeep(state) if upkeep else state
            return self.state

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

    def _upkeep(self, state: AnnState) -> AnnState:
        """Build, merge or compact the graph when due; stay exact if faiss is unavailable."""
        if self._graph_unavailable:
            return self._drop_graph(state) if state.graph is not None else state
        try:
            return self._maintain(state)
        except BackendUnavailable as exc:
            log.warning("%s; searches stay exact (%s)", exc.message, exc.hint)
            self._graph_unavailable = True
            return replace(state, fresh=state.fresh.astype(np.float32, copy=False))  # exact: f32

    def _maintain(self, state: AnnState) -> AnnState:
        opts = state.options
        live = state.live()
        if state.graph is None:
            if live < opts.threshold:
                return _compact_fresh(state) if state.rows > 2 * live + 1024 else state
            return self._rebuild(state, "built")
        dead = state.graph_rows - int(np.count_nonzero(state.alive[: state.graph_rows]))
        if dead > opts.compact_fraction * state.graph_rows:
            if live < opts.threshold:
                return _compact_fresh(self._drop_graph(state))
            return self._rebuild(state, "compacted")
        fresh = state.rows - state.graph_rows
        if fresh > max(1024, opts.merge_fraction * state.graph_rows):
            return self._merge(state)
        return state

    def _rebuild(self, state: AnnState, why: str) -> AnnState:
        keep = np.flatnonzero(state.alive)
        if state.graph_rows == 0 and keep.size == state.rows:
            vectors = state.fresh  # every row, as they are: no float32 copy of them all
        else:  # an fp16 graph of float16 values is built from float16 rows, upcast in batches
            half = state.options.storage == "float16" and state.identity["precision"] == "float16"
            vectors = self._gather(state, keep, np.float16 if half else np.float32)
        graph = ann_graph.build_graph(vectors, state.options)
        log.info("ANN graph %s for %r: %d vectors", why, state.identity["collection"], keep.size)
        flat = ann_graph.graph_vectors(graph)
        built = replace(
            state,
            chunk_ids=state.chunk_ids[keep].copy(),
            record_rowids=state.record_rowids[keep].copy(),
            alive=np.ones(keep.size, dtype=np.bool_),
            graph=graph,
            graph_rows=int(keep.size),
            graph_vectors=flat if flat is not None else _no_values(state.dim),
            fresh=np.empty((0, state.dim), np.float32),
            token=None,
        )
        return self._save(built)

    def _merge(self, state: AnnState) -> AnnState:
        # Never add to the snapshot's own graph: a search may be using it, and an add moves
        # the vectors its ``graph_vectors`` view points at. Work on a private copy.
        if state.token is not None and ann_graph.is_mapped(state.graph):  # read-only maps
            graph = ann_graph.load_graph(
                ann_file.graph_path(self.db_path, self.collection_id, state.token), mmap=False
            )
        else:
            graph = ann_graph.clone_graph(state.graph)
        fresh_alive = np.flatnonzero(state.alive[state.graph_rows :])
        added = state.fresh[fresh_alive]
        ann_graph.add_to_graph(graph, added)
        keep = np.concatenate([np.arange(state.graph_rows), state.graph_rows + fresh_alive])
        flat = ann_graph.graph_vectors(graph)
        merged = replace(
            state,
            chunk_ids=state.chunk_ids[keep].copy(),
            record_rowids=state.record_rowids[keep].copy(),
            alive=state.alive[keep].copy(),
            graph=graph,
            graph_rows=int(keep.size),
            graph_vectors=flat if flat is not None else _no_values(state.dim),
            fresh=np.empty((0, state.dim), np.float32),
            token=None,
        )
        log.info(
            "ANN graph for %r: merged %d fresh vectors",
            state.identity["collection"],
            added.shape[0],
        )
        return self._save(merged)

    def _save(self, state: AnnState) -> AnnState:
        """Persist a graph state (graph file, then the ``.ann`` naming it); keep it on failure."""
        if not self._persistent(state.options) or state.graph is None:
            return state
        token = ann_file.new_token()
        try:
            gpath = ann_file.graph_path(self.db_path, self.collection_id, token)
            # fp16 codes are the file's float16 vectors bit for bit: leave them to the file
            apart = ann_graph.fp16_codes(state.graph) and state.identity["precision"] == "float16"
            apart = apart and not state.options.codes_in_graph
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
        where: tuple[Hashable, Callable[[], NDArray[np.int64]]] | None,
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
                state, key, lambda: _rowid_mask(state.record_rowids, rowids())
            )
        want = min(k, allowed.count)
        if want == 0:
            return np.empty(0, np.int64), np.empty(0, np.float32)
        plan = plan_search(
            allowed.count, state.graph_rows, exact, state.graph is not None, state.options
        )
        if plan == "exact":
            rows, scores = self._exact(state, vector, want, allowed)
        else:
            rows, scores = self._graph_search(state, vector, want, allowed)
        return rows, clamp_cosine(scores)  # the one place SQLite's cosine scores are made

    def _graph_search(
        self, state: AnnState, vector: NDArray[np.float32], want: int, allowed: AllowedSet
    ) -> tuple[NDArray[np.int64], NDArray[np.float32]]:
        g = state.graph_rows
        bits = allowed.graph_bits(g)
        n_graph = allowed.graph_count(g)
        ef = graph_ef(want, n_graph / max(g, 1), state.options)
        goal = min(want, n_graph)
        # int8 codes rank approximately: take more candidates, rescored below
        pool = want if _has_values(state) else min(max(4 * want, 40), ef)
        while True:
            rows, scores = ann_graph.search_graph(state.graph, vector, max(pool, want), ef, bits)
            if rows.size >= goal:
                break
            if ef >= _MAX_EF:
                log.debug("graph ran dry (%d of %d); exact scan instead", rows.size, goal)
                return self._exact(state, vector, want, allowed)
            ef = min(ef * 4, _MAX_EF)
        if not _has_values(state):  # int8 codes rank approximately: rescore from the file
            scores = self._fetch(state.chunk_ids[rows], state.dim) @ vector
        fresh_allowed = np.flatnonzero(allowed.mask[g:])
        if fresh_allowed.size:
            fresh_scores = state.fresh[fresh_allowed] @ vector
            rows = np.concatenate([rows, g + fresh_allowed])
            scores = np.concatenate([scores, fresh_scores.astype(np.float32)])
        order = np.argsort(-scores, kind="stable")[:want]
        return rows[order], scores[order]

    def _gather(
        self, state: AnnState, rows: NDArray[np.int64], dtype: type = np.float32
    ) -> NDArray[Any]:
        """``dtype`` [len(rows), dim] vectors of the given ascending rows (graph rows then fresh
        rows): float32 by default (float16 graph codes upcast, an int8 graph's read from the
        SQLite file); float16 for a graph rebuild from float16 values (no float32 copy)."""
        g = state.graph_rows
        split = int(np.searchsorted(rows, g))
        out: NDArray[Any] = np.empty((rows.shape[0], state.dim), dtype)
        if _has_values(state):
            out[:split] = state.graph_vectors[rows[:split]]
        else:
            out[:split] = self._fetch(state.chunk_ids[rows[:split]], state.dim)
        out[split:] = state.fresh[rows[split:] - g]
        return out

    def _drop_graph(self, state: AnnState) -> AnnState:
        return replace(
            state,
            graph=None,
            graph_rows=0,
            graph_vectors=np.empty((0, state.dim), np.float32),
            fresh=self._gather(state, np.arange(state.rows)),
            token=None,
        )

    def _exact(
        self, state: AnnState, vector: NDArray[np.float32], want: int, allowed: AllowedSet
    ) -> tuple[NDArray[np.int64], NDArray[np.float32]]:
        """Exact top rows among ``allowed``: gather the few (kept for the next query with the
        same filter), or scan all and mask the rest.

        Float16 graph rows are upcast on the way: about 6x the cost of a float32 product, so
        any allowed set whose float32 copy fits the filter cache's budget is gathered and kept
        (the next search with the same filter, or none, pays only the product).
        """
        rows: NDArray[np.int64] | None = None
        half = state.graph_vectors.dtype != np.float32
        small = allowed.count * state.dim * 4 <= vector_budget(state.rows, state.dim)
        if allowed.count * 4 < state.rows or (half and small) or not _has_values(state):
            rows = allowed.rows()
            sub = allowed.vectors
            if sub is None:
                sub = self._gather(state, rows)
                self._filters.keep_vectors(state, allowed, sub)
            scores = sub @ vector
        else:
            scores = _scan(state, vector)
            if allowed.count < state.rows:
                scores[~allowed.mask] = -np.inf
        m = min(want, scores.shape[0])
        part = np.argpartition(-scores, m - 1)[:m] if m < scores.shape[0] else np.arange(m)
        order = part[np.argsort(-scores[part], kind="stable")]
        picked = order if rows is None else rows[order]
        return picked.astype(np.int64), scores[order].astype(np.float32)


def _scan(state: AnnState, vector: NDArray[np.float32]) -> NDArray[np.float32]:
    parts = [dot_rows(state.graph_vectors, vector), dot_rows(state.fresh, vector)]
    return np.concatenate(parts).astype(np.float32, copy=False)


def _has_values(state: AnnState) -> bool:
    """True when the graph rows' stored values are in memory (fp16 or flat graph codes)."""
    return int(state.graph_vectors.shape[0]) == state.graph_rows


def _no_values(dim: int) -> NDArray[np.float16]:
    """The ``graph_vectors`` of a graph whose codes are not the stored values (int8)."""
    return np.empty((0, dim), np.float16)


def _rowid_mask(
    record_rowids: NDArray[np.int64], allowed_rowids: NDArray[np.int64]
) -> NDArray[np.bool_]:
    """bool[n]: which rows belong to an allowed record (a lookup table, O(n))."""
    if allowed_rowids.size == 0 or record_rowids.size == 0:
        return np.zeros(record_rowids.shape[0], dtype=np.bool_)
    top = int(max(record_rowids.max(), allowed_rowids.max())) + 1
    table = np.zeros(top, dtype=np.bool_)
    table[allowed_rowids] = True
    return table[record_rowids]


def _rebuild_for(state: AnnState, opts: AnnOptions) -> bool:
    return state.graph is not None and state.options.graph_key() != opts.graph_key()


def _compact_fresh(state: AnnState) -> AnnState:
    """Drop tombstoned rows from a cache without a graph."""
    keep = np.flatnonzero(state.alive)
    return replace(
        state,
        chunk_ids=state.chunk_ids[keep],
        record_rowids=state.record_rowids[keep],
        alive=np.ones(keep.size, dtype=np.bool_),
        fresh=state.fresh[keep],
    )
