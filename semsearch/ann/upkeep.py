"""Upkeep of the vector cache's HNSW graph: build, merge, compact and drop, one snapshot at a time.

Each function takes an immutable :class:`~semsearch.ann.rows.AnnState` and returns a new one, so
a search running on the old snapshot is never disturbed. When they run is the cache's decision
(ann/cache.py, with the thresholds of :class:`~semsearch.ann.policy.AnnOptions`): a graph is
built once a collection passes ``threshold`` live rows, rebuilt from the live rows when dead ones
pass ``compact_fraction`` of it, and fresh rows are merged into it past ``merge_fraction``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

import numpy as np
from numpy.typing import NDArray

from semsearch.ann import file as ann_file
from semsearch.ann import graph as ann_graph
from semsearch.ann.policy import AnnOptions
from semsearch.ann.rows import AnnState
from semsearch.ann.scan import Fetch, gather

__all__ = ["compact_fresh", "drop_graph", "grown", "merged", "rebuild_for", "rebuilt"]


def rebuilt(state: AnnState, fetch: Fetch) -> AnnState:
    """A new graph over the live rows; the state holds no fresh rows and no saved token."""
    keep = np.flatnonzero(state.alive)
    if state.graph_rows == 0 and keep.size == state.rows:
        vectors = state.fresh  # every row, as they are: no float32 copy of them all
    else:  # an fp16 graph of float16 values is built from float16 rows, upcast in batches
        half = state.options.storage == "float16" and state.identity["precision"] == "float16"
        vectors = gather(state, keep, fetch, np.float16 if half else np.float32)
    graph = ann_graph.build_graph(vectors, state.options)
    return _with_graph(state, graph, keep, np.ones(keep.size, dtype=np.bool_))


def merged(state: AnnState, db_path: str, cid: int) -> tuple[AnnState, int]:
    """(the state with its live fresh rows added to a copy of its graph, rows added)."""
    # Never add to the snapshot's own graph: a search may be using it, and an add moves
    # the vectors its ``graph_vectors`` view points at. Work on a private copy.
    if state.token is not None and ann_graph.is_mapped(state.graph):  # read-only maps
        graph = ann_graph.owned_copy(state.graph, ann_file.graph_path(db_path, cid, state.token))
    else:
        graph = ann_graph.clone_graph(state.graph)
    return grown(replace(state, graph=graph))


def grown(
    state: AnnState, batch: int = 65_536, before_batch: Callable[[], None] | None = None
) -> tuple[AnnState, int]:
    """(the state with its live fresh rows added to its own graph, rows added); a state
    without a graph gets a new one over its live rows.

    The graph is changed in place: only for a state no search can hold (a private copy, or
    the background build's, ann/grower.py). ``batch`` and ``before_batch`` are passed to
    :func:`~semsearch.ann.graph.add_to_graph`.
    """
    fresh_alive = np.flatnonzero(state.alive[state.graph_rows :])
    whole = fresh_alive.size == state.fresh.shape[0]
    added = state.fresh if whole else state.fresh[fresh_alive]  # no copy of a fresh load
    graph = state.graph
    if graph is None:
        graph = ann_graph.new_graph(state.dim, state.options, added)
    ann_graph.add_to_graph(graph, added, batch, before_batch)
    keep = np.concatenate([np.arange(state.graph_rows), state.graph_rows + fresh_alive])
    return _with_graph(state, graph, keep, state.alive[keep].copy()), int(added.shape[0])


def _with_graph(
    state: AnnState, graph: Any, keep: NDArray[np.int64], alive: NDArray[np.bool_]
) -> AnnState:
    """``state`` with rows ``keep`` (in that order) all in ``graph``, none fresh, unsaved."""
    flat = ann_graph.graph_vectors(graph)
    return replace(
        state,
        chunk_ids=state.chunk_ids[keep].copy(),
        record_rowids=state.record_rowids[keep].copy(),
        alive=alive,
        graph=graph,
        graph_rows=int(keep.size),
        graph_vectors=flat if flat is not None else _no_values(state.dim),
        fresh=np.empty((0, state.dim), np.float32),
        token=None,
    )


def drop_graph(state: AnnState, fetch: Fetch) -> AnnState:
    """``state`` without its graph: every row fresh, float32."""
    return replace(
        state,
        graph=None,
        graph_rows=0,
        graph_vectors=np.empty((0, state.dim), np.float32),
        fresh=gather(state, np.arange(state.rows), fetch),
        token=None,
    )


def compact_fresh(state: AnnState) -> AnnState:
    """Drop tombstoned rows from a cache without a graph."""
    keep = np.flatnonzero(state.alive)
    return replace(
        state,
        chunk_ids=state.chunk_ids[keep],
        record_rowids=state.record_rowids[keep],
        alive=np.ones(keep.size, dtype=np.bool_),
        fresh=state.fresh[keep],
    )


def rebuild_for(state: AnnState, opts: AnnOptions) -> bool:
    """True when ``opts`` change how the state's graph is built (M, ef_construction, storage)."""
    return state.graph is not None and state.options.graph_key() != opts.graph_key()


def _no_values(dim: int) -> NDArray[np.float16]:
    """The ``graph_vectors`` of a graph whose codes are not the stored values (int8)."""
    return np.empty((0, dim), np.float16)
