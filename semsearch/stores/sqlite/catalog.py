"""The ``collections`` table of a ``.embed.db`` file: create, change, drop and swap collections.

Each function runs on one connection inside the caller's transaction (the store's write
transaction, or its reader for :func:`list_collections`); creating or dropping a collection
also creates or drops its per-collection objects (FTS5 tables, field indexes: schema.py). The
store evicts the dropped collections' derived caches afterwards.
"""

from __future__ import annotations

import json
import sqlite3
from datetime import UTC, datetime
from typing import Any

from semsearch.stores.base import CollectionInfo
from semsearch.stores.sqlite import schema as ddl
from semsearch.stores.sqlite import windows as sqlite_windows
from semsearch.stores.sqlite.vector_blocks import drop_collection_blocks

__all__ = ["create", "drop_rows", "list_collections", "options_of", "rename_over", "update"]


def _fields(schema_json: str) -> list[str]:
    return [f["name"] for f in json.loads(schema_json)["fields"]]


_COLUMNS = "name, schema, model_id, dim, options, created_at"


def list_collections(conn: sqlite3.Connection) -> list[CollectionInfo]:
    """Every collection in the file, by name (none in a file not migrated yet)."""
    if ddl.schema_version(conn) == 0:
        return []
    rows = conn.execute(f"SELECT {_COLUMNS} FROM collections ORDER BY name").fetchall()
    return [CollectionInfo(r[0], r[1], r[2], r[3], json.loads(r[4]), r[5]) for r in rows]


def get_collection(conn: sqlite3.Connection, name: str) -> CollectionInfo | None:
    """The collection called ``name``, or None (also in a file not migrated yet)."""
    if ddl.schema_version(conn) == 0:
        return None
    r = conn.execute(f"SELECT {_COLUMNS} FROM collections WHERE name = ?", (name,)).fetchone()
    return None if r is None else CollectionInfo(r[0], r[1], r[2], r[3], json.loads(r[4]), r[5])


def create(conn: sqlite3.Connection, info: CollectionInfo) -> None:
    """Create a collection with its FTS5 table and field indexes; a collection of that name
    created first by another process is kept."""
    cid = ddl.next_collection_id(conn)
    cur = conn.execute(
        "INSERT INTO collections (id, name, schema, model_id, dim, options, created_at) "
        "VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (name) DO NOTHING",
        (
            cid,
            info.name,
            info.schema_json,
            info.model_id,
            info.dim,
            json.dumps(info.options),
            # microseconds: derived caches tell two collections apart by this stamp
            datetime.now(UTC).isoformat(timespec="microseconds"),
        ),
    )
    if cur.rowcount == 1:  # else another process created it first: keep theirs
        ddl.create_collection_objects(conn, cid, _fields(info.schema_json))


def options_of(conn: sqlite3.Connection, cid: int) -> dict[str, Any]:
    """The options object of collection ``cid`` (empty when it is gone)."""
    row = conn.execute("SELECT options FROM collections WHERE id = ?", (cid,)).fetchone()
    return dict(json.loads(row[0] or "{}")) if row else {}


def update(conn: sqlite3.Connection, cid: int, info: CollectionInfo) -> None:
    """Store a changed schema (added fields, with their indexes), dim or options."""
    conn.execute(
        "UPDATE collections SET schema = ?, dim = ?, options = ? WHERE name = ?",
        (info.schema_json, info.dim, json.dumps(info.options), info.name),
    )
    ddl.create_collection_objects(conn, cid, _fields(info.schema_json))


def drop_rows(conn: sqlite3.Connection, name: str) -> int | None:
    """Inside a write transaction: delete a collection's rows and objects; returns its id,
    or None when it does not exist (read in this transaction: another connection may have
    dropped or re-created it since the caller looked)."""
    row = conn.execute("SELECT id, schema FROM collections WHERE name = ?", (name,)).fetchone()
    if row is None:
        return None
    cid = int(row[0])
    ddl.drop_collection_objects(conn, cid, _fields(row[1]))
    drop_collection_blocks(conn, cid)  # first: then deleting its chunks frees no slots
    for table in ("changes", sqlite_windows.TABLE, "chunks", "records"):
        conn.execute(f"DELETE FROM {table} WHERE collection_id = ?", (cid,))
    conn.execute("DELETE FROM collections WHERE id = ?", (cid,))
    return cid


def rename_over(
    conn: sqlite3.Connection, source_id: int, target: str, expected_version: int | None
) -> tuple[bool, int | None]:
    """Inside a write transaction: drop ``target`` (if it exists) and give its name to the
    collection ``source_id``. With ``expected_version``, nothing changes when ``target``'s
    change counter differs (it was written since). Returns (done, the dropped target's id)."""
    if expected_version is not None:
        row = conn.execute("SELECT version FROM collections WHERE name = ?", (target,))
        found = row.fetchone()
        if found is None or int(found[0]) != expected_version:
            return False, None
    old_id = drop_rows(conn, target)
    conn.execute(
        "UPDATE collections SET name = ?, version = version + 1, updated_at = ? WHERE id = ?",
        (target, ddl.now(), source_id),
    )
    return True, old_id
