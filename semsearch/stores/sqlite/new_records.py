"""Batched inserts of new records for the SQLite store's ``write_records``.

A bulk load (an index build, a first ingest) is mostly records the file has never seen. Written
one at a time (writes.py) each costs about seven statements: look-up, insert, record FTS row,
its log row, the vector-by-hash look-up, chunk insert, chunk FTS row. This module writes a run
of new records with a handful of set-based statements instead, and leaves the same rows behind:

- record rowids and chunk ids are the ones SQLite would have picked one insert at a time
  (``MAX + 1`` upwards, in order: neither table is ``AUTOINCREMENT``), given explicitly, so
  the FTS rows can be indexed from the new rows in one ``INSERT ... SELECT`` each;
- vectors are reused by content hash from the collection's embedded chunks as before (a chunk
  of the same run cannot add a candidate: it is embedded only by reusing one of those);
- change-log rows: one ``record_changes`` row per record, one ``changes`` row per reused
  vector (their order within the transaction does not matter to the caches' catch-up).

Only runs of records that are new and distinct qualify (:func:`split_new`); the rest go
through writes.py one at a time, in the caller's order.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator, Sequence

import numpy as np

from semsearch.stores.base import PendingChunk, RecordWrite, WriteResult
from semsearch.stores.sqlite.record_changes import log_records
from semsearch.stores.sqlite.record_fts import BODY_SQL, TITLE_SQL, record_fts_table
from semsearch.stores.sqlite.schema import fts_table, now
from semsearch.stores.sqlite.sql import batches, marks
from semsearch.stores.sqlite.vector_blocks import store_vectors
from semsearch.stores.sqlite.writes import vectors_by_hash

__all__ = ["existing_ids", "insert_new_records", "split_new"]

#: FTS5 pages of merge work after each batch (:func:`_merge_segments`).
MERGE_PAGES = 16
#: ``json.dumps(value, ensure_ascii=False, sort_keys=True)`` (what writes.py stores) without
#: building an encoder per call: a quarter of this module's Python time at 100k records.
_dumps = json.JSONEncoder(ensure_ascii=False, sort_keys=True).encode


def existing_ids(conn: sqlite3.Connection, cid: int, ids: Sequence[str]) -> set[str]:
    """The ids of ``ids`` that name a record of the collection already (batched look-ups)."""
    out: set[str] = set()
    for batch in batches(list(dict.fromkeys(ids))):
        rows = conn.execute(
            f"SELECT id FROM records WHERE collection_id = ? AND id IN ({marks(batch)})",
            (cid, *batch),
        ).fetchall()
        out.update(r[0] for r in rows)
    return out


def split_new(
    records: Sequence[RecordWrite], existing: set[str]
) -> Iterator[tuple[bool, list[RecordWrite]]]:
    """``records`` in order, as runs of (new, run): ``new`` runs hold records whose id is
    neither in the file (``existing``) nor earlier in the sequence; the others one record each."""
    seen: set[str] = set()
    run: list[RecordWrite] = []
    for record in records:
        if record.id in existing or record.id in seen:
            if run:
                yield True, run
                run = []
            yield False, [record]
        else:
            run.append(record)
        seen.add(record.id)
    if run:
        yield True, run


def insert_new_records(
    conn: sqlite3.Connection, cid: int, records: Sequence[RecordWrite], out: WriteResult
) -> None:
    """Insert records that are not in the file (distinct ids) with their chunks and keyword
    rows, inside the caller's write transaction; chunks to embed go to ``out.pending`` in
    order, chunks whose content hash has a vector in the collection reuse it."""
    if not records:
        return
    first_rowid = _next_id(conn, "records", "rowid")
    stamp = now()
    conn.executemany(
        "INSERT INTO records (rowid, collection_id, id, fields, attrs, text, content_hash, "
        "updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        [
            (
                first_rowid + i, cid, r.id, _dumps(r.fields), _dumps(r.attrs), r.text,
                r.content_hash, stamp,
            )
            for i, r in enumerate(records)
        ],
    )  # fmt: skip
    rowids = list(range(first_rowid, first_rowid + len(records)))
    conn.execute(  # the values record_fts.py indexes, computed by SQLite from the new rows
        f"INSERT INTO {record_fts_table(cid)} (rowid, title, body) "
        f"SELECT r.rowid, {TITLE_SQL}, {BODY_SQL} FROM records r WHERE r.rowid >= ? "
        "ORDER BY r.rowid",
        (first_rowid,),
    )
    log_records(conn, cid, rowids)
    _insert_chunks(conn, cid, records, rowids, out)
    _merge_segments(conn, cid)
    out.added += len(records)


def _insert_chunks(
    conn: sqlite3.Connection,
    cid: int,
    records: Sequence[RecordWrite],
    rowids: Sequence[int],
    out: WriteResult,
) -> None:
    reusable = vectors_by_hash(
        conn, cid, sorted({c.content_hash for r in records for c in r.chunks})
    )
    first_id = chunk_id = _next_id(conn, "chunks", "id")
    rows, reused, values = [], [], []
    for record, rowid in zip(records, rowids, strict=True):
        for item in record.chunks:
            chunk = item.chunk
            vector = reusable.get(item.content_hash)
            heading = (
                json.dumps(list(chunk.heading_path), ensure_ascii=False)
                if chunk.heading_path
                else "[]"
            )
            rows.append((
                chunk_id, cid, rowid, chunk.ordinal, chunk.text, chunk.char_start, chunk.char_end,
                heading, chunk.line_start, chunk.line_end, item.content_hash,
                "embedded" if vector is not None else "pending",
            ))  # fmt: skip
            if vector is None:
                out.pending.append(PendingChunk(chunk_id, item.embed_text, record.id))
            else:
                reused.append((cid, chunk_id))
                values.append(vector)
            chunk_id += 1
    if not rows:
        return
    conn.executemany(
        "INSERT INTO chunks (id, collection_id, record_rowid, ordinal, text, char_start, char_end,"
        " heading_path, line_start, line_end, content_hash, status)"
        " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        rows,
    )
    table = fts_table(cid)
    conn.execute(
        f"INSERT INTO {table} (rowid, text) SELECT id, text FROM chunks WHERE id >= ? ORDER BY id",
        (first_id,),
    )
    if values:
        store_vectors(conn, cid, [r[1] for r in reused], np.stack(values))
    conn.executemany(
        "INSERT INTO changes (collection_id, chunk_id, op) VALUES (?, ?, 'add')", reused
    )
    out.reused += len(reused)


def _merge_segments(conn: sqlite3.Connection, cid: int) -> None:
    """A little FTS5 merge work on both keyword tables after a batch.

    One row at a time, FTS5 flushed its pending terms at every statement and did merge work
    each time; a batch flushes once, so without this, segments (and the tombstones of deleted
    rows) pile up: a file deleting and re-adding all its records 20 times grew 1.52x instead
    of 1.32x (tests/ann/test_changes_log.py). ``'merge', 16`` does at most 16 pages of it.
    """
    for table in (fts_table(cid), record_fts_table(cid)):
        conn.execute(f"INSERT INTO {table} ({table}, rank) VALUES ('merge', ?)", (MERGE_PAGES,))


def _next_id(conn: sqlite3.Connection, table: str, key: str) -> int:
    """The id SQLite gives the next row of ``table`` (integer primary key, no AUTOINCREMENT)."""
    row = conn.execute(f"SELECT COALESCE(MAX({key}), 0) FROM {table}").fetchone()
    return int(row[0]) + 1
