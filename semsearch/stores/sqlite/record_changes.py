"""The record change log of a ``.embed.db`` file (format 4), for the keyword sidecar's catch-up.

Every change to a collection's record-level FTS5 table (stores/sqlite/record_fts.py: a record
indexed after its insert or update, or removed before its update or delete) appends
``(seq, collection id, record rowid)`` to ``record_changes`` in the same transaction. A keyword
sidecar built at log position ``S`` learns which records changed since by reading the rows
after ``S`` (:func:`changed_since`), and rescores only those (bm25/delta.py) instead
of re-reading the whole collection.

Pruning, as for the vector log (stores/sqlite/changes.py): once :data:`PRUNE_AFTER` rows were
written since a collection's last prune, its rows up to a *horizon* are deleted and the horizon
is kept in ``semsearch_meta`` (``record_changes_pruned:<C>``). The horizon never passes the
position of the collection's ``.kw`` file, so any process can load that file and catch up from
it; a snapshot older than the horizon reloads the file (or rebuilds). So that churn without
keyword searches keeps the log bounded too, the store rewrites a file that holds a prune back by
:data:`PRUNE_AFTER` rows (in the background, after that write), and ``semsearch compact``
rewrites every file behind the log before it prunes (stores/sqlite/keyword_leg.py). Files
written before format 4 have no log: their sidecar is rebuilt after every write, as before. The
``.kw`` file's position is the sidecar's to read (bm25/file.py): the store passes it in as a
:data:`~semsearch.stores.sqlite.changes.Horizon`.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence

import numpy as np
from numpy.typing import NDArray

from semsearch.stores.sqlite import changes as sqlite_changes
from semsearch.stores.sqlite.changes import Horizon
from semsearch.stores.sqlite.sql import Rows

__all__ = [
    "LOG",
    "PRUNE_AFTER",
    "changed_since",
    "create_record_log",
    "log_records",
    "maybe_prune",
    "position",
    "prune_all",
]

LOG = "record_changes"
#: Log rows written for a collection since its last prune before it is pruned again.
PRUNE_AFTER = 4096


def create_record_log(conn: sqlite3.Connection) -> None:
    """Format 4: the ``record_changes`` table (a migration, write path only)."""
    conn.execute(
        f"CREATE TABLE IF NOT EXISTS {LOG} (seq INTEGER PRIMARY KEY AUTOINCREMENT, "
        "collection_id INTEGER NOT NULL, record_rowid INTEGER NOT NULL)"
    )
    conn.execute(f"CREATE INDEX IF NOT EXISTS {LOG}_by_collection ON {LOG} (collection_id, seq)")


def log_records(conn: sqlite3.Connection, cid: int, rowids: Sequence[int]) -> None:
    """Inside a write transaction: note that these records' keyword rows changed."""
    conn.executemany(
        f"INSERT INTO {LOG} (collection_id, record_rowid) VALUES (?, ?)",
        [(cid, int(r)) for r in rowids],
    )


def _rows_of(conn: sqlite3.Connection) -> Rows:
    return lambda sql, params: conn.execute(sql, params).fetchall()


def position(rows: Rows, cid: int) -> int | None:
    """The collection's log position (its last ``seq``, or its horizon when every row was
    pruned; 0 before its first change), None for a file without the log (before format 4)."""
    found = rows(
        "SELECT EXISTS (SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?)", (LOG,)
    )
    if not found[0][0]:
        return None
    last = rows(
        f"SELECT (SELECT max(seq) FROM {LOG} WHERE collection_id = ?), "
        "(SELECT CAST(value AS INTEGER) FROM semsearch_meta WHERE key = ?)",
        (cid, f"{LOG}_pruned:{int(cid)}"),
    )[0]
    return max(int(last[0] or 0), int(last[1] or 0))


def changed_since(rows: Rows, cid: int, seq: int) -> NDArray[np.int64] | None:
    """Rowids of the records whose keyword rows changed after log position ``seq``
    (ascending, each once), or None when rows after ``seq`` may have been pruned (the caller
    reloads or rebuilds)."""
    horizon = rows(
        "SELECT CAST(value AS INTEGER) FROM semsearch_meta WHERE key = ?",
        (f"{LOG}_pruned:{int(cid)}",),
    )
    if horizon and int(horizon[0][0] or 0) > seq:
        return None
    found = rows(
        f"SELECT DISTINCT record_rowid FROM {LOG} WHERE collection_id = ? AND seq > ? "
        "ORDER BY record_rowid",
        (cid, seq),
    )
    return np.fromiter((r[0] for r in found), np.int64, len(found))


def maybe_prune(conn: sqlite3.Connection, cid: int, safe: Horizon) -> int | None:
    """Inside a write transaction: prune the collection's rows once :data:`PRUNE_AFTER` were
    written since its last prune, as far as ``safe`` allows (the ``.kw`` file's position).

    Returns:
        The log's position when :data:`PRUNE_AFTER` rows or more are still kept after the
        prune: the ``.kw`` file held it back, so the caller rewrites the file (the next prune
        then passes it). None otherwise.
    """
    top = position(_rows_of(conn), cid) or 0
    if top - sqlite_changes.pruned_to(conn, cid, LOG) < PRUNE_AFTER:
        return None
    _prune(conn, cid, top, safe)
    return top if top - sqlite_changes.pruned_to(conn, cid, LOG) >= PRUNE_AFTER else None


def _prune(conn: sqlite3.Connection, cid: int, top: int, safe: Horizon) -> int:
    horizon = safe(cid, top)
    if horizon is None or horizon <= sqlite_changes.pruned_to(conn, cid, LOG):
        return 0
    deleted = conn.execute(
        f"DELETE FROM {LOG} WHERE collection_id = ? AND seq <= ?", (cid, horizon)
    ).rowcount
    sqlite_changes.store_horizon(conn, cid, horizon, LOG)
    return int(deleted)


def prune_all(conn: sqlite3.Connection, safe: Horizon) -> int:
    """Inside a write transaction (``semsearch compact``): prune every collection as far as
    ``safe`` (its ``.kw`` file) allows and drop the rows of collections that no longer exist.
    Returns the rows deleted; 0 for a file without the log."""
    if position(_rows_of(conn), 0) is None:
        return 0
    ids = [int(r[0]) for r in conn.execute("SELECT id FROM collections")]
    deleted = sum(_prune(conn, cid, position(_rows_of(conn), cid) or 0, safe) for cid in ids)
    deleted += conn.execute(
        f"DELETE FROM {LOG} WHERE collection_id NOT IN (SELECT id FROM collections)"
    ).rowcount
    return int(deleted)
