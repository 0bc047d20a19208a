"""Chunk vectors packed in blocks (format 6): one blob per 256 vectors of a collection.

A chunk's vector lives in a *slot* of its collection (``chunks.vector_slot``). Slot ``s`` is
row ``s % BLOCK`` of the block ``s // BLOCK``: a ``vector_blocks`` row holding
float16[BLOCK, dim] little-endian, unit-normalised values (the precision of format 5). Slots
of deleted chunks go to ``vector_slots_free`` (a trigger on ``chunks``) and are handed out
again before new ones, so a file that deletes and re-adds records does not grow; a block
with no embedded chunk left is deleted.

Why blocks: reading a 1M-chunk collection's vectors is then about 4,000 blob reads instead
of a million rows through Python (the HNSW graph's codes are filled from them when it opens,
so the vectors need no second copy in the graph file; docs/storage.md, docs/ann.md). Writes
go into the blobs in place (SQLite incremental blob I/O), so storing one vector rewrites one
page, not a block.

Files of format 5 and older keep each vector inline in ``chunks.vector``; format 6's
migration (:func:`migrate_to_blocks`) moves them into blocks :data:`MIGRATE_BATCH` chunks a
transaction, so a kill part-way leaves a file whose chunks are some inline, some packed, and
readers take each from where it is (stores/sqlite/vector_reads.py).
"""

from __future__ import annotations

import itertools
import sqlite3
from collections.abc import Callable, Iterable, Sequence

import numpy as np
from numpy.typing import NDArray

from semsearch.stores.sqlite.sql import batches, marks
from semsearch.stores.sqlite.vector_blobs import STORED_DTYPE, decode_blobs_half

__all__ = [
    "BLOCK",
    "MIGRATE_BATCH",
    "TABLE",
    "clear_slots",
    "create_block_tables",
    "drop_collection_blocks",
    "migrate_to_blocks",
    "release_empty_blocks",
    "store_vectors",
]

#: Vectors per block: 192 KiB at 384-d float16 (about 48 pages of 4 KiB).
BLOCK = 256
#: The blocks table.
TABLE = "vector_blocks"
#: Chunks moved into blocks per transaction by :func:`migrate_to_blocks`.
MIGRATE_BATCH = 4096
#: Called with the count of chunks moved so far after each committed batch of the migration
#: (tests set it to kill the process there).
after_batch: Callable[[int], None] | None = None

_DDL = (
    "ALTER TABLE chunks ADD COLUMN vector_slot INTEGER",
    f"""CREATE TABLE {TABLE} (
        id INTEGER PRIMARY KEY,
        collection_id INTEGER NOT NULL,
        block INTEGER NOT NULL,        -- slots block * BLOCK .. block * BLOCK + BLOCK - 1
        vectors BLOB NOT NULL,         -- float16[BLOCK, dim] little-endian, unit-normalised
        UNIQUE (collection_id, block)
    )""",
    """CREATE TABLE vector_slots_free (
        collection_id INTEGER NOT NULL,
        slot INTEGER NOT NULL,
        PRIMARY KEY (collection_id, slot)
    ) WITHOUT ROWID""",
    """CREATE TABLE vector_slots_next (
        collection_id INTEGER PRIMARY KEY,
        next INTEGER NOT NULL              -- the lowest slot never handed out
    )""",
    # every way a chunk row goes (record rewrite, delete) frees its slot; a dropped
    # collection's book-keeping is deleted first (drop_collection_blocks), so its rows free none
    """CREATE TRIGGER chunks_free_vector_slot AFTER DELETE ON chunks
        WHEN old.vector_slot IS NOT NULL AND EXISTS (
            SELECT 1 FROM vector_slots_next WHERE collection_id = old.collection_id)
    BEGIN
        INSERT OR IGNORE INTO vector_slots_free (collection_id, slot)
        VALUES (old.collection_id, old.vector_slot);
    END""",
)


def create_block_tables(conn: sqlite3.Connection) -> None:
    """Format 6's DDL: the ``vector_slot`` column, the block and free-slot tables, the trigger."""
    for statement in _DDL:
        conn.execute(statement)


# -- writing ------------------------------------------------------------------------------


