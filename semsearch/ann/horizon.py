"""How far the ``changes`` log of a ``.embed.db`` file may be pruned without stranding an ANN cache.

The log is pruned by the file's layout module (stores/sqlite/changes.py), which knows nothing of
the caches built on it; the store hands it :func:`changes_horizon` as its
:data:`~semsearch.stores.sqlite.changes.Horizon`. The rule: never past the position of the
collection's ``.ann`` sidecar, so a process opening the sidecar can always catch up from it; and
a collection with an in-memory graph and no sidecar (``persist`` off, or a folder the sidecar
cannot be written to) only below its graph threshold, else every other process would rebuild
its graph.
"""

from __future__ import annotations

import json
import os
import sqlite3

from semsearch.ann import file as ann_file
from semsearch.ann.policy import AnnOptions
from semsearch.ann.rows import embedded_at_least

__all__ = ["changes_horizon"]


def changes_horizon(conn: sqlite3.Connection, db_path: str, cid: int, top: int) -> int | None:
    """How far the log may be pruned: ``top`` (the high-water mark), capped at the sidecar's
    position; None when a graph without a sidecar would have to be rebuilt by every reader.
    Runs inside the pruning write transaction (``conn``)."""
    path = ann_file.ann_path(db_path, cid) if db_path != ":memory:" else None
    if path is not None and os.path.exists(path):
        try:
            header, _, _ = ann_file.read_header(path)
            return min(top, int(header["last_seq"]))
        except (ann_file.SidecarInvalid, KeyError, TypeError, ValueError):
            return top  # unusable: every reader rebuilds it anyway
    row = conn.execute("SELECT options FROM collections WHERE id = ?", (cid,)).fetchone()
    if row is None:
        return top
    opts = AnnOptions.from_options(json.loads(row[0] or "{}"))
    # bounded: a write batch asks this once past PRUNE_AFTER log rows, and a full count of a
    # large collection per batch made filling it quadratic
    return None if embedded_at_least(conn, cid, opts.threshold) else top
