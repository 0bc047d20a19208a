"""Vector search of the SQLite store: the ANN cache's rows turned into chunks of live records.

The cache (ann/cache.py) answers with row numbers of one snapshot; this module keeps one cache
per collection caught up with the file (:func:`matrix`), gives the cache the filter's allowed
set (stores/sqlite/allowed.py), maps rows to record ids, and searches again on a fresh snapshot
when a record was deleted after the snapshot was taken. It takes the store's connections
(stores/sqlite/connection.py) and its caches, never the store class.
"""

from __future__ import annotations

import math
import sqlite3
import time
from collections.abc import Callable, Sequence
from functools import partial

import numpy as np
from numpy.typing import NDArray

from semsearch.ann.cache import AnnIndex, AnnState
from semsearch.filters import Filter
from semsearch.stores.base import ScoredChunk
from semsearch.stores.query_rules import best_first, check_query_dim
from semsearch.stores.sqlite.allowed import filter_key
from semsearch.stores.sqlite.connection import SQLiteConnections
from semsearch.stores.sqlite.sql import batches, marks
from semsearch.stores.sqlite.vector_reads import resolve, slot_column

__all__ = [
    "VectorCaches",
    "matrix",
    "record_names",
    "stored_vectors",
    "vector_search",
    "vector_search_records",
]

#: One store's vector caches, by collection id.
VectorCaches = dict[int, AnnIndex]


def record_names(db: SQLiteConnections, rowids: Sequence[int]) -> dict[int, str]:
    """``{record rowid: record id}`` for the rowids that still exist (kept between commits:
    a search names the same records again and again)."""

    def read(wanted: list[int]) -> dict[int, str]:
        out: dict[int, str] = {}
        for batch in batches(sorted(wanted)):
            found = db._rows(
                f"SELECT rowid, id FROM records WHERE rowid IN ({marks(batch)})", batch
            )
            out.update({int(r[0]): r[1] for r in found})
        return out

    with db._read_lock:
        return db._names.get_many(db._file_version(), [int(r) for r in rowids], read)


def stored_vectors(
    db: SQLiteConnections, cid: int, chunk_ids: NDArray[np.int64], dim: int
) -> NDArray[np.float32]:
    """float32[len(chunk_ids), dim]: the chunks' stored vectors (float16 upcast), in the order
    asked; zeros for chunks that no longer have one (deleted since the caller's snapshot: the
    search drops their records, see :func:`vector_search`). For an int8 graph's rescoring and
    exact scans (ann/cache.py). One read transaction: slots and blocks agree.
    """
    out = np.zeros((len(chunk_ids), dim), np.float32)
    where: dict[int, list[int]] = {}
    for i, chunk_id in enumerate(chunk_ids.tolist()):
        where.setdefault(int(chunk_id), []).append(i)

    def read(conn: sqlite3.Connection) -> None:
        slot = slot_column(conn)
        for batch in batches(sorted(where)):
            # by id alone (with collection_id in the WHERE the planner may walk the
            # collection's index); an id reused by another collection since the snapshot is
            # dropped here: its slot is not one of ours
            rows = conn.execute(
                f"SELECT id, vector, {slot}, collection_id FROM chunks "
                f"WHERE id IN ({marks(batch)}) AND status = 'embedded'",
                batch,
            ).fetchall()
            found = [r for r in rows if int(r[3]) == cid]
            if found:
                blobs, slots = [r[1] for r in found], [r[2] for r in found]
                values, ok = resolve(conn, cid, dim, blobs, slots, np.float32)
                for k, row in enumerate(found):
                    if ok[k]:
                        out[where[int(row[0])]] = values[k]

    db._in_read_txn(read)
    return out


def cache_for(db: SQLiteConnections, caches: VectorCaches, cid: int) -> AnnIndex:
    """The vector cache of collection ``cid``, made on first use."""
    index = caches.get(cid)
    if index is None:
        fetch = partial(stored_vectors, db, cid)
        index = caches.setdefault(cid, AnnIndex(db.location, cid, fetch))
    return index


def matrix(
    db: SQLiteConnections, caches: VectorCaches, collection: str, upkeep: bool = True
) -> tuple[int, AnnIndex, AnnState] | None:
    """The collection's vector cache, caught up with the file (see ann/cache.py), as
    (collection id, cache, snapshot); None when the collection does not exist.

    ``upkeep=False`` (exact searches) skips building or merging the HNSW graph. The name is
    looked up again when its collection is gone by the time the cache reads it: a swap
    (``replace_collection``) gave the name to another collection meanwhile. When nothing was
    committed to the file since a cache's last refresh (``PRAGMA data_version``, see
    :meth:`~semsearch.ann.cache.AnnIndex.unchanged`), that cache's snapshot is returned as is.
    """
    seen = db._file_version()
    if seen is not None:
        for known, cache in list(caches.items()):
            same = cache.unchanged(seen, collection, upkeep)
            if same is not None:
                return known, cache, same
    for attempt in range(40):  # a swap in between each look-up and read: look again
        rows = db._rows("SELECT id FROM collections WHERE name = ?", (collection,))
        if not rows:
            if attempt >= 2:
                return None
            time.sleep(0.002 * (attempt + 1))  # a swap's commit may be landing: look again
            continue
        cid = int(rows[0][0])
        index = cache_for(db, caches, cid)
        state = index.refresh(db._in_read_txn, upkeep)
        if state is not None:
            return cid, index, state
        # swapped again before the read (reembed in a loop, a loaded machine): back off a
        # little so the swaps cannot win every race
        time.sleep(0.001 * min(attempt, 10))
    return None


def vector_search(
    db: SQLiteConnections,
    caches: VectorCaches,
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
    return _ranked(db, caches, collection, vector, k, where, exact, _all_rows)


def vector_search_records(
    db: SQLiteConnections,
    caches: VectorCaches,
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
        hits = _ranked(db, caches, collection, vector, k, where, exact, _records_kept(limit, seen))
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
    db: SQLiteConnections,
    caches: VectorCaches,
    collection: str,
    vector: NDArray[np.float32],
    k: int,
    where: Filter | None,
    exact: bool,
    pick: _Pick,
) -> list[ScoredChunk]:
    """The top-``k`` rows that ``pick`` keeps, named and sorted (score, record id, chunk id);
    searched again on a fresh snapshot when a kept record was deleted after the snapshot."""
    found = matrix(db, caches, collection, upkeep=not exact)
    if found is None:
        return []
    cid, index, state = found
    if state.rows:
        check_query_dim(collection, state.dim, vector)
    allowed = None if where is None else filter_key(db._rows, cid, where)
    query = np.ascontiguousarray(vector, dtype=np.float32)
    for attempt in range(4):  # a record deleted (or swapped out) after the snapshot
        rows, scores = index.search(state, query, k, allowed, exact)
        kept = pick(state.record_rowids[rows])
        rows, scores = rows[kept], scores[kept]
        rowids = state.record_rowids[rows].tolist()
        names = record_names(db, rowids)
        if attempt == 3 or all(r in names for r in rowids):
            break
        found = matrix(
            db, caches, collection, upkeep=not exact
        )  # the fresh snapshot, searched next
        if found is None:
            return []
        cid, index, state = found
        if state.rows:  # the collection may have been re-embedded with another model meanwhile
            check_query_dim(collection, state.dim, vector)
        allowed = None if where is None else filter_key(db._rows, cid, where)
    hits = [
        ScoredChunk(int(c), names[rid], float(s))
        for c, rid, s in zip(state.chunk_ids[rows].tolist(), rowids, scores.tolist(), strict=True)
        if rid in names
    ]
    return best_first(hits)
