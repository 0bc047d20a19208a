"""Keyword search for the SQLite store: BM25 over a collection's FTS5 table.

``porter`` collections (the default) match stemmed words; a query holding Chinese, Japanese or
Korean characters, or one whose words match nothing (``blaz``, ``itgc`` glued to Chinese text),
is answered by a substring scan instead (see :mod:`semsearch.keyword_text`). ``trigram``
collections match substrings through the index. Scores are positive and higher is better: the
negated FTS5 ``bm25()`` (Robertson and Zaragoza 2009, FTS5's k1 = 1.2, b = 0.75). A trigram
query whose every word is shorter than 3 characters cannot use the trigram index; it scans the
collection's chunk text for those substrings instead and scores each chunk by how many times
they occur (>= 1).

Words in at least half of a collection's chunks carry no weight: FTS5 clamps a negative IDF to
1e-6, so such a word adds at most 2.2e-6 to a chunk's score. A query that also has weighty
words is first run without them (``phone holder for the car`` -> ``holder OR car``), which
skips scoring the thousands of chunks that match only ``for``, ``the`` or ``phone``; it is run
in full only when that finds fewer than k chunks. Rankings are FTS5's own up to ties closer
than 2.2e-6 per dropped word. The per-word chunk counts are cached per collection snapshot
(:class:`TermCounts`), so a word is counted once between writes.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Literal

from semsearch.filters import Filter
from semsearch.keyword_text import needs_unicode_fold
from semsearch.stores.base import ScoredChunk
from semsearch.stores.query_rules import keyword_or_substring
from semsearch.stores.sqlite.record_fts import TITLE_WEIGHT, record_fts_table
from semsearch.stores.sqlite.schema import fts_table
from semsearch.stores.sqlite.sql import (
    CASEFOLD_FUNCTION,
    Rows,
    batches,
    compile_filter,
    fts_clauses,
    marks,
    trigram_clauses,
)

__all__ = ["TermCounts", "best_chunks", "keyword_search"]

#: Record-level ranking from the keyword sidecar (bm25/sidecar.py): ``(clauses, k,
#: where) -> ScoredChunks`` as :func:`_bm25_records` returns them, or None (FTS5 answers).
SidecarRank = Callable[[list[str], int, Filter | None], list[ScoredChunk] | None]
#: What one FTS5 row is: a chunk (files of format 1) or a whole record (format 2 on).
Unit = Literal["chunk", "record"]

#: Counted clauses kept per snapshot; past this the cache starts over (bounded memory).
MAX_COUNTED = 4096


class TermCounts:
    """How many documents of one collection snapshot match each FTS5 clause, counted on demand.

    Documents are chunks or records (``unit``), as the FTS5 table ranked is the chunk-level or
    the record-level one. A snapshot is named by ``key`` (the collection's id, change counter
    and creation time): any write, from any process, bumps the counter, so a new key means
    recount. Not thread-safe on its own; the SQLite store uses it under its connection lock.
    """

    def __init__(self, key: tuple[Any, ...]) -> None:
        self.key = key
        self._total: dict[str, int] = {}
        self._hits: dict[tuple[str, str], int] = {}

    def documents(self, rows: Rows, cid: int, unit: Unit) -> int:
        """Chunks or records in the collection (FTS5's ``N`` in BM25's IDF)."""
        if unit not in self._total:
            found = rows(f"SELECT count(*) FROM {unit}s WHERE collection_id = ?", (cid,))
            self._total[unit] = int(found[0][0])
        return self._total[unit]

    def hits(self, rows: Rows, cid: int, unit: Unit, clause: str) -> int:
        """Documents matching one quoted FTS5 clause (FTS5's ``n(q)`` in BM25's IDF)."""
        if (unit, clause) not in self._hits:
            if len(self._hits) >= MAX_COUNTED:
                self._hits.clear()
            table = _table(cid, unit)
            sql = f"SELECT count(*) FROM {table} WHERE {table} MATCH ?"
            self._hits[unit, clause] = int(rows(sql, (clause,))[0][0])
        return self._hits[unit, clause]


def _table(cid: int, unit: Unit) -> str:
    return record_fts_table(cid) if unit == "record" else fts_table(cid)


def keyword_search(
    rows: Rows,
    cid: int,
    tokenizer: str,
    text: str,
    k: int,
    where: Filter | None,
    counts: TermCounts | None = None,
    unit: Unit = "chunk",
    sidecar: SidecarRank | None = None,
) -> list[ScoredChunk]:
    """Top-k chunks of collection ``cid`` for ``text``, best first, ties by record id.

    With ``unit="record"`` records are ranked by BM25 over their whole text (title column
    weighted by TITLE_WEIGHT, see stores/sqlite/record_fts.py) and each comes back once, with
    the score of the record and its first chunk, ``provisional`` (:func:`best_chunks` finds
    the chunk that matches best, for the hits search shows).

    Args:
        rows: runs one SQL statement with bound parameters and returns its rows (all calls of
            one search should see one snapshot, e.g. inside one read transaction).
        cid: the collection's id.
        tokenizer: the collection's keyword tokenizer, ``porter`` or ``trigram``.
        text: the user's query, any text (it is quoted, never parsed as FTS5 syntax).
        k: at most this many chunks.
        where: a filter on declared fields, applied before ranking.
        counts: the snapshot's document counts per clause; with them, weightless words (in at
            least half of the documents) are left out when that still finds k documents.
        unit: rank chunks (``chunk``) or records (``record``: needs the format-2 table).
        sidecar: record-level ranking from posting arrays, tried first for ``porter``
            records (same ranking as FTS5's, faster; see bm25/sidecar.py).
    Returns:
        ScoredChunks with score > 0 (BM25, or the substring count of a short trigram query
        or of a scanned porter query, see :mod:`semsearch.keyword_text`).
    """
    if tokenizer == "trigram":
        clauses, short = trigram_clauses(text)
        if not clauses:
            return _substring_scan(rows, cid, short, k, where)
        return _porter(rows, cid, clauses, k, where, counts, unit)

    def words() -> list[ScoredChunk]:
        clauses = fts_clauses(text)
        ranked = sidecar(clauses, k, where) if sidecar is not None and unit == "record" else None
        return ranked if ranked is not None else _porter(rows, cid, clauses, k, where, counts, unit)

    # CJK text, word parts and prefixes: a substring scan (see semsearch.keyword_text)
    return keyword_or_substring(
        text, words, lambda pieces: _substring_scan(rows, cid, pieces, k, where)
    )


def _porter(
    rows: Rows,
    cid: int,
    clauses: list[str],
    k: int,
    where: Filter | None,
    counts: TermCounts | None,
    unit: Unit,
) -> list[ScoredChunk]:
    """BM25 for ORed clauses, weightless words left out first when that still finds k hits."""
    if not clauses:
        return []
    top = _bm25_top if unit == "chunk" else _bm25_records
    if counts is not None and len(clauses) > 1:
        weighty = _weighty(rows, cid, clauses, counts, unit)
        if 0 < len(weighty) < len(clauses):
            found = top(rows, cid, " OR ".join(weighty), k, where)
            if len(found) >= k:
                return found
    return top(rows, cid, " OR ".join(clauses), k, where)


def _weighty(rows: Rows, cid: int, clauses: list[str], counts: TermCounts, unit: Unit) -> list[str]:
    """The clauses with a positive BM25 IDF: log((N - n + 0.5) / (n + 0.5)) > 0 iff 2n < N."""
    total = counts.documents(rows, cid, unit)
    return [c for c in clauses if 2 * counts.hits(rows, cid, unit, c) < total]


def _bm25_records(
    rows: Rows, cid: int, match: str, k: int, where: Filter | None
) -> list[ScoredChunk]:
    """Top-k records by whole-record BM25, each with its first chunk, ``provisional``."""
    table = record_fts_table(cid)
    rank = f"-bm25({table}, {TITLE_WEIGHT}, 1.0)"
    if where is None:
        # rank inside the FTS table first, then join only the k winners (as _bm25_top does)
        ranked = rows(
            f"SELECT r.rowid, r.id, m.score FROM (SELECT rowid, {rank} AS score FROM {table} "
            f"WHERE {table} MATCH ? ORDER BY score DESC, rowid LIMIT ?) AS m "
            "JOIN records r ON r.rowid = m.rowid ORDER BY m.score DESC, r.id",
            (match, k),
        )
    else:
        filter_sql, params = compile_filter(where)
        ranked = rows(
            f"SELECT r.rowid, r.id, m.score FROM (SELECT rowid, {rank} AS score FROM {table} "
            f"WHERE {table} MATCH ?) AS m JOIN records r ON r.rowid = m.rowid "
            f"WHERE ({filter_sql}) ORDER BY m.score DESC, r.id LIMIT ?",
            (match, *params, k),
        )
    return _record_hits(rows, ranked)


def _record_hits(rows: Rows, ranked: Sequence[Sequence[Any]]) -> list[ScoredChunk]:
    """``(rowid, id, score)`` rows as ScoredChunks of each record's first chunk, in order."""
    first: dict[int, int] = {}
    for batch in batches([int(r[0]) for r in ranked]):
        found = rows(
            f"SELECT record_rowid, min(id) FROM chunks WHERE record_rowid IN ({marks(batch)}) "
            "GROUP BY record_rowid",
            batch,
        )
        first.update({int(r[0]): int(r[1]) for r in found})
    return [
        ScoredChunk(first[int(r[0])], r[1], float(r[2]), provisional=True)
        for r in ranked
        if int(r[0]) in first
    ]


def best_chunks(
    rows: Rows,
    cid: int,
    tokenizer: str,
    text: str,
    record_ids: Sequence[str],
    counts: TermCounts | None = None,
) -> dict[str, int]:
    """``{record id: chunk id}``: each record's chunk with the highest chunk-level BM25 for
    ``text`` (ties: the first chunk); records with no chunk matching on its own are left out.
    With ``counts``, weightless words (in half the chunks or more) are left out, as ranking
    leaves them out: they add at most 2.2e-6 to a chunk's score and cost most of the query."""
    clauses = trigram_clauses(text)[0] if tokenizer == "trigram" else fts_clauses(text)
    if not clauses or not record_ids:
        return {}
    if counts is not None and len(clauses) > 1:
        clauses = _weighty(rows, cid, clauses, counts, "chunk") or clauses
    table = fts_table(cid)
    out: dict[str, int] = {}
    for batch in batches(list(record_ids)):
        rowids = {
            int(r[0]): r[1]
            for r in rows(
                f"SELECT rowid, id FROM records WHERE collection_id = ? AND id IN ({marks(batch)})",
                (cid, *batch),
            )
        }
        found = rows(
            f"SELECT k.record_rowid, k.id FROM {table} JOIN chunks k ON k.id = {table}.rowid "
            f"WHERE {table} MATCH ? AND k.record_rowid IN ({marks(list(rowids))}) "
            f"ORDER BY bm25({table}) DESC, k.id DESC",
            (" OR ".join(clauses), *rowids),
        )
        out.update({rowids[int(r[0])]: int(r[1]) for r in found})  # the last row is the best
    return out


def _bm25_top(rows: Rows, cid: int, match: str, k: int, where: Filter | None) -> list[ScoredChunk]:
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
    """Chunks containing any of ``pieces`` (casefolded), scored by occurrences."""
    if not pieces:
        return []
    # SQLite's lower() is exact for ASCII and CJK (no case) and fast; Python's casefold, called
    # per row, only when a piece holds a cased non-ASCII letter (über, straße)
    text = f"{CASEFOLD_FUNCTION}(k.text)" if needs_unicode_fold(pieces) else "lower(k.text)"
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
