"""Files as an older semsearch wrote them, made from a current one (for migration tests)."""

from __future__ import annotations

import sqlite3
from pathlib import Path


def as_older_format(path: Path, version: int, tables: list[str]) -> None:
    """Turn the SQLite file at ``path`` into format ``version``: drop ``tables`` (those the
    later formats added) and their migration rows, and checkpoint the WAL into the file."""
    conn = sqlite3.connect(path)
    for table in tables:
        conn.execute(f"DROP TABLE IF EXISTS {table}")
    conn.execute("DELETE FROM semsearch_migrations WHERE version > ?", (version,))
    conn.commit()
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