def store_vectors(
    conn: sqlite3.Connection, cid: int, chunk_ids: Sequence[int], rows: NDArray[np.floating]
) -> list[int]:
    """Inside a write transaction: write float[n, dim] unit vectors (rounded to float16) into
    the slots of these chunks of collection ``cid``, giving a slot to each chunk without one.

    Sets ``vector_slot``, clears any inline ``vector`` and marks the chunks ``embedded``.
    Chunk ids that are not rows of the collection (deleted meanwhile) are skipped.
    Raises:
        ValueError: not one row of ``rows`` per chunk id (nothing is written).
    Returns:
        the chunk ids written, in the order given.
    """
    values = np.ascontiguousarray(rows, dtype=STORED_DTYPE)
    if values.ndim != 2 or values.shape[0] != len(chunk_ids):
        raise ValueError(f"{len(chunk_ids)} chunk ids for vectors of shape {values.shape}")
    have: dict[int, int | None] = {}
    for batch in batches([int(c) for c in chunk_ids]):
        # by id alone: with collection_id in the WHERE the planner walks the collection's
        # index entries (5 ms per 500 ids at 100k chunks) instead of 500 rowid look-ups
        found = conn.execute(
            f"SELECT id, vector_slot, collection_id FROM chunks WHERE id IN ({marks(batch)})",
            batch,
        ).fetchall()
        have.update({int(r[0]): r[1] for r in found if int(r[2]) == cid})
    picked = [i for i, c in enumerate(chunk_ids) if int(c) in have]
    if not picked:
        return []
    needing = sorted({int(chunk_ids[i]) for i in picked if have[int(chunk_ids[i])] is None})
    for chunk_id, slot in zip(needing, _allocate(conn, cid, len(needing)), strict=True):
        have[chunk_id] = slot
    written = [int(chunk_ids[i]) for i in picked]
    conn.executemany(
        "UPDATE chunks SET vector_slot = ?, vector = NULL, status = 'embedded', error = NULL "
        "WHERE id = ?",
        [(have[c], c) for c in dict.fromkeys(written)],
    )
    slots = np.array([have[c] for c in written], np.int64)
    _write_slots(conn, cid, slots, values[picked])
    return written


def _allocate(conn: sqlite3.Connection, cid: int, n: int) -> list[int]:
    """``n`` slots of the collection: freed ones first (lowest first), then new ones."""
    if n == 0:
        return []
    free = [
        int(r[0])
        for r in conn.execute(
            "SELECT slot FROM vector_slots_free WHERE collection_id = ? ORDER BY slot LIMIT ?",
            (cid, n),
        )
    ]
    if free:
        conn.execute(
            "DELETE FROM vector_slots_free WHERE collection_id = ? AND slot <= ?", (cid, free[-1])
        )
    row = conn.execute(
        "SELECT next FROM vector_slots_next WHERE collection_id = ?", (cid,)
    ).fetchone()
    first = int(row[0]) if row else 0
    fresh = list(range(first, first + n - len(free)))
    conn.execute(
        "INSERT INTO vector_slots_next (collection_id, next) VALUES (?, ?) "
        "ON CONFLICT (collection_id) DO UPDATE SET next = excluded.next",
        (cid, first + len(fresh)),
    )
    return free + fresh


def _write_slots(
    conn: sqlite3.Connection, cid: int, slots: NDArray[np.int64], values: NDArray[np.float16]
) -> None:
    """Write float16 rows into their slots, block by block, runs of adjacent slots at once."""
    order = np.argsort(slots, kind="stable")
    slots, values = slots[order], values[order]
    size = 2 * values.shape[1]  # bytes a vector
    blocks = slots // BLOCK
    starts = np.flatnonzero(np.r_[True, blocks[1:] != blocks[:-1]])
    ends = np.r_[starts[1:], slots.size]
    for lo, hi in zip(starts.tolist(), ends.tolist(), strict=True):
        block = int(blocks[lo])
        conn.execute(
            f"INSERT OR IGNORE INTO {TABLE} (collection_id, block, vectors) "
            "VALUES (?, ?, zeroblob(?))",
            (cid, block, BLOCK * size),
        )
        rowid = conn.execute(
            f"SELECT id FROM {TABLE} WHERE collection_id = ? AND block = ?", (cid, block)
        ).fetchone()[0]
        offsets = slots[lo:hi] % BLOCK
        with conn.blobopen(TABLE, "vectors", int(rowid)) as blob:
            for a, b in _runs(offsets):
                blob.seek(int(offsets[a]) * size)
                blob.write(values[lo + a : lo + b].tobytes())


def _runs(offsets: NDArray[np.int64]) -> Iterable[tuple[int, int]]:
    """(start, end) index ranges of ``offsets`` (ascending) whose values are consecutive."""
    breaks = np.flatnonzero(np.diff(offsets) != 1) + 1
    edges = [0, *breaks.tolist(), int(offsets.size)]
    return itertools.pairwise(edges)


