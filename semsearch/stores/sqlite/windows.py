"""Sentence windows in the SQLite file (format 3): one row per chunk content, see
:class:`~semsearch.stores.base.SentenceWindows` and docs/storage.md.

``chunk_windows`` is keyed by (collection, content hash), so chunks that reuse a vector by
hash reuse its windows. The store's record writes and deletes call :func:`prune` with the
hashes the records' chunks had before (:func:`hashes_of`): rows that no chunk holds any more
go, in the same transaction. (Not a trigger on chunk deletes: a rewritten record's chunks are
deleted before their replacements, which reuse the same hashes, are inserted.) Dropping a
collection deletes its rows. Files of format 2 have no such table until their first write
migrates them; their reads find no windows.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from semsearch.stores.base import WindowSet
from semsearch.stores.sqlite.sql import batches, marks
from semsearch.stores.window_blobs import pack_windows, unpack_many

__all__ = ["TABLE", "create_window_table", "hashes_of", "prune", "read_windows", "write_windows"]

TABLE = "chunk_windows"


def create_window_table(conn: sqlite3.Connection) -> None:
    """Format 3 (a migration, inside its transaction): the windows table."""
    conn.execute(
        f"CREATE TABLE IF NOT EXISTS {TABLE} ("
        "collection_id INTEGER NOT NULL REFERENCES collections(id), "
        "content_hash TEXT NOT NULL, "  # the chunks' sha256 of their embedded text
        "spans BLOB NOT NULL, "  # int32[m, 2] little-endian: offsets into the chunk's text
        "vectors BLOB NOT NULL, "  # float16[m, dim] little-endian, unit vectors
        "PRIMARY KEY (collection_id, content_hash))"
    )


def write_windows(conn: sqlite3.Connection, cid: int, windows: Mapping[int, WindowSet]) -> None:
    """Inside a write transaction: store each chunk's windows under its content hash (a chunk
    id that no longer exists writes nothing)."""
    conn.executemany(
        f"INSERT INTO {TABLE} (collection_id, content_hash, spans, vectors) "
        "SELECT collection_id, content_hash, ?, ? FROM chunks WHERE id = ? AND collection_id = ? "
        "ON CONFLICT (collection_id, content_hash) DO UPDATE "
        "SET spans = excluded.spans, vectors = excluded.vectors",
        [(*pack_windows(w), int(chunk_id), cid) for chunk_id, w in windows.items()],
    )


def read_windows(
    rows: Callable[[str, Sequence[Any]], list[Any]], collection: str, chunk_ids: Sequence[int]
) -> dict[int, WindowSet]:
    """``{chunk id: WindowSet}`` of the chunks that have windows; {} on a format-2 file.

    ``rows(sql, params)`` runs a read on the store's reader connection.
    """
    if not rows("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (TABLE,)):
        return {}
    out: dict[int, WindowSet] = {}
    for batch in batches([int(c) for c in chunk_ids]):
        # ``+k.collection_id``: the chunks are found by id; with sampled statistics SQLite
        # otherwise walked chunks_by_hash for the whole collection (85 ms at 570k chunks)
        found = rows(
            f"SELECT k.id, w.spans, w.vectors FROM chunks k "
            "JOIN collections c ON c.id = +k.collection_id "
            f"JOIN {TABLE} w ON w.collection_id = k.collection_id "
            "AND w.content_hash = k.content_hash "
            f"WHERE c.name = ? AND k.id IN ({marks(batch)})",
            (collection, *batch),
        )
        out.update(unpack_many(found))
    return out


def hashes_of(conn: sqlite3.Connection, cid: int, record_ids: Sequence[str]) -> set[str]:
    """Inside a write transaction: the content hashes of the records' chunks."""
    out: set[str] = set()
    for batch in batches(list(record_ids)):
        rows = conn.execute(
            "SELECT k.content_hash FROM chunks k JOIN records r ON r.rowid = k.record_rowid "
            f"WHERE r.collection_id = ? AND r.id IN ({marks(batch)})",
            (cid, *batch),
        ).fetchall()
        out.update(r[0] for r in rows)
    return out


def prune(conn: sqlite3.Connection, cid: int, hashes: set[str]) -> None:
    """Inside a write transaction: delete the windows of ``hashes`` that no chunk of the
    collection holds any more."""
    for batch in batches(sorted(hashes)):
        conn.execute(
            f"DELETE FROM {TABLE} WHERE collection_id = ? AND content_hash IN ({marks(batch)}) "
            "AND NOT EXISTS (SELECT 1 FROM chunks k INDEXED BY chunks_by_hash "
            f"WHERE k.collection_id = {TABLE}.collection_id "
            f"AND k.content_hash = {TABLE}.content_hash)",
            (cid, *batch),
        )
