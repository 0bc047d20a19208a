"""FTS5's own statistics of a table, read from its shadow tables (SQLite's varint format).

FTS5 keeps, beside each full-text table ``T``, an *averages* record (``T_data`` row 1: the row
count, then each column's token total) and a *docsize* row per document (``T_docsize``: each
column's token count). The keyword leg reads them to turn FTS5's BM25 parts back into term
frequencies (stores/sqlite/keyword.py) and the keyword sidecar to pick a hit's best chunk
(bm25/chunks.py). Both are plain SELECTs; nothing here writes.
"""

from __future__ import annotations

from collections.abc import Sequence

from semsearch.stores.sqlite.sql import Rows, batches, marks

__all__ = ["fts_lengths", "fts_totals"]


def fts_totals(rows: Rows, table: str) -> tuple[int, list[int]]:
    """(rows, [tokens per column]) of an FTS5 table, from its averages record."""
    found = rows(f"SELECT block FROM {table}_data WHERE id = 1", ())
    blob = bytes(found[0][0]) if found and found[0][0] is not None else b""
    values, pos = [], 0
    while pos < len(blob):
        value, pos = _varint(blob, pos)
        values.append(value)
    return (values[0], values[1:]) if values else (0, [])


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
