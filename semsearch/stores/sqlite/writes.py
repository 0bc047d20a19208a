"""Row-level write helpers for the SQLite store, run inside its write transaction.

A record whose content hash is unchanged is left alone. A changed record keeps its chunk rows
when only non-text fields changed; otherwise its chunks are replaced, and every new chunk whose
content hash already has a vector in the collection reuses it instead of being re-embedded.
Vectors are written as float16 into their chunk's slot of the collection's vector blocks
(vector_blocks.py) and each one is logged in ``changes`` for the vector caches to catch up
from (changes.py).
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence

import numpy as np
from numpy.typing import NDArray

from semsearch.stores.base import PendingChunk, RecordWrite, WriteResult
from semsearch.stores.sqlite.record_fts import delete_record_fts, index_record_fts
from semsearch.stores.sqlite.schema import fts_table, now
from semsearch.stores.sqlite.sql import batches, marks
from semsearch.stores.sqlite.vector_blocks import (
    BLOCK,
    clear_slots,
    release_empty_blocks,
    store_vectors,
)
from semsearch.stores.sqlite.vector_reads import resolve
from semsearch.stores.write_rules import check_vectors_dim, chunk_key

__all__ = ["delete_record_rows", "vectors_by_hash", "write_record", "write_vectors"]


def write_record(conn: sqlite3.Connection, cid: int, record: RecordWrite, out: WriteResult) -> None:
    """Insert or update one record and its chunks; append chunks to embed to ``out.pending``."""
    row = conn.execute(
        "SELECT rowid, content_hash FROM records WHERE collection_id = ? AND id = ?",
        (cid, record.id),
    ).fetchone()
    if row is not None and row[1] == record.content_hash:
        out.unchanged += 1
        return
    values = (
        json.dumps(record.fields, ensure_ascii=False, sort_keys=True),
        json.dumps(record.attrs, ensure_ascii=False, sort_keys=True),
        record.text,
        record.content_hash,
        now(),
    )
    if row is None:
        cur = conn.execute(
            "INSERT INTO records (collection_id, id, fields, attrs, text, content_hash, updated_at)"
            " VALUES (?, ?, ?, ?, ?, ?, ?)",
            (cid, record.id, *values),
        )
        rowid = int(cur.lastrowid or 0)
        out.added += 1
    else:
        rowid = int(row[0])
        delete_record_fts(conn, cid, [rowid])  # before the row changes: see record_fts.py
        conn.execute(
            "UPDATE records SET fields = ?, attrs = ?, text = ?, content_hash = ?, updated_at = ? "
            "WHERE rowid = ?",
            (*values, rowid),
        )
        out.updated += 1
    index_record_fts(conn, cid, rowid)
    if row is None or not _same_chunks(conn, rowid, record):
        _replace_chunks(conn, cid, rowid, record, out, new=row is None)


def _same_chunks(conn: sqlite3.Connection, rowid: int, record: RecordWrite) -> bool:
    rows = conn.execute(
        "SELECT content_hash, ordinal, char_start, char_end, line_start, line_end FROM chunks "
        "WHERE record_rowid = ? ORDER BY ordinal",
        (rowid,),
    ).fetchall()
    return [tuple(r) for r in rows] == chunk_key(record)


def _replace_chunks(
    conn: sqlite3.Connection,
    cid: int,
    rowid: int,
    record: RecordWrite,
    out: WriteResult,
    new: bool,
) -> None:
    hashes = list({c.content_hash for c in record.chunks})
    reusable = vectors_by_hash(conn, cid, hashes)
    if not new:  # a new record has no chunks yet: three statements saved per record
        _delete_chunks(conn, cid, "record_rowid = ?", [rowid])
    table = fts_table(cid)
    reused: list[tuple[int, NDArray[np.float16]]] = []
    for item in record.chunks:
        chunk = item.chunk
        vector = reusable.get(item.content_hash)
        cur = conn.execute(
            "INSERT INTO chunks (collection_id, record_rowid, ordinal, text, char_start, char_end,"
            " heading_path, line_start, line_end, content_hash, status)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                cid, rowid, chunk.ordinal, chunk.text, chunk.char_start, chunk.char_end,
                json.dumps(list(chunk.heading_path), ensure_ascii=False), chunk.line_start,
                chunk.line_end, item.content_hash,
                "embedded" if vector is not None else "pending",
            ),
        )  # fmt: skip
        chunk_id = int(cur.lastrowid or 0)
        conn.execute(f"INSERT INTO {table} (rowid, text) VALUES (?, ?)", (chunk_id, chunk.text))
        if vector is None:
            out.pending.append(PendingChunk(chunk_id, item.embed_text, record.id))
        else:
            out.reused += 1
            reused.append((chunk_id, vector))
            conn.execute(
                "INSERT INTO changes (collection_id, chunk_id, op) VALUES (?, ?, 'add')",
                (cid, chunk_id),
            )
    if reused:
        store_vectors(conn, cid, [r[0] for r in reused], np.stack([r[1] for r in reused]))


def vectors_by_hash(
    conn: sqlite3.Connection, cid: int, hashes: Sequence[str]
) -> dict[str, NDArray[np.float16]]:
    """Inside a write transaction: ``{content hash: float16[dim] stored vector}`` of the
    collection's embedded chunks with these hashes (vectors a write may reuse)."""
    found: dict[str, NDArray[np.float16]] = {}
    dim = 0
    for batch in batches(list(hashes)):
        rows = conn.execute(
            # INDEXED BY: the planner otherwise picks chunks_by_status and scans every embedded
            # chunk once per written record (quadratic re-ingest).
            "SELECT content_hash, vector, vector_slot FROM chunks INDEXED BY chunks_by_hash "
            f"WHERE collection_id = ? AND content_hash IN ({marks(batch)}) AND status = 'embedded'",
            (cid, *batch),
        ).fetchall()
        if not rows:
            continue
        dim = dim or int(
            conn.execute("SELECT dim FROM collections WHERE id = ?", (cid,)).fetchone()[0] or 0
        )
        values, ok = resolve(conn, cid, dim, [r[1] for r in rows], [r[2] for r in rows])
        found.update({r[0]: values[i] for i, r in enumerate(rows) if ok[i]})
    return found


