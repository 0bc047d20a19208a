"""Sentence windows in the SQLite file (format 3): one row per chunk content, see
:class:`~semsearch.stores.base.SentenceWindows` and docs/storage.md.

``chunk_windows`` is keyed by (collection, content hash), so chunks that reuse a vector by
hash reuse its windows. A trigger drops a row when the last chunk with its hash is deleted
(its record deleted or rewritten, its collection dropped). Files of format 2 have no such
table until their first write migrates them; their reads find no windows.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from semsearch.stores.base import WindowSet
from semsearch.stores.sqlite_sql import batches, marks
from semsearch.stores.window_blobs import pack_windows, unpack_windows

__all__ = ["TABLE", "create_window_table", "read_windows", "write_windows"]

TABLE = "chunk_windows"

_TRIGGER = f"""
CREATE TRIGGER IF NOT EXISTS {TABLE}_gc AFTER DELETE ON chunks
WHEN NOT EXISTS (SELECT 1 FROM chunks WHERE collection_id = OLD.collection_id
                 AND content_hash = OLD.content_hash)
BEGIN
    DELETE FROM {TABLE} WHERE collection_id = OLD.collection_id
        AND content_hash = OLD.content_hash;
END
"""


def create_window_table(conn: sqlite3.Connection) -> None:
    """Format 3 (a migration, inside its transaction): the windows table and its trigger."""
    conn.execute(
        f"CREATE TABLE IF NOT EXISTS {TABLE} ("
        "collection_id INTEGER NOT NULL REFERENCES collections(id), "
        "content_hash TEXT NOT NULL, "  # the chunks' sha256 of their embedded text
        "spans BLOB NOT NULL, "  # int32[m, 2] little-endian: offsets into the chunk's text
        "vectors BLOB NOT NULL, "  # float16[m, dim] little-endian, unit vectors
        "PRIMARY KEY (collection_id, content_hash))"
    )
    conn.execute(_TRIGGER)


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
        found = rows(
            f"SELECT k.id, w.spans, w.vectors FROM chunks k "
            "JOIN collections c ON c.id = k.collection_id "
            f"JOIN {TABLE} w ON w.collection_id = k.collection_id "
            "AND w.content_hash = k.content_hash "
            f"WHERE c.name = ? AND k.id IN ({marks(batch)})",
            (collection, *batch),
        )
        out.update({int(r[0]): unpack_windows(r[1], r[2]) for r in found})
    return out
