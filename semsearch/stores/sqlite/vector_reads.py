"""Reading chunk vectors of the SQLite store: inline blobs (formats 5 and older) or block slots.

A chunk's vector is in its ``chunks`` row (``vector``, files not yet migrated to format 6, or a
format-6 migration still under way) or in its collection's vector blocks (``vector_slot``; the
layout and the writes are stores/sqlite/vector_blocks.py). Every reader takes each vector from
where it is (:func:`resolve`), so a file whose migration was interrupted reads correctly; a
whole collection's vectors are read block by block (:func:`fill_by_slot`), what an HNSW graph
saved without codes fills them from when it opens.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from semsearch.stores.sqlite.sql import batches, marks
from semsearch.stores.sqlite.vector_blobs import STORED_DTYPE, decode_blobs, decode_blobs_half
from semsearch.stores.sqlite.vector_blocks import BLOCK, TABLE

__all__ = [
    "chunk_slots",
    "fill_by_slot",
    "gather_slots",
    "packed_only",
    "resolve",
    "slot_column",
]


def slot_column(conn: sqlite3.Connection) -> str:
    """The SQL that reads a chunk's slot: ``vector_slot`` once format 6's DDL ran (also in a
    file whose migration is still moving vectors), ``NULL`` in older files."""
    row = conn.execute(
        f"SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = '{TABLE}'"
    ).fetchone()
    return "NULL" if row is None else "vector_slot"


def packed_only(conn: sqlite3.Connection) -> bool:
    """True when format 6 is recorded: every chunk vector is in a block, none inline."""
    row = conn.execute("SELECT MAX(version) FROM semsearch_migrations").fetchone()
    return row is not None and int(row[0] or 0) >= 6


def chunk_slots(
    conn: sqlite3.Connection, cid: int, chunk_ids: NDArray[np.int64]
) -> NDArray[np.int64] | None:
    """int64[n]: the ``vector_slot`` of each chunk now (-1 for a chunk gone or not embedded),
    read in one pass over the collection's embedded chunks; None unless :func:`packed_only`."""
    if not packed_only(conn):
        return None
    out = np.full(chunk_ids.shape[0], -1, np.int64)
    order = np.argsort(chunk_ids, kind="stable")
    by_id = chunk_ids[order]
    cursor = conn.execute(
        "SELECT id, vector_slot FROM chunks WHERE collection_id = ? AND status = 'embedded' "
        "AND vector_slot IS NOT NULL ORDER BY id",
        (cid,),
    )
    while batch := cursor.fetchmany(8192):
        pairs = np.array(batch, np.int64)
        lo = int(np.searchsorted(by_id, pairs[0, 0], side="left"))
        hi = int(np.searchsorted(by_id, pairs[-1, 0], side="right"))
        wanted = by_id[lo:hi]
        at = np.searchsorted(pairs[:, 0], wanted)  # < len(pairs): wanted <= the last id
        hit = pairs[at, 0] == wanted
        out[order[lo:hi][hit]] = pairs[at[hit], 1]
    return out


def gather_slots(
    conn: sqlite3.Connection, cid: int, slots: NDArray[np.int64], dim: int
) -> tuple[NDArray[np.float16], NDArray[np.bool_]]:
    """(float16[m, dim] the vectors in these slots, bool[m] whose block exists), in the order
    asked. A block read for a few of its slots reads just those (one page each); one read
    for many reads the whole blob."""
    out = np.zeros((slots.size, dim), np.float16)
    found = np.zeros(slots.size, np.bool_)
    if slots.size == 0:
        return out, found
    size = 2 * dim
    blocks = slots // BLOCK
    wanted = np.unique(blocks)
    ids: dict[int, int] = {}
    for batch in batches(wanted.tolist()):
        ids.update(
            (int(b), int(i))
            for b, i in conn.execute(
                f"SELECT block, id FROM {TABLE} WHERE collection_id = ? "
                f"AND block IN ({marks(batch)})",
                (cid, *batch),
            )
        )
    order = np.argsort(blocks, kind="stable")
    starts = np.searchsorted(blocks[order], wanted, side="left")
    ends = np.searchsorted(blocks[order], wanted, side="right")
    for block, lo, hi in zip(wanted.tolist(), starts.tolist(), ends.tolist(), strict=True):
        rowid = ids.get(int(block))
        if rowid is None:
            continue
        at = order[lo:hi]
        offsets = slots[at] % BLOCK
        with conn.blobopen(TABLE, "vectors", rowid, readonly=True) as blob:
            if hi - lo > BLOCK // 16:  # many: one read of the whole block
                whole = np.frombuffer(blob.read(), STORED_DTYPE).reshape(-1, dim)
                out[at] = whole[offsets]
            else:
                for row, offset in zip(at.tolist(), offsets.tolist(), strict=True):
                    blob.seek(offset * size)
                    out[row] = np.frombuffer(blob.read(size), STORED_DTYPE)
        found[at] = True
    return out, found


