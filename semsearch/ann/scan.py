"""Ranking one snapshot of the vector cache: exact scans, graph searches, and gathering rows.

The cache (ann/cache.py) picks the plan (:func:`~semsearch.ann.policy.plan_search`); this module
carries it out on an :class:`~semsearch.ann.rows.AnnState`: an exact top-k over the allowed rows
(:func:`exact`), or a graph search that evaluates the filter inside the HNSW graph, widens ``ef``
when it runs dry and finally falls back to an exact scan (:func:`graph_search`). Scores are
cosine similarities (unit vectors: dot products), not yet clamped to [-1, 1].

Vectors come from where the snapshot keeps them (:func:`gather`): the graph rows' stored values
in memory (fp16 or flat graph codes), else (an int8 graph) the SQLite file through a
:data:`Fetch`, and the fresh rows added since the graph was built.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import numpy as np
from numpy.typing import NDArray

from semsearch.ann import LOGGER
from semsearch.ann import graph as ann_graph
from semsearch.ann.exact import dot_rows
from semsearch.ann.filter import AllowedSet, FilterCache, vector_budget
from semsearch.ann.policy import graph_ef
from semsearch.ann.rows import AnnState

__all__ = ["Fetch", "exact", "gather", "graph_search", "has_values"]

log = logging.getLogger(LOGGER)

_MAX_EF = 4096

#: Reads the stored vectors of chunks from the SQLite file: ``fetch(chunk_ids int64[m], dim)``
#: -> float32[m, dim] (the float16 values upcast; zeros for chunks gone since). An int8 graph
#: keeps no vectors beside its codes, so its rescoring and exact scans read them through this.
Fetch = Callable[[NDArray[np.int64], int], NDArray[np.float32]]

#: Rows and their scores, best first: (int64[m], float32[m]).
Ranked = tuple[NDArray[np.int64], NDArray[np.float32]]


def has_values(state: AnnState) -> bool:
    """True when the graph rows' stored values are in memory (fp16 or flat graph codes)."""
    return int(state.graph_vectors.shape[0]) == state.graph_rows


def gather(
    state: AnnState, rows: NDArray[np.int64], fetch: Fetch, dtype: type = np.float32
) -> NDArray[Any]:
    """``dtype`` [len(rows), dim] vectors of the given ascending rows (graph rows then fresh
    rows): float32 by default (float16 graph codes upcast, an int8 graph's read from the
    SQLite file); float16 for a graph rebuild from float16 values (no float32 copy)."""
    g = state.graph_rows
    split = int(np.searchsorted(rows, g))
    out: NDArray[Any] = np.empty((rows.shape[0], state.dim), dtype)
    if has_values(state):
        out[:split] = state.graph_vectors[rows[:split]]
    else:
        out[:split] = fetch(state.chunk_ids[rows[:split]], state.dim)
    out[split:] = state.fresh[rows[split:] - g]
    return out


def graph_search(
    state: AnnState,
    vector: NDArray[np.float32],
    want: int,
    allowed: AllowedSet,
    fetch: Fetch,
    filters: FilterCache,
) -> Ranked:
    """The top ``want`` allowed rows from the graph (``ef`` widened while it runs dry, then an
    :func:`exact` scan) merged with the allowed fresh rows, scanned exactly. An int8 graph's
    candidates are rescored from the stored vectors."""
    g = state.graph_rows
    bits = allowed.graph_bits(g)
    n_graph = allowed.graph_count(g)
    ef = graph_ef(want, n_graph / max(g, 1), state.options)
    goal = min(want, n_graph)
    # int8 codes rank approximately: take more candidates, rescored below
    pool = want if has_values(state) else min(max(4 * want, 40), ef)
    while True:
        rows, scores = ann_graph.search_graph(state.graph, vector, max(pool, want), ef, bits)
        if rows.size >= goal:
            break
        if ef >= _MAX_EF:
            log.debug("graph ran dry (%d of %d); exact scan instead", rows.size, goal)
            return exact(state, vector, want, allowed, fetch, filters)
        ef = min(ef * 4, _MAX_EF)
    if not has_values(state):  # int8 codes rank approximately: rescore from the file
        scores = fetch(state.chunk_ids[rows], state.dim) @ vector
    fresh_allowed = np.flatnonzero(allowed.mask[g:])
    if fresh_allowed.size:
        fresh_scores = state.fresh[fresh_allowed] @ vector
        rows = np.concatenate([rows, g + fresh_allowed])
        scores = np.concatenate([scores, fresh_scores.astype(np.float32)])
    order = np.argsort(-scores, kind="stable")[:want]
    return rows[order], scores[order]


def exact(
    state: AnnState,
    vector: NDArray[np.float32],
    want: int,
    allowed: AllowedSet,
    fetch: Fetch,
    filters: FilterCache,
) -> Ranked:
    """Exact top rows among ``allowed``: gather the few (kept in ``filters`` for the next query
    with the same filter), or scan all and mask the rest.

    Float16 graph rows are upcast on the way: about 6x the cost of a float32 product, so
    any allowed set whose float32 copy fits the filter cache's budget is gathered and kept
    (the next search with the same filter, or none, pays only the product).
    """
    rows: NDArray[np.int64] | None = None
    half = state.graph_vectors.dtype != np.float32
    small = allowed.count * state.dim * 4 <= vector_budget(state.rows, state.dim)
    if allowed.count * 4 < state.rows or (half and small) or not has_values(state):
        rows = allowed.rows()
        sub = allowed.vectors
        if sub is None:
            sub = gather(state, rows, fetch)
            filters.keep_vectors(state, allowed, sub)
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
