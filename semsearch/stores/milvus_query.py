"""Queries of the Milvus store: vector search (ANN with an exact fallback), BM25, find."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from semsearch.errors import DimensionMismatch
from semsearch.filters import Filter
from semsearch.results import Record
from semsearch.stores import milvus_layout as lay
from semsearch.stores.base import ScoredChunk
from semsearch.stores.exact import top_k
from semsearch.stores.milvus_conn import translated
from semsearch.stores.milvus_expr import column

if TYPE_CHECKING:
    from semsearch.stores.milvus import MilvusStore

__all__ = ["find", "keyword_search", "vector_search"]


def _ordered(hits: list[ScoredChunk]) -> list[ScoredChunk]:
    return sorted(hits, key=lambda h: (-h.score, h.record_id, h.chunk_id))


def vector_search(
    store: MilvusStore,
    collection: str,
    vector: NDArray[np.float32],
    k: int,
    where: Filter | None,
    exact: bool,
) -> list[ScoredChunk]:
    """See :meth:`MilvusStore.vector_search`."""
    from semsearch.stores.milvus import EXACT_MAX, MAX_TOPK

    found = store._coll(collection, "vectors")
    if found is None or k <= 0:
        return []
    meta = store.meta_cached(collection)
    dim = meta.get("dim")
    if dim is not None and int(dim) != vector.shape[0]:
        raise DimensionMismatch(
            f"query vector is {vector.shape[0]}-d; collection {collection!r} is {dim}-d",
            hint="query with the model the collection was built with",
        )
    expr = store.filter_expr(where)
    matches: int | None = None
    if where is not None:
        matches = store.count_where(collection, "vectors", expr)
        if matches <= EXACT_MAX:
            exact = True
    if exact or k > MAX_TOPK:
        return _exact(store, collection, vector, k, expr)
    hits = _ann(found, meta.get("index", "HNSW"), vector, k, expr)
    if len(hits) < k:
        if matches is None:
            matches = store.count_where(collection, "vectors", store.all_expr(expr))
        if len(hits) < min(k, matches):
            return _exact(store, collection, vector, k, expr)
    return _ordered(hits)


def _ann(
    found: tuple[Any, str], index: str, vector: NDArray[np.float32], k: int, expr: str
) -> list[ScoredChunk]:
    client, name = found
    params = dict(lay.INDEXES[index]["search"])
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


def _exact(
    store: MilvusStore, collection: str, vector: NDArray[np.float32], k: int, expr: str
) -> list[ScoredChunk]:
    ids: list[int] = []
    rids: list[str] = []
    vecs: list[list[float]] = []
    for row in store.scan(
        collection, "vectors", store.all_expr(expr), ["chunk_id", "record_id", "vector"]
    ):
        ids.append(int(row["chunk_id"]))
        rids.append(row["record_id"])
        vecs.append(row["vector"])
    if not ids:
        return []
    matrix = np.asarray(vecs, dtype=np.float32)
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    matrix /= np.where(norms == 0, 1.0, norms)
    rows, scores = top_k(matrix, vector.astype(np.float32), k)
    return _ordered(
        [ScoredChunk(ids[r], rids[r], float(s)) for r, s in zip(rows, scores, strict=True)]
    )


def keyword_search(
    store: MilvusStore, collection: str, text: str, k: int, where: Filter | None
) -> list[ScoredChunk]:
    """See :meth:`MilvusStore.keyword_search`.

    Scores are Milvus' BM25 (>= 0). Milvus Lite 3.2 reports BM25 as a negative distance
    (smaller is better) where the Milvus server reports the positive score; the absolute value
    is the BM25 score in both cases.
    """
    from semsearch.stores.milvus import MAX_TOPK

    found = store._coll(collection, "chunks")
    if found is None or not text.strip() or k <= 0:
        return []
    client, name = found
    with translated("searching keywords"):
        res = client.search(
            name,
            data=[text],
            anns_field="sparse",
            limit=min(k, MAX_TOPK),
            filter=store.filter_expr(where),
            output_fields=["record_id"],
            search_params={"metric_type": "BM25"},
        )
    hits = [
        ScoredChunk(int(h["chunk_id"]), h["entity"]["record_id"], abs(float(h["distance"])))
        for h in res[0]
    ]
    return _ordered([h for h in hits if h.score > 0])


def find(
    store: MilvusStore,
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
    full = f"part == 0 and {expr}" if expr else "part == 0"
    cols = [column(name) for name, _ in order_by]
    rows = list(store.scan(collection, "records", full, ["record_id", *cols]))
    rows.sort(key=lambda r: r["record_id"])
    for (_, desc), col in reversed(list(zip(order_by, cols, strict=True))):
        rows.sort(key=lambda r: _sort_key(r.get(col)), reverse=desc)
    page = [r["record_id"] for r in rows[offset : offset + limit]]
    return store.get_records(collection, page)


def _sort_key(value: Any) -> tuple[int, Any]:
    if value is None:
        return (0, 0)
    if isinstance(value, list):
        return (1, json.dumps(value))
    return (1, value)
