"""Keyword search for the SQLite store: BM25 over a collection's FTS5 table.

``porter`` collections (the default) match stemmed words; ``trigram`` collections match
substrings (for Chinese, Japanese and Korean). Scores are positive and higher is better: the
negated FTS5 ``bm25()`` (Robertson and Zaragoza 2009, FTS5's k1 = 1.2, b = 0.75). A trigram
query whose every word is shorter than 3 characters cannot use the trigram index; it scans the
collection's chunk text for those substrings instead and scores each chunk by how many times
they occur (>= 1).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from semsearch.filters import Filter
from semsearch.stores.base import ScoredChunk
from semsearch.stores.sqlite_schema import fts_table
from semsearch.stores.sqlite_sql import compile_filter, fts_query, trigram_query

__all__ = ["keyword_search"]

Rows = Callable[[str, Sequence[Any]], list[Any]]


def keyword_search(
    rows: Rows, cid: int, tokenizer: str, text: str, k: int, where: Filter | None
) -> list[ScoredChunk]:
    """Top-k chunks of collection ``cid`` for ``text``, best first, ties by record id.

    Args:
        rows: runs one SQL statement with bound parameters and returns its rows.
        cid: the collection's id.
        tokenizer: the collection's keyword tokenizer, ``porter`` or ``trigram``.
        text: the user's query, any text (it is quoted, never parsed as FTS5 syntax).
        k: at most this many chunks.
        where: a filter on declared fields, applied before ranking.
    Returns:
        ScoredChunks with score > 0 (BM25, or the substring count of a short trigram query).
    """
    if tokenizer == "trigram":
        match, short = trigram_query(text)
        if match is None:
            return _substring_scan(rows, cid, short, k, where)
    else:
        match = fts_query(text)
    if match is None:
        return []
    table = fts_table(cid)
    if where is None:
        # Rank inside the FTS table first, then join only the k winners: joining every match
        # before sorting costs more than BM25 itself on common words.
        sql = (
            f"SELECT k.id, r.id, m.score FROM (SELECT rowid, -bm25({table}) AS score "
            f"FROM {table} WHERE {table} MATCH ? ORDER BY score DESC, rowid LIMIT ?) AS m "
            "JOIN chunks k ON k.id = m.rowid JOIN records r ON r.rowid = k.record_rowid "
            "ORDER BY m.score DESC, r.id, k.id"
        )
        found = rows(sql, (match, k))
    else:
        filter_sql, params = compile_filter(where)
        sql = (
            f"SELECT k.id, r.id, -bm25({table}) AS score FROM {table} "
            f"JOIN chunks k ON k.id = {table}.rowid JOIN records r ON r.rowid = k.record_rowid "
            f"WHERE {table} MATCH ? AND ({filter_sql}) ORDER BY score DESC, r.id, k.id LIMIT ?"
        )
        found = rows(sql, (match, *params, k))
    return [ScoredChunk(int(r[0]), r[1], float(r[2])) for r in found]


def _substring_scan(
    rows: Rows, cid: int, pieces: list[str], k: int, where: Filter | None
) -> list[ScoredChunk]:
    """Chunks containing any of ``pieces`` (ASCII case-insensitive), scored by occurrences."""
    if not pieces:
        return []
    text = "lower(k.text)"
    count = " + ".join(
        f"(length({text}) - length(replace({text}, ?, ''))) / length(?)" for _ in pieces
    )
    contains = " OR ".join(f"instr({text}, ?) > 0" for _ in pieces)
    filter_sql, params = compile_filter(where) if where is not None else ("1", [])
    sql = (
        f"SELECT k.id, r.id, ({count}) AS score FROM chunks k "
        "JOIN records r ON r.rowid = k.record_rowid "
        f"WHERE k.collection_id = ? AND ({contains}) AND ({filter_sql}) "
        "ORDER BY score DESC, r.id, k.id LIMIT ?"
    )
    twice = [p for piece in pieces for p in (piece, piece)]
    found = rows(sql, (*twice, cid, *pieces, *params, k))
    return [ScoredChunk(int(r[0]), r[1], float(r[2])) for r in found]
