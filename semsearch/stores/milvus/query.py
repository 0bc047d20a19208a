"""Queries of the Milvus store: vector search (ANN with an exact fallback), find (keyword
search: :mod:`semsearch.stores.milvus.keyword`)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from semsearch.ann.exact import top_k
from semsearch.filters import Filter
from semsearch.results import Record
from semsearch.stores.base import ScoredChunk
from semsearch.stores.milvus import layout as lay
from semsearch.stores.milvus.conn import translated
from semsearch.stores.milvus.expr import column
from semsearch.stores.milvus.layout import MAX_TOPK
from semsearch.stores.milvus.records import get_records
from semsearch.stores.milvus.state import EXACT_MAX, SmallSet
from semsearch.stores.query_rules import best_first, check_query_dim

if TYPE_CHECKING:
    from semsearch.stores.milvus.access import MilvusAccess

__all__ = ["find", "vector_search"]


def vector_search(
    store: MilvusAccess,
    collection: str,
    vector: NDArray[np.float32],
    k: int,
    where: Filter | None,
    exact: bool,
) -> list[ScoredChunk]:
    """See :meth:`MilvusStore.vector_search`.

    Round trips: one ANN search without a filter. With a filter not yet known to be large,
    first one query for the matching vectors, at most ``EXACT_MAX + 1``: when it returns at
    most ``EXACT_MAX``, that is the whole match set and it is ranked exactly (no search
    follows; on Milvus Lite the set is kept until the next write, so the same filter again
    costs no round trip); otherwise the filter is remembered as large until the next write and
    answered by filtered ANN. An ANN answer shorter than ``k`` is replaced by an exact scan of
    the matches, so a search returns min(k, matches) hits without counting them first; that
    filter then goes straight to the exact scan for k or more until the next write (a filter
    of a few hundred chunks, asked for the 200 chunks a semantic search's rescoring depth asks
    for, starves HNSW on indexed Lite segments every time).
    """
    found = store._coll(collection, "vectors")
    if found is None or k <= 0:
        return []
    meta = store.meta_cached(collection)
    if meta is None:  # dropped meanwhile: the collection layer says so (an empty answer)
        return []
    dim = meta.get("dim")
    check_query_dim(collection, dim, vector)
    user = store.filter_expr(where)
    expr = _and(store.vector_filter(collection), user)  # layout 2: embedded rows only
    if exact or k > MAX_TOPK:
        return _exact(store, collection, vector, k, expr)
    if user and not store.state.known_large(collection, user):
        small = _small_set(store, found, collection, user, expr, int(dim or vector.shape[0]))
        if small is not None:
            return _ranked(small.matrix, small.chunk_ids, small.record_ids, vector, k)
    if user and store.state.ann_starved(collection, user, k):
        return _exact(store, collection, vector, k, expr)
    hits = ann(found, meta.get("index", "HNSW"), vector, k, expr, store.search_params)
    if len(hits) < k:  # fewer vectors than k match, or the graph starved: rank them all
        if user:  # the same filter will starve again until a write: skip its ANN call
            store.state.mark_starved(collection, user, k)
        return _exact(store, collection, vector, k, expr)
    return best_first(hits)


def _and(first: str, second: str) -> str:
    """Both Milvus expressions ('' is none)."""
    if first and second:
        return f"({first}) and ({second})"
    return first or second


def _small_set(
    store: MilvusAccess, found: tuple[Any, str], collection: str, key: str, expr: str, dim: int
) -> SmallSet | None:
    """Every vector matching ``expr`` (float32[m, dim] unit rows) when at most ``EXACT_MAX``
    do, from the location's cache or one query (kept on Milvus Lite until the next write);
    None when more do, and the user's filter ``key`` is then remembered as large until the
    next write."""
    state = store.state
    small = state.small_set(collection, key)
    if small is not None:
        return small
    generation = state.generation
    rows = _matches(found, expr, EXACT_MAX + 1)
    if len(rows) > EXACT_MAX:
        state.mark_large(collection, key)
        return None
    small = SmallSet(
        generation,
        [int(r["chunk_id"]) for r in rows],
        [r["record_id"] for r in rows],
        _unit_rows(rows, dim),
    )
    state.keep_small_set(collection, key, small)
    return small


#: Fields read for an exact ranking: ``vector`` arrives as float32 numpy (``strict_float32``).
_EXACT_FIELDS = ["chunk_id", "record_id", "vector"]


def _matches(found: tuple[Any, str], expr: str, limit: int) -> list[dict[str, Any]]:
    """Up to ``limit`` vector rows matching ``expr`` (one query)."""
    client, name = found
    with translated("filtering vectors"):
        return list(
            client.query(
                name, filter=expr, output_fields=_EXACT_FIELDS, limit=limit, strict_float32=True
            )
        )


def ann(
    found: tuple[Any, str],
    index: str,
    vector: NDArray[np.float32],
    k: int,
    expr: str,
    override: dict[str, Any] | None = None,
) -> list[ScoredChunk]:
    """One Milvus ANN search (no exact fallback): top-k (chunk id, record id, cosine)."""
    client, name = found
    params = {**lay.INDEXES[index]["search"], **(override or {})}
    if "ef" in params:
        params["ef"] = max(int(params["ef"]), k)
    with translated("searching vectors"):
        res = client.search(
            name,
            data=[vector.astype(np.float32).tolist()],
            anns_field="vector",
            limit=k,
            filter=expr,
            output_fields=["record_id"],
            search_params={"metric_type": "COSINE", "params": params},
        )
    return [
        ScoredChunk(int(h["chunk_id"]), h["entity"]["record_id"], float(h["distance"]))
        for h in res[0]
    ]


#: Rows the exact path asks for in one query before it pages through a scan (a scan page's
#: size): a match set smaller than this costs one round trip instead of a query iterator's
#: several (on Milvus Lite each one evaluates the filter over every row).
_EXACT_FIRST = 1000


def _exact(
    store: MilvusAccess, collection: str, vector: NDArray[np.float32], k: int, expr: str
) -> list[ScoredChunk]:
    """Exact top-k of the vectors matching ``expr``: one query when fewer than
    ``_EXACT_FIRST`` match, else a paged scan of them all."""
    found = store._coll(collection, "vectors")
    if found is None:
        return []
    everything = store.all_expr(expr)
    rows = _matches(found, everything, _EXACT_FIRST)
    if len(rows) >= _EXACT_FIRST:
        rows = list(store.scan(collection, "vectors", everything, _EXACT_FIELDS))
    return _top(rows, vector, k)


def _top(rows: list[dict[str, Any]], vector: NDArray[np.float32], k: int) -> list[ScoredChunk]:
    """Exact top-k of ``rows`` (chunk_id, record_id, vector) by cosine similarity."""
    if not rows:
        return []
    matrix = _unit_rows(rows, vector.shape[0])
    ids = [int(r["chunk_id"]) for r in rows]
    return _ranked(matrix, ids, [r["record_id"] for r in rows], vector, k)


def _unit_rows(rows: list[dict[str, Any]], dim: int) -> NDArray[np.float32]:
    """The rows' vectors (float32 arrays or lists of floats) as float32[n, dim] unit rows
    (stored vectors are unit length up to float32 rounding; zero rows stay zero)."""
    if not rows:
        return np.zeros((0, dim), dtype=np.float32)
    matrix = np.vstack([np.asarray(r["vector"], dtype=np.float32) for r in rows])
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    matrix /= np.where(norms == 0, 1.0, norms)
    return matrix


def _ranked(
    matrix: NDArray[np.float32],
    chunk_ids: list[int],
    record_ids: list[str],
    vector: NDArray[np.float32],
    k: int,
) -> list[ScoredChunk]:
    """Exact top-k rows of ``matrix`` (float32[m, dim] unit rows) by cosine with ``vector``."""
    if not chunk_ids:
        return []
    picked, scores = top_k(matrix, vector.astype(np.float32), k)
    return best_first(
        [
            ScoredChunk(chunk_ids[r], record_ids[r], float(s))
            for r, s in zip(picked, scores, strict=True)
        ]
    )


def find(
    store: MilvusAccess,
    collection: str,
    where: Filter | None,
    limit: int,
    offset: int,
    order_by: Sequence[tuple[str, bool]],
) -> list[Record]:
    """Records matching ``where``; Milvus queries have no ORDER BY, so ids and the order-by
    columns of every match are read and sorted here (nulls first ascending, last descending,
    as SQLite does), then only the requested page's bodies are fetched."""
    expr = store.filter_expr(where)
    kind, heads = "records", "part == 0"
    if store.layout(collection) >= 3:  # the head rows (see layout.py)
        kind, heads = "chunks", 'ordinal == 0 and record_hash != ""'
    full = f"{heads} and {expr}" if expr else heads
    cols = [column(name) for name, _ in order_by]
    rows = list(store.scan(collection, kind, full, ["record_id", *cols]))
    rows.sort(key=lambda r: r["record_id"])
    for (_, desc), col in reversed(list(zip(order_by, cols, strict=True))):
        rows.sort(key=lambda r: _sort_key(r.get(col)), reverse=desc)
    page = [r["record_id"] for r in rows[offset : offset + limit]]
    return get_records(store, collection, page)


def _sort_key(value: Any) -> tuple[int, Any]:
    if value is None:
        return (0, 0)
    if isinstance(value, list):
        return (1, json.dumps(value))
    return (1, value)
