"""Plain reads of a ``.embed.db`` file: records, chunks, their vectors, counts and structured find.

Each function takes ``rows`` (:data:`~semsearch.stores.sqlite.sql.Rows`: the store's reader)
and a collection name, reads the last committed snapshot, and returns plain values; a file
that does not exist yet reads as empty. Ids are read in batches of bound parameters
(:func:`~semsearch.stores.sqlite.sql.batches`), filters compiled by
:func:`~semsearch.stores.sqlite.sql.compile_filter`.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from semsearch.filters import Filter
from semsearch.results import Chunk, Record
from semsearch.stores.base import PendingChunk, StoreStats
from semsearch.stores.sqlite.sql import Rows, batches, compile_filter, marks, order_by_sql
from semsearch.stores.sqlite.vector_reads import resolve, slot_column

__all__ = [
    "chunk_vectors",
    "count",
    "find",
    "get_chunks",
    "get_records",
    "list_ids",
    "pending_chunks",
    "record_hashes",
    "stats",
]


def record_hashes(rows: Rows, collection: str, ids: Sequence[str]) -> dict[str, str]:
    """``{id: content_hash}`` for the ids that exist."""
    out: dict[str, str] = {}
    for batch in batches(list(ids)):
        found = rows(
            "SELECT r.id, r.content_hash FROM records r JOIN collections c "
            f"ON c.id = r.collection_id WHERE c.name = ? AND r.id IN ({marks(batch)})",
            (collection, *batch),
        )
        out.update({r[0]: r[1] for r in found})
    return out


def pending_chunks(
    rows: Rows, collection: str, limit: int, where: Filter | None = None
) -> list[PendingChunk]:
    """Up to ``limit`` chunks without a vector, pending before failed, oldest first within
    each; ``where`` limits them to chunks of matching records."""
    from semsearch.chunking import embedding_text

    filter_sql, params = compile_filter(where) if where is not None else ("1", [])
    found = rows(
        "SELECT k.id, k.text, k.heading_path, r.id FROM chunks k JOIN collections c "
        "ON c.id = k.collection_id JOIN records r ON r.rowid = k.record_rowid "
        f"WHERE c.name = ? AND k.status IN ('pending', 'failed') AND ({filter_sql}) "
        "ORDER BY k.status = 'failed', k.id LIMIT ?",  # IN: the status index applies
        (collection, *params, limit),
    )
    return [PendingChunk(r[0], embedding_text(r[1], tuple(json.loads(r[2]))), r[3]) for r in found]


def get_records(rows: Rows, collection: str, ids: Sequence[str]) -> list[Record]:
    """The records that exist among ``ids``, in the order asked."""
    found: dict[str, Record] = {}
    for batch in batches(list(ids)):
        page = rows(
            "SELECT r.id, r.fields, r.text FROM records r JOIN collections c "
            f"ON c.id = r.collection_id WHERE c.name = ? AND r.id IN ({marks(batch)})",
            (collection, *batch),
        )
        found.update({r[0]: Record(r[0], json.loads(r[1]), r[2]) for r in page})
    return [found[i] for i in ids if i in found]


def chunk_vectors(
    conn: sqlite3.Connection, collection: str, ids: Sequence[str]
) -> dict[str, list[NDArray[np.float32] | None]]:
    """Inside a read transaction: stored vectors per record, by chunk ordinal (None where a
    chunk is not embedded): float32[dim], the stored float16 values upcast exactly (float32 in
    files of format 4 and older), each from its inline blob or its slot (vector_blocks.py)."""
    out: dict[str, list[NDArray[np.float32] | None]] = {}
    slot = slot_column(conn)
    for batch in batches(list(ids)):
        found = conn.execute(
            f"SELECT r.id, k.status = 'embedded', k.vector, {slot}, c.dim, c.id FROM chunks k "
            "JOIN records r ON r.rowid = k.record_rowid "
            "JOIN collections c ON c.id = r.collection_id WHERE c.name = ? "
            f"AND r.id IN ({marks(batch)}) ORDER BY r.id, k.ordinal",
            (collection, *batch),
        ).fetchall()
        if not found:
            continue
        dim, cid = int(found[0][4] or 0), int(found[0][5])
        values, ok = resolve(
            conn, cid, dim, [r[2] if r[1] else None for r in found],
            [r[3] if r[1] else None for r in found], np.float32,
        )  # fmt: skip
        for k, row in enumerate(found):
            vector = values[k] if row[1] and ok[k] else None
            out.setdefault(row[0], []).append(vector)
    return out


def get_chunks(rows: Rows, chunk_ids: Sequence[int]) -> dict[int, Chunk]:
    """``{chunk_id: Chunk}`` for the ids that exist."""
    out: dict[int, Chunk] = {}
    for batch in batches([int(c) for c in chunk_ids]):
        found = rows(f"SELECT {_CHUNK_COLUMNS} FROM chunks k WHERE k.id IN ({marks(batch)})", batch)
        out.update((r[0], _chunk(r)) for r in found)
    return out


#: A chunk's columns as :func:`_chunk` reads them (chunks aliased ``k``).
_CHUNK_COLUMNS = (
    "k.id, k.text, k.ordinal, k.char_start, k.char_end, k.heading_path, k.line_start, k.line_end"
)


def _chunk(row: Sequence[Any]) -> Chunk:
    """A :class:`Chunk` from a row starting with :data:`_CHUNK_COLUMNS`."""
    return Chunk(row[1], row[2], row[3], row[4], tuple(json.loads(row[5])), row[6], row[7])


def hit_rows(
    rows: Rows, collection: str, chunk_ids: Sequence[int]
) -> dict[int, tuple[str, Chunk, dict[str, Any]]]:
    """``{chunk id: (record id, chunk, record fields)}`` for the chunks of ``collection`` that
    exist, chunk and record in one statement per batch (the record's text is not read)."""
    out: dict[int, tuple[str, Chunk, dict[str, Any]]] = {}
    for batch in batches([int(c) for c in chunk_ids]):
        found = rows(
            f"SELECT {_CHUNK_COLUMNS}, r.id, r.fields FROM chunks k "
            "JOIN records r ON r.rowid = k.record_rowid JOIN collections c "
            f"ON c.id = r.collection_id WHERE c.name = ? AND k.id IN ({marks(batch)})",
            (collection, *batch),
        )
        out.update((r[0], (r[8], _chunk(r), json.loads(r[9]))) for r in found)
    return out


def list_ids(rows: Rows, collection: str) -> list[str]:
    """Every record id in the collection, sorted."""
    found = rows(
        "SELECT r.id FROM records r JOIN collections c ON c.id = r.collection_id "
        "WHERE c.name = ? ORDER BY r.id",
        (collection,),
    )
    return [r[0] for r in found]


def count(rows: Rows, collection: str) -> int:
    """Number of records."""
    found = rows(
        "SELECT COUNT(*) FROM records r JOIN collections c ON c.id = r.collection_id "
        "WHERE c.name = ?",
        (collection,),
    )
    return int(found[0][0]) if found else 0


def stats(rows: Rows, collection: str, where: Filter | None = None) -> StoreStats:
    """Record and chunk counts by embedding status, and the last write time; ``where``
    counts only matching records and their chunks."""
    filter_sql, params = compile_filter(where) if where is not None else ("1", [])
    found = rows(
        "SELECT k.status, COUNT(*) FROM chunks k JOIN collections c ON c.id = k.collection_id "
        "JOIN records r ON r.rowid = k.record_rowid "
        f"WHERE c.name = ? AND ({filter_sql}) GROUP BY k.status",
        (collection, *params),
    )
    by_status = {r[0]: int(r[1]) for r in found}
    updated = rows("SELECT updated_at FROM collections WHERE name = ?", (collection,))
    records = rows(
        "SELECT COUNT(*) FROM records r JOIN collections c ON c.id = r.collection_id "
        f"WHERE c.name = ? AND ({filter_sql})",
        (collection, *params),
    )
    return StoreStats.from_status_counts(
        int(records[0][0]) if records else 0, by_status, updated[0][0] if updated else None
    )


def find(
    rows: Rows,
    collection: str,
    where: Filter | None,
    limit: int,
    offset: int,
    order_by: Sequence[tuple[str, bool]],
) -> list[Record]:
    """Records matching ``where``, ordered by ``order_by`` then id."""
    filter_sql, params = compile_filter(where) if where is not None else ("1", [])
    found = rows(
        "SELECT r.id, r.fields, r.text FROM records r JOIN collections c "
        f"ON c.id = r.collection_id WHERE c.name = ? AND ({filter_sql}) "
        f"{order_by_sql(order_by)} LIMIT ? OFFSET ?",
        (collection, *params, limit, offset),
    )
    return [Record(r[0], json.loads(r[1]), r[2]) for r in found]
