"""FTS5's own statistics of a table, read from its shadow tables (SQLite's varint format).

FTS5 keeps, beside each full-text table ``T``, an *averages* record (``T_data`` row 1: the row
count, then each column's token total) and a *docsize* row per document (``T_docsize``: each
column's token count). The keyword leg reads them to turn FTS5's BM25 parts back into term
frequencies (stores/sqlite/keyword.py) and the keyword sidecar to pick a hit's best chunk
(bm25/chunks.py). Both are plain SELECTs; nothing here writes.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

from semsearch.stores.sqlite.sql import Rows, batches, marks

__all__ = ["fts_lengths", "fts_state", "fts_totals"]


def fts_totals(rows: Rows, table: str) -> tuple[int, list[int]]:
    """(rows, [tokens per column]) of an FTS5 table, from its averages record."""
    found = rows(f"SELECT block FROM {table}_data WHERE id = 1", ())
    blob = bytes(found[0][0]) if found and found[0][0] is not None else b""
    values, pos = [], 0
    while pos < len(blob):
        value, pos = _varint(blob, pos)
        values.append(value)
    return (values[0], values[1:]) if values else (0, [])


def fts_state(rows: Rows, table: str) -> tuple[str, int, list[int]]:
    """(stamp, rows, [tokens per column]) of an FTS5 table: :func:`fts_totals` and a digest of
    its averages and *structure* records (``T_data`` rows 1 and 10). FTS5 rewrites the
    structure record in every transaction that writes the table (its segments and write
    counter change), so an equal stamp in a later read means the same indexed rows, as the
    keyword sidecar's ``fts_stamp`` takes it for the record-level table."""
    found = rows(f"SELECT id, block FROM {table}_data WHERE id IN (1, 10) ORDER BY id", ())
    digest = hashlib.sha1(usedforsecurity=False)
    values: list[int] = []
    for row_id, block in found:
        blob = bytes(block or b"")
        digest.update(f"{int(row_id)}:".encode() + blob)
        if int(row_id) == 1:
            pos = 0
            while pos < len(blob):
                value, pos = _varint(blob, pos)
                values.append(value)
    totals = (values[0], values[1:]) if values else (0, [])
    return digest.hexdigest(), *totals


def _varint(blob: bytes, pos: int) -> tuple[int, int]:
    """One SQLite varint (big-endian 7-bit groups; a 9th byte gives all 8 bits)."""
    value = 0
    for i in range(9):
        byte = blob[pos + i]
        if i == 8:
            return (value << 8) | byte, pos + 9
        value = (value << 7) | (byte & 0x7F)
        if not byte & 0x80:
            return value, pos + i + 1
    raise AssertionError("unreachable")


def fts_lengths(rows: Rows, table: str, rowids: Sequence[int]) -> dict[int, int]:
    """``{rowid: tokens in all columns}`` of the given documents of FTS5 table ``table``."""
    out: dict[int, int] = {}
    for batch in batches(list(rowids)):
        found = rows(f"SELECT id, sz FROM {table}_docsize WHERE id IN ({marks(batch)})", batch)
        for rowid, blob in found:
            data, pos, total = bytes(blob or b""), 0, 0
            while pos < len(data):
                value, pos = _varint(data, pos)
                total += value
            out[int(rowid)] = total
    return out
