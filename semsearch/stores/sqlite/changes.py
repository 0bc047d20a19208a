"""Pruning the ``changes`` log of a ``.embed.db`` file, safely for every process reading it.

The log (``seq``, collection, chunk, add/delete) tells derived vector caches (ann/cache.py)
which chunks moved since the snapshot they hold. Rows are only needed by caches that are
behind them, so they are deleted up to a per-collection *horizon*, and the horizon is stored
in ``semsearch_meta`` (``changes_pruned:<collection id>``). A cache of any process whose last
position is below the horizon can no longer catch up from the log: it reloads instead (its
sidecar, then the log after it), in the same read transaction that reads the horizon
(:func:`pruned_to`), so it never misses a deletion.

The horizon never passes the position of the collection's sidecar file, so a process opening
the sidecar can always catch up from it. A collection with an in-memory graph and no sidecar
(``persist`` off, or a folder the sidecar cannot be written to) is pruned only below its
graph threshold: above it, every other process would rebuild its graph. Those rules belong to
the caches (ann/horizon.py, and bm25/file.py for the record log): the store passes them in as a
:data:`Horizon`, so this module never imports the caches built on it.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable

__all__ = [
    "PRUNE_AFTER",
    "Horizon",
    "data_version",
    "high_water",
    "maybe_prune",
    "prune",
    "prune_all",
    "pruned_to",
    "store_horizon",
]

#: Log rows written (any collection) since a collection's last prune before it is pruned again.
PRUNE_AFTER = 4096

#: How far the derived cache of a collection lets its log be pruned: called with the collection
#: id and the log's last ``seq``, it returns a horizon (at most that ``seq``: the position of
#: the cache's file, or the ``seq`` itself when no reader needs the rows), or None when nothing
#: may be pruned. The store passes the cache's own rule (ann/horizon.py, bm25/file.py).
Horizon = Callable[[int, int], int | None]


def _key(cid: int, log: str = "changes") -> str:
    return f"{log}_pruned:{int(cid)}"


def data_version(conn: sqlite3.Connection) -> int:
    """``PRAGMA data_version`` of ``conn``: it changes when another connection, of this or any
    other process, commits to the file, and never otherwise (not for ``conn``'s own commits:
    compare it only on a connection that never writes). Inside a read transaction it names
    the snapshot that transaction reads; outside one it costs about 2 us."""
    return int(conn.execute("PRAGMA data_version").fetchone()[0])


def high_water(conn: sqlite3.Connection) -> int:
    """The last ``seq`` ever given (AUTOINCREMENT's high-water mark, kept when rows are
    deleted), 0 before the first change."""
    row = conn.execute("SELECT seq FROM sqlite_sequence WHERE name = 'changes'").fetchone()
    return int(row[0]) if row else 0


def pruned_to(conn: sqlite3.Connection, cid: int, log: str = "changes") -> int:
    """The collection's horizon in the log table ``log`` (``changes``, or ``record_changes``:
    stores/sqlite/record_changes.py): rows with ``seq`` <= it may be gone (0: none pruned)."""
    row = conn.execute(
        "SELECT value FROM semsearch_meta WHERE key = ?", (_key(cid, log),)
    ).fetchone()
    return int(row[0]) if row else 0


def store_horizon(conn: sqlite3.Connection, cid: int, horizon: int, log: str = "changes") -> None:
    """Inside a write transaction: record that ``log``'s rows of the collection up to
    ``horizon`` may be gone."""
    conn.execute(
        "INSERT INTO semsearch_meta (key, value) VALUES (?, ?) "
        "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
        (_key(cid, log), str(horizon)),
    )


def maybe_prune(conn: sqlite3.Connection, cid: int, safe: Horizon) -> int:
    """Inside a write transaction: prune the collection's log once ``PRUNE_AFTER`` rows were
    written since its last prune. Returns the rows deleted."""
    if high_water(conn) - pruned_to(conn, cid) < PRUNE_AFTER:
        return 0
    return prune(conn, cid, safe)


def prune(conn: sqlite3.Connection, cid: int, safe: Horizon) -> int:
    """Inside a write transaction: delete the collection's log rows up to its safe horizon
    (``safe``: see the module docstring) and store the horizon. Returns the rows deleted."""
    horizon = safe(cid, high_water(conn))
    if horizon is None or horizon <= pruned_to(conn, cid):
        return 0
    deleted = conn.execute(
        "DELETE FROM changes WHERE collection_id = ? AND seq <= ?", (cid, horizon)
    ).rowcount
    store_horizon(conn, cid, horizon)
    return int(deleted)


def prune_all(conn: sqlite3.Connection, safe: Horizon) -> int:
    """Inside a write transaction: prune every collection as far as ``safe`` allows, and drop
    log rows and horizons of collections that no longer exist. Returns the rows deleted."""
    ids = [int(r[0]) for r in conn.execute("SELECT id FROM collections")]
    deleted = sum(prune(conn, cid, safe) for cid in ids)
    deleted += conn.execute(
        "DELETE FROM changes WHERE collection_id NOT IN (SELECT id FROM collections)"
    ).rowcount
    live = {_key(cid, log) for cid in ids for log in ("changes", "record_changes")}
    for (key,) in conn.execute(
        "SELECT key FROM semsearch_meta WHERE key LIKE 'changes_pruned:%' "
        "OR key LIKE 'record_changes_pruned:%'"
    ).fetchall():
        if key not in live:
            conn.execute("DELETE FROM semsearch_meta WHERE key = ?", (key,))
    return int(deleted)
