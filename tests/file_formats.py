"""Files as an older semsearch wrote them, made from a current one (for migration tests), and
the stored vectors read by hand from the documented layout (docs/storage.md)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

#: Vectors per block in format 6 (docs/storage.md): slot s is row s % 256 of block s // 256.
BLOCK = 256


def stored_blobs(conn: sqlite3.Connection) -> dict[int, bytes]:
    """``{chunk id: the bytes of its stored vector}`` for every embedded chunk: the inline
    ``vector`` blob (format 5 and older), else ``2 * dim`` bytes at row ``slot % 256`` of the
    ``vector_blocks`` row of block ``slot // 256`` (format 6), sliced here by hand."""
    packed = conn.execute(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'vector_blocks'"
    ).fetchone()
    out: dict[int, bytes] = {}
    for cid, dim in conn.execute("SELECT id, dim FROM collections").fetchall():
        size = 2 * int(dim or 0)
        blocks = (
            dict(
                conn.execute(
                    "SELECT block, vectors FROM vector_blocks WHERE collection_id = ?", (cid,)
                ).fetchall()
            )
            if packed
            else {}
        )
        slot_sql = "vector_slot" if packed else "NULL"
        for chunk_id, blob, slot in conn.execute(
            f"SELECT id, vector, {slot_sql} FROM chunks WHERE collection_id = ? "
            "AND status = 'embedded'",
            (cid,),
        ).fetchall():
            if blob is None:
                start = (slot % BLOCK) * size
                blob = blocks[slot // BLOCK][start : start + size]
            out[int(chunk_id)] = bytes(blob)
    return out


def as_older_format(path: Path, version: int, tables: list[str]) -> None:
    """Turn the SQLite file at ``path`` into format ``version``: drop ``tables`` (those the
    later formats added) and their migration rows, and checkpoint the WAL into the file.
    Below format 7 sentence-window vectors go back to float16 blobs (the int8 codes decoded by
    hand: header ``08 7f``, then each row divided by its norm). Below format 6 the vectors go
    back inline into ``chunks.vector`` (read by hand from their
    blocks) and format 6's tables, trigger and column are dropped."""
    conn = sqlite3.connect(path)
    if (
        version < 6
        and conn.execute(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'vector_blocks'"
        ).fetchone()
    ):
        blobs = stored_blobs(conn)
        conn.executemany(
            "UPDATE chunks SET vector = ? WHERE id = ?", [(b, i) for i, b in blobs.items()]
        )
        conn.execute("DROP TRIGGER chunks_free_vector_slot")
        conn.execute("ALTER TABLE chunks DROP COLUMN vector_slot")
        for table in ("vector_blocks", "vector_slots_free", "vector_slots_next"):
            conn.execute(f"DROP TABLE {table}")
    if version < 7 and "chunk_windows" not in tables:
        _float16_windows(conn)
    for table in tables:
        conn.execute(f"DROP TABLE IF EXISTS {table}")
    conn.execute("DELETE FROM semsearch_migrations WHERE version > ?", (version,))
    conn.commit()
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()


def _float16_windows(conn: sqlite3.Connection) -> None:
    """Rewrite every int8 window blob of ``chunk_windows`` as float16[m, dim] (format 6)."""
    import numpy as np

    if not conn.execute(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'chunk_windows'"
    ).fetchone():
        return
    rows = conn.execute("SELECT rowid, spans, vectors FROM chunk_windows").fetchall()
    for rowid, spans, vectors in rows:
        if bytes(vectors[:2]) != b"\x08\x7f":
            continue
        codes = np.frombuffer(vectors[2:], dtype=np.int8).astype(np.float32)
        codes = codes.reshape(len(spans) // 8, -1)
        unit = codes / np.linalg.norm(codes, axis=1, keepdims=True)
        blob = unit.astype("<f2").tobytes()
        conn.execute("UPDATE chunk_windows SET vectors = ? WHERE rowid = ?", (blob, rowid))
