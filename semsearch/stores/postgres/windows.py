"""Sentence windows in PostgreSQL: one table per collection, ``semsearch_c<id>_windows``.

Keyed by the chunks' ``content_hash`` (chunks that reuse a vector by hash reuse its windows),
with the blobs of :mod:`semsearch.stores.window_blobs` in ``bytea`` columns. The table and a
statement-level trigger on the chunks table, which drops windows whose content no embedded
chunk holds any more, are created by the first write of windows; collections made before
windows existed have no table, and their reads find none.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from semsearch.stores.base import WindowSet
from semsearch.stores.postgres.sql import Tables
from semsearch.stores.window_blobs import pack_windows, unpack_many

__all__ = ["drop_window_table", "read_sql", "unpack_rows", "write_windows"]


def _table(t: Tables) -> str:
    return f"semsearch_c{int(t.cid)}_windows"


def _ensure_table(conn: Any, t: Tables) -> None:
    """Create the windows table and its clean-up trigger unless they exist (inside a write)."""
    table = _table(t)
    if conn.execute("SELECT to_regclass(%s)", (table,)).fetchone()[0] is not None:
        return
    conn.execute(
        f"CREATE TABLE IF NOT EXISTS {table} (content_hash text PRIMARY KEY, "
        "spans bytea NOT NULL, vectors bytea NOT NULL)"
    )
    conn.execute(
        f"CREATE OR REPLACE FUNCTION {table}_gc() RETURNS trigger LANGUAGE plpgsql AS $$ "
        f"BEGIN DELETE FROM {table} w WHERE w.content_hash IN "
        "(SELECT DISTINCT content_hash FROM gone) AND NOT EXISTS "
        f"(SELECT 1 FROM {t.chunks} k WHERE k.content_hash = w.content_hash "
        "AND k.status = 'embedded'); RETURN NULL; END $$"
    )
    conn.execute(
        f"CREATE TRIGGER {table}_gc AFTER DELETE ON {t.chunks} REFERENCING OLD TABLE AS gone "
        f"FOR EACH STATEMENT EXECUTE FUNCTION {table}_gc()"
    )


def write_windows(conn: Any, t: Tables, windows: Mapping[int, WindowSet]) -> None:
    """Inside a write transaction: store each chunk's windows under its content hash (a chunk
    id that no longer exists writes nothing)."""
    _ensure_table(conn, t)
    with conn.cursor() as cur:
        cur.executemany(
            f"INSERT INTO {_table(t)} (content_hash, spans, vectors) "
            f"SELECT content_hash, %s, %s FROM {t.chunks} WHERE id = %s "
            "ON CONFLICT (content_hash) DO UPDATE "
            "SET spans = EXCLUDED.spans, vectors = EXCLUDED.vectors",
            [(*pack_windows(w), int(chunk_id)) for chunk_id, w in windows.items()],
        )


def read_sql(t: Tables) -> str:
    """The query of the chunks' windows; one parameter, the chunk ids (a list)."""
    return (
        f"SELECT k.id, w.spans, w.vectors FROM {t.chunks} k JOIN {_table(t)} w "
        "ON w.content_hash = k.content_hash WHERE k.id = ANY(%s)"
    )


def unpack_rows(rows: Sequence[Any]) -> dict[int, WindowSet]:
    """``{chunk id: WindowSet}`` from the rows of :func:`read_sql`."""
    return unpack_many((int(r[0]), bytes(r[1]), bytes(r[2])) for r in rows)


def drop_window_table(conn: Any, t: Tables) -> None:
    """Drop the windows table and its trigger function (with the collection's tables)."""
    conn.execute(f"DROP TABLE IF EXISTS {_table(t)}")
    conn.execute(f"DROP FUNCTION IF EXISTS {_table(t)}_gc() CASCADE")
