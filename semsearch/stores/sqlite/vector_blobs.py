"""How the SQLite store keeps chunk vectors: float16 blobs since format 5, and the migration.

A chunk's ``vector`` blob is little-endian IEEE 754 half precision (``<f2``), ``dim`` values,
unit-normalised before rounding: 2 bytes a value, half of float32. Rounding moves a cosine
between unit vectors by under 1e-3 (11 significant bits per value), far below the gaps that
decide a top-10. Files of format 4 and older hold float32 blobs (``<f4``); a blob is decoded by
its length (``2 * dim`` bytes: float16, ``4 * dim``: float32), so both read correctly, also in
a file whose migration was interrupted.

Format 5's migration (:func:`migrate_to_float16`) rewrites the float32 blobs as float16 in
batches of :data:`BATCH` chunks, one transaction each, so a kill part-way leaves a readable file
of mixed blobs that the next write finishes; the version is recorded after the last batch.
It runs only on a write path (stores/sqlite/schema.py), never on a read.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Sequence

import numpy as np
from numpy.typing import NDArray

from semsearch.errors import StoreCorrupted

__all__ = [
    "BATCH",
    "STORED_DTYPE",
    "decode_blobs",
    "decode_blobs_half",
    "encode_vectors",
    "migrate_to_float16",
    "stored_precision",
]

#: The dtype of a chunk vector blob written by this version (little-endian float16).
STORED_DTYPE = "<f2"
#: Chunks rewritten per transaction by :func:`migrate_to_float16`.
BATCH = 4096
#: Called with the count of chunks converted so far after each committed batch (tests set it
#: to kill the process there: the crash test of the migration).
after_batch: Callable[[int], None] | None = None


def stored_precision(format_version: int) -> str:
    """``"float16"`` for files of format 5 and newer, ``"float32"`` before."""
    return "float16" if format_version >= 5 else "float32"


def encode_vectors(vectors: NDArray[np.floating]) -> list[bytes]:
    """float[n, dim] unit vectors as n float16 little-endian blobs of ``2 * dim`` bytes."""
    rows = np.ascontiguousarray(vectors, dtype=STORED_DTYPE)
    return [rows[i].tobytes() for i in range(rows.shape[0])]


def decode_blobs_half(blobs: Sequence[bytes], dim: int) -> NDArray[np.float16]:
    """Stored blobs as float16[len(blobs), dim]: float16 blobs as they are (no float32 copy),
    float32 blobs (files before format 5) rounded to nearest.

    Raises:
        StoreCorrupted: a blob is neither ``2 * dim`` nor ``4 * dim`` bytes long.
    """
    joined = b"".join(blobs)
    if len(joined) == 2 * dim * len(blobs):  # every blob float16, as decode_blobs checks it
        return np.frombuffer(joined, STORED_DTYPE).reshape(len(blobs), dim)
    return decode_blobs(blobs, dim).astype(np.float16)


def decode_blobs(blobs: Sequence[bytes], dim: int) -> NDArray[np.float32]:
    """Stored blobs as float32[len(blobs), dim]; float16 rows upcast exactly, float32 kept.

    Raises:
        StoreCorrupted: a blob is neither ``2 * dim`` nor ``4 * dim`` bytes long.
    """
    n = len(blobs)
    joined = b"".join(blobs)
    if len(joined) == 2 * dim * n:  # the common case: every blob float16 (or none at all)
        return np.frombuffer(joined, STORED_DTYPE).reshape(n, dim).astype(np.float32)
    if len(joined) == 4 * dim * n and all(len(b) == 4 * dim for b in blobs):
        return np.frombuffer(joined, "<f4").reshape(n, dim).astype(np.float32)
    out = np.empty((n, dim), np.float32)
    for i, blob in enumerate(blobs):
        if len(blob) == 2 * dim:
            out[i] = np.frombuffer(blob, STORED_DTYPE)
        elif len(blob) == 4 * dim:
            out[i] = np.frombuffer(blob, "<f4")
        else:
            raise StoreCorrupted(
                f"a chunk vector is {len(blob)} bytes; a {dim}-d vector is {2 * dim} "
                f"(float16) or {4 * dim} (float32)",
                hint="the file is damaged: re-index the collection into a new file",
            )
    return out


def migrate_to_float16(conn: sqlite3.Connection) -> None:
    """Format 5: rewrite every float32 chunk vector as float16, :data:`BATCH` chunks a commit.

    Called by ``schema.migrate`` inside its ``BEGIN IMMEDIATE`` transaction, which this
    function commits after each batch and opens again, so a 1M-chunk file never needs one
    giant transaction and a kill loses at most one batch of work. Rows are visited by id; an
    interrupted run starts again from the first id and skips the rows already converted. No
    change-log rows are written: derived caches notice the new precision from the format
    version (ann/rows.py) instead of re-reading every chunk as changed.
    """
    last, done = 0, 0
    while True:
        rows = conn.execute(
            "SELECT k.id, k.vector, c.dim FROM chunks k JOIN collections c "
            "ON c.id = k.collection_id WHERE k.id > ? AND k.vector IS NOT NULL "
            "ORDER BY k.id LIMIT ?",
            (last, BATCH),
        ).fetchall()
        if not rows:
            return
        last = int(rows[-1][0])
        wide: dict[int, list[tuple[int, bytes]]] = {}  # by dim: collections may differ
        for chunk_id, blob, dim in rows:
            if dim and len(blob) == 4 * int(dim):
                wide.setdefault(int(dim), []).append((int(chunk_id), blob))
        for dim, group in wide.items():
            blobs = encode_vectors(decode_blobs([g[1] for g in group], dim))
            conn.executemany(
                "UPDATE chunks SET vector = ? WHERE id = ?",
                [(blob, g[0]) for blob, g in zip(blobs, group, strict=True)],
            )
            done += len(group)
        conn.execute("COMMIT")
        if after_batch is not None:
            after_batch(done)
        conn.execute("BEGIN IMMEDIATE")