def release_empty_blocks(conn: sqlite3.Connection, cid: int, blocks: Iterable[int]) -> None:
    """Inside a write transaction: delete those of the collection's ``blocks`` whose every
    slot is free (in ``vector_slots_free``, or never handed out). Their slots stay free: one
    handed out again makes a new, zeroed block."""
    row = conn.execute(
        "SELECT next FROM vector_slots_next WHERE collection_id = ?", (cid,)
    ).fetchone()
    issued = int(row[0]) if row else 0
    for block in sorted({int(b) for b in blocks}):
        lo, hi = block * BLOCK, min((block + 1) * BLOCK, issued)
        free = conn.execute(
            "SELECT COUNT(*) FROM vector_slots_free WHERE collection_id = ? "
            "AND slot >= ? AND slot < ?",
            (cid, lo, hi),
        ).fetchone()[0]
        if int(free) >= hi - lo:
            conn.execute(f"DELETE FROM {TABLE} WHERE collection_id = ? AND block = ?", (cid, block))


def clear_slots(conn: sqlite3.Connection, cid: int, slots: Iterable[int]) -> None:
    """Inside a write transaction: write zeros over these freed slots of the collection in the
    blocks that still exist (after :func:`release_empty_blocks`), so a deleted chunk's vector
    does not stay in the file (format 5 deleted it with its row; ``compact`` then left no
    copy)."""
    wanted = np.unique(np.fromiter((int(s) for s in slots), np.int64))
    if wanted.size == 0:
        return
    blocks = wanted // BLOCK
    starts = np.flatnonzero(np.r_[True, blocks[1:] != blocks[:-1]])
    ends = np.r_[starts[1:], wanted.size]
    for lo, hi in zip(starts.tolist(), ends.tolist(), strict=True):
        row = conn.execute(
            f"SELECT id FROM {TABLE} WHERE collection_id = ? AND block = ?",
            (cid, int(blocks[lo])),
        ).fetchone()
        if row is None:  # released: nothing left to clear
            continue
        offsets = wanted[lo:hi] % BLOCK
        with conn.blobopen(TABLE, "vectors", int(row[0])) as blob:
            size = len(blob) // BLOCK
            for a, b in _runs(offsets):
                blob.seek(int(offsets[a]) * size)
                blob.write(bytes(size * (b - a)))


def drop_collection_blocks(conn: sqlite3.Connection, cid: int) -> None:
    """Inside a write transaction: delete a dropped collection's blocks and slot book-keeping."""
    for table in (TABLE, "vector_slots_free", "vector_slots_next"):
        conn.execute(f"DELETE FROM {table} WHERE collection_id = ?", (cid,))


def migrate_to_blocks(conn: sqlite3.Connection) -> None:
    """Format 6: create the block tables, then move every inline chunk vector into a slot,
    :data:`MIGRATE_BATCH` chunks a commit.

    Called by ``schema.migrate`` inside its ``BEGIN IMMEDIATE`` transaction, which this
    function commits after the DDL and after each batch and opens again, so a kill loses at
    most one batch; a new run starts from the first chunk still inline. Float32 blobs (a file
    whose format-5 migration never ran cannot get here: migrations run in order) are rounded
    as format 5 rounds them. No change-log rows: the vectors' values do not change.
    """
    if (
        conn.execute(
            f"SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = '{TABLE}'"
        ).fetchone()
        is None
    ):
        create_block_tables(conn)
    done, last = 0, 0
    while True:
        # k.id > last: each batch starts where the last one ended, not at the file's first
        # chunk (rows already moved would be scanned again: quadratic at 1M chunks)
        rows = conn.execute(
            "SELECT k.id, k.collection_id, k.vector, c.dim FROM chunks k JOIN collections c "
            "ON c.id = k.collection_id WHERE k.id > ? AND k.vector IS NOT NULL "
            "ORDER BY k.id LIMIT ?",
            (last, MIGRATE_BATCH),
        ).fetchall()
        if not rows:
            return
        last = int(rows[-1][0])
        by_collection: dict[tuple[int, int], list[tuple[int, bytes]]] = {}
        for chunk_id, cid, blob, dim in rows:
            by_collection.setdefault((int(cid), int(dim or 0)), []).append((int(chunk_id), blob))
        for (cid, dim), group in by_collection.items():
            values = decode_blobs_half([g[1] for g in group], dim)
            store_vectors(conn, cid, [g[0] for g in group], values)
        done += len(rows)
        conn.execute("COMMIT")
        if after_batch is not None:
            after_batch(done)
        conn.execute("BEGIN IMMEDIATE")