def fill_by_slot(
    conn: sqlite3.Connection,
    cid: int,
    slots: NDArray[np.int64],
    out: NDArray[np.float16],
    found: NDArray[np.bool_],
) -> None:
    """Write the vector of slot ``slots[i]`` into ``out[i]`` for every ``i`` with
    ``slots[i] >= 0`` whose block exists, and set ``found[i]``: one pass over the collection's
    blocks in order (what opening an HNSW graph without codes reads; about 4,000 blobs at 1M
    chunks), holding one block besides ``out``."""
    dim = out.shape[1]
    order = np.argsort(slots, kind="stable")
    ordered = slots[order]
    cursor = conn.execute(
        f"SELECT block, vectors FROM {TABLE} WHERE collection_id = ? ORDER BY block", (cid,)
    )
    for block, data in cursor:
        lo = int(np.searchsorted(ordered, int(block) * BLOCK, side="left"))
        hi = int(np.searchsorted(ordered, (int(block) + 1) * BLOCK, side="left"))
        if lo == hi:
            continue
        values = np.frombuffer(data, STORED_DTYPE).reshape(-1, dim)
        rows, at = order[lo:hi], ordered[lo:hi] - int(block) * BLOCK
        n = hi - lo
        if bool(np.all(np.diff(rows) == 1)) and bool(np.all(np.diff(at) == 1)):  # the usual
            out[rows[0] : rows[0] + n] = values[at[0] : at[0] + n]  # case: slices, no gather
            found[rows[0] : rows[0] + n] = True
            continue
        out[rows] = values[at]
        found[rows] = True


def resolve(
    conn: sqlite3.Connection,
    cid: int,
    dim: int,
    blobs: Sequence[bytes | None],
    slots: Sequence[int | None],
    dtype: type = np.float16,
) -> tuple[NDArray[Any], NDArray[np.bool_]]:
    """The vectors of chunk rows read as (``vector``, ``vector_slot``) pairs: an inline blob
    (formats 5 and older, or not yet migrated) as stored, else the slot's value.

    Args:
        dtype: np.float16 (float32 inline blobs of files before format 5 are rounded) or
            np.float32 (float16 values upcast exactly, float32 blobs kept).
    Returns:
        (dtype[n, dim], bool[n] which rows had a vector in either place).
    Raises:
        StoreCorrupted: an inline blob is neither ``2 * dim`` nor ``4 * dim`` bytes long.
    """
    n = len(blobs)
    out: NDArray[Any] = np.zeros((n, dim), dtype)
    found = np.zeros(n, np.bool_)
    inline = [i for i, b in enumerate(blobs) if b is not None]
    if inline:
        decode = decode_blobs_half if dtype == np.float16 else decode_blobs
        out[inline] = decode([blobs[i] for i in inline], dim)  # type: ignore[misc]
        found[inline] = True
    packed = [i for i, b in enumerate(blobs) if b is None and slots[i] is not None]
    if packed:
        values, ok = gather_slots(conn, cid, np.array([slots[i] for i in packed], np.int64), dim)
        out[packed] = values
        found[packed] = ok
    return out, found
