"""Vector search of the SQLite store: the ANN cache's rows turned into chunks of live records.

The cache (ann/cache.py) answers with row numbers of one snapshot; this module names the
filter for the cache's allowed-set cache, maps rows to record ids, and searches again on a
fresh snapshot when a record was deleted after the snapshot was taken.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable, Sequence
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import NDArray

from semsearch.errors import DimensionMismatch
from semsearch.filters import Filter
from semsearch.stores.base import ScoredChunk
from semsearch.stores.sqlite.sql import batches, compile_filter, marks
from semsearch.stores.sqlite.vector_blobs import decode_blobs

if TYPE_CHECKING:
    from semsearch.stores.sqlite.store import SQLiteStore

__all__ = ["filter_key", "record_names", "stored_vectors", "vector_search", "vector_search_records"]


def record_names(store: SQLiteStore, rowids: Sequence[int]) -> dict[int, str]:
    """``{record rowid: record id}`` for the rowids that still exist."""
    out: dict[int, str] = {}
    for batch in batches(sorted({int(r) for r in rowids})):
        found = store._rows(f"SELECT rowid, id FROM records WHERE rowid IN ({marks(batch)})", batch)
        out.update({int(r[0]): r[1] for r in found})
    return out


def stored_vectors(
    store: SQLiteStore, chunk_ids: NDArray[np.int64], dim: int
) -> NDArray[np.float32]:
    """float32[len(chunk_ids), dim]: the chunks' stored vectors (float16 upcast), in the order
    asked; zeros for chunks that no longer have one (deleted since the caller's snapshot: the
    search drops their records, see :func:`vector_search`). For an int8 graph's rescoring and
    exact scans (ann/cache.py).
    """
    out = np.zeros((len(chunk_ids), dim), np.float32)
    where: dict[int, list[int]] = {}
    for i, chunk_id in enumerate(chunk_ids.tolist()):
        where.setdefault(int(chunk_id), []).append(i)
    for batch in batches(sorted(where)):
        rows = store._rows(
            f"SELECT id, vector FROM chunks WHERE id IN ({marks(batch)}) AND vector IS NOT NULL",
            batch,
        )
        if rows:
            vectors = decode_blobs([r[1] for r in rows], dim)
            for k, row in enumerate(rows):
                out[where[int(row[0])]] = vectors[k]
    return out


def filter_key(
    store: SQLiteStore, cid: int, where: Filter
) -> tuple[Hashable, Callable[[], NDArray[np.int64]]]:
    """(a hashable name of the filter, a function returning the rowids of passing records).

    The name is the compiled SQL with its parameters, so equal filters share one cached
    allowed set per snapshot (ann/filter.py); unhashable parameters get a unique name.
    """
    sql, params = compile_filter(where)

    def rowids() -> NDArray[np.int64]:
        rows = store._rows(
            f"SELECT r.rowid FROM records r WHERE r.collection_id = ? AND ({sql})",
            (cid, *params),
        )
        return np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))

    key: Hashable = (sql, tuple(params))
    try:
        hash(key)
    except TypeError:
        key = object()
    return key, rowids


def vector_search(
    store: SQLiteStore,
    collection: str,
    vector: NDArray[np.float32],
    k: int,
    where: Filter | None,
    exact: bool,
) -> list[ScoredChunk]:
    """Top-k chunks by cosine similarity in [-1, 1], best first, ties by record id.

    An exact numpy scan below the collection's ANN threshold (or with ``exact=True``), an
    HNSW graph above it (ann/cache.py). The filter applies before ranking; selective
    filters scan the filtered chunks exactly, others are evaluated inside the graph, so
    min(k, matching chunks) rows come back either way.
    Raises:
        DimensionMismatch: the query's dimension differs from the collection's.
    """
    return _ranked(store, collection, vector, k, where, exact, _all_rows)


def vector_search_records(
    store: SQLiteStore,
    collection: str,
    vector: NDArray[np.float32],
    limit: int,
    where: Filter | None,
    exact: bool,
) -> list[ScoredChunk]:
    """The candidate chunks of the best ``limit`` records by cosine similarity in [-1, 1]
    (see :class:`~semsearch.stores.base.VectorRecords`): best first, ties by record id.

    The graph is asked for ``CHUNKS_PER_RECORD * limit`` chunks, then deeper, by the crowding
    the answer showed, while they hold fewer than ``limit`` records and more chunks exist.
    Only the kept records are named (a name lookup costs about 3 us a row: 2 ms for the 800
    chunks a hybrid leg of 200 records used to name).
    Raises:
        DimensionMismatch: the query's dimension differs from the collection's.
    """
    k = CHUNKS_PER_RECORD * limit
    while True:
        seen: list[int] = []  # [distinct records, rows] of the last search
        hits = _ranked(store, collection, vector, k, where, exact, _records_kept(limit, seen))
        records, rows = seen or (limit, 0)
        if records >= limit or rows < k:
            return hits
        # deeper by the crowding seen (chunks per record in this answer), a quarter to spare
        k = max(2 * k, math.ceil(k * limit / max(records, 1) * 1.25))


#: Chunks asked per record wanted, first (a record's chunks crowd each other near the query).
#: 2, not the 4 search.collect asks of chunk-level stores: the graph's candidate list (ef) is
#: at least k, and a hybrid leg of 200 records walked 1.8 ms at k=800 against 0.9 at 400
#: (100k records, 570k chunks); SciFact's nDCG@10 is the same with 2 and 4 (0.7471 hybrid,
#: 0.6869 semantic, int8 model, windows), and a crowded answer is deepened.
CHUNKS_PER_RECORD = 2

#: Picks the positions (into a search's rows) to name and return, given the rows' record rowids.
_Pick = Callable[[NDArray[np.int64]], NDArray[np.int64]]


def _all_rows(rowids: NDArray[np.int64]) -> NDArray[np.int64]:
    return np.arange(len(rowids))


def _records_kept(limit: int, seen: list[int]) -> _Pick:
    """The rows of the first ``limit`` distinct records; ``seen`` gets [records, rows]."""

    def pick(rowids: NDArray[np.int64]) -> NDArray[np.int64]:
        _, first = np.unique(rowids, return_index=True)
        kept = rowids[np.sort(first)[:limit]]
        seen[:] = [len(first), len(rowids)]
        return np.flatnonzero(np.isin(rowids, kept))

    return pick


def _ranked(
    store: SQLiteStore,
    collection: str,
    vector: NDArray[np.float32],
    k: int,
    where: Filter | None,
    exact: bool,
    pick: _Pick,
) -> list[ScoredChunk]:
    """The top-``k`` rows that ``pick`` keeps, named and sorted (score, record id, chunk id);
    searched again on a fresh snapshot when a kept record was deleted after the snapshot."""
    found = store._matrix(collection, upkeep=not exact)
    if found is None:
        return []
    cid, index, state = found
    if state.rows and state.dim != vector.shape[0]:
        raise DimensionMismatch(
            f"query vector is {vector.shape[0]}-d; collection {collection!r} is {state.dim}-d",
            hint="query with the model the collection was built with",
        )
    allowed = None if where is None else filter_key(store, cid, where)
    query = np.ascontiguousarray(vector, dtype=np.float32)
    for attempt in range(4):  # a record deleted (or swapped out) after the snapshot
        rows, scores = index.search(state, query, k, allowed, exact)
        kept = pick(state.record_rowids[rows])
        rows, scores = rows[kept], scores[kept]
        rowids = state.record_rowids[rows]
        names = record_names(store, rowids.tolist())
        if attempt == 3 or all(int(r) in names for r in rowids):
            break
        found = store._matrix(collection, upkeep=not exact)  # the fresh snapshot, searched next
        if found is None:
            return []
        cid, index, state = found
        allowed = None if where is None else filter_key(store, cid, where)
    hits = [
        ScoredChunk(int(c), names[rid], float(s))
        for c, rid, s in zip(
            state.chunk_ids[rows].tolist(), rowids.tolist(), scores.tolist(), strict=True
        )
        if rid in names
    ]
    return sorted(hits, key=lambda h: (-h.score, h.record_id, h.chunk_id))