def _delete_chunks(conn: sqlite3.Connection, cid: int, where: str, params: list[object]) -> None:
    table = fts_table(cid)
    # External-content FTS5 rows are removed with the 'delete' command and their indexed text.
    conn.execute(
        f"INSERT INTO {table} ({table}, rowid, text) SELECT 'delete', id, text FROM chunks "
        f"WHERE {where}",
        params,
    )
    conn.execute(
        "INSERT INTO changes (collection_id, chunk_id, op) SELECT collection_id, id, 'delete' "
        f"FROM chunks WHERE {where} AND status = 'embedded'",
        params,
    )
    slots = [
        int(r[0])
        for r in conn.execute(
            f"SELECT vector_slot FROM chunks WHERE {where} AND vector_slot IS NOT NULL", params
        )
    ]
    conn.execute(f"DELETE FROM chunks WHERE {where}", params)  # a trigger frees their slots
    if slots:
        release_empty_blocks(conn, cid, {s // BLOCK for s in slots})
        clear_slots(conn, cid, slots)  # no copy of a deleted vector stays in a kept block


def delete_record_rows(conn: sqlite3.Connection, cid: int, ids: list[str]) -> int:
    """Delete records by id with their chunks and FTS rows. Returns how many existed."""
    marks = ", ".join("?" for _ in ids)
    rowids = [
        r[0]
        for r in conn.execute(
            f"SELECT rowid FROM records WHERE collection_id = ? AND id IN ({marks})", (cid, *ids)
        ).fetchall()
    ]
    if not rowids:
        return 0
    rmarks = ", ".join("?" for _ in rowids)
    _delete_chunks(conn, cid, f"record_rowid IN ({rmarks})", list(rowids))
    delete_record_fts(conn, cid, rowids)
    conn.execute(f"DELETE FROM records WHERE rowid IN ({rmarks})", rowids)
    return len(rowids)


def write_vectors(
    conn: sqlite3.Connection,
    cid: int,
    collection: str,
    chunk_ids: Sequence[int],
    vectors: NDArray[np.float32],
) -> None:
    """Store float32[n, dim] unit vectors of chunks (as float16, in their slots) and log them;
    the first vectors fix the collection's dim.

    Raises:
        DimensionMismatch: the collection holds vectors of another dim.
    """
    dim = int(vectors.shape[1])
    stored = conn.execute("SELECT dim FROM collections WHERE id = ?", (cid,))
    stored_dim = stored.fetchone()[0]
    check_vectors_dim(collection, stored_dim, dim)
    if stored_dim is None:
        conn.execute("UPDATE collections SET dim = ? WHERE name = ?", (dim, collection))
    store_vectors(conn, cid, chunk_ids, vectors)  # float16, in slots (vector_blocks.py)
    conn.executemany(
        "INSERT INTO changes (collection_id, chunk_id, op) VALUES (?, ?, 'add')",
        [(cid, int(c)) for c in chunk_ids],
    )
