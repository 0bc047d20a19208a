"""Keyword search for the SQLite store: BM25 over a collection's FTS5 table.

``porter`` collections (the default) match stemmed words; a query holding Chinese, Japanese or
Korean characters, or one whose words match nothing (``blaz``, ``itgc`` glued to Chinese text),
is answered by a substring scan instead (see :mod:`semsearch.keyword_text`). ``trigram``
collections match substrings through the index. Scores are positive and higher is better.

A ``porter`` query is ranked by semsearch's BM25 (bm25/postings.py: Lucene's IDF, k1 = 1.2,
b = 0.75, each clause with its query weight; stop words left out by
:func:`semsearch.keyword_query.scoring_clauses`), from the keyword sidecar when it is current
(bm25/sidecar.py) and here, from FTS5, when it is not: each clause is asked of FTS5 alone, and
FTS5's ``bm25()`` of one clause, divided by FTS5's IDF of it (:func:`fts5_idf`), is that
clause's ``f * (k1 + 1) / (f + norm)``; times the clause's weight and Lucene's IDF, the parts
sum to the sidecar's score. So both paths rank alike, to float tolerance. ``trigram``
collections keep FTS5's own ``bm25()`` over their substring clauses. A trigram query whose
every word is shorter than 3 characters cannot use the trigram index; it scans the collection's
chunk text for those substrings instead (scored by :func:`semsearch.keyword_text.scan_score`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Literal

from semsearch.filters import Filter
from semsearch.keyword_query import (
    TITLE_WEIGHT,
    Clause,
    evidence_clauses,
    fts5_frequency,
    fts5_idf,
    idf,
    scoring_clauses,
    term_part,
)
from semsearch.keyword_text import needs_unicode_fold
from semsearch.stores.base import ScoredChunk
from semsearch.stores.query_rules import ScanRow, keyword_or_substring, paged, scanned
from semsearch.stores.sqlite.fts_stats import fts_lengths, fts_totals
from semsearch.stores.sqlite.record_fts import record_fts_table
from semsearch.stores.sqlite.schema import fts_table
from semsearch.stores.sqlite.sql import (
    CASEFOLD_FUNCTION,
    Rows,
    batches,
    compile_filter,
    marks,
    trigram_clauses,
)

__all__ = ["TermCounts", "best_chunks", "keyword_search"]

#: Record-level ranking from the keyword sidecar (bm25/sidecar.py): ``(clauses, k,
#: where) -> ScoredChunks`` as :func:`_ranked_by_clause` returns them, or None (FTS5 answers).
SidecarRank = Callable[[list[Clause], int, Filter | None], list[ScoredChunk] | None]
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
    clauses: list[Clause],
    counts: TermCounts | None = None,
    unit: Unit = "chunk",
    sidecar: SidecarRank | None = None,
    stopwords: frozenset[str] = frozenset(),
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
        text: the user's query, any text (never parsed as FTS5 syntax).
        k: at most this many chunks.
        where: a filter on declared fields, applied before ranking.
        clauses: ``porter``: the query's scoring clauses (stop words left out,
            :func:`semsearch.keyword_query.scoring_clauses`).
        counts: the snapshot's document counts (N of BM25's IDF).
        unit: rank chunks (``chunk``) or records (``record``: needs the format-2 table).
        sidecar: record-level ranking from posting arrays, tried first for ``porter``
            records (same ranking, faster; see bm25/sidecar.py).
        stopwords: the collection's stop words (left out of a substring scan's pieces).
    Returns:
        ScoredChunks with score > 0 (BM25 with its keyword evidence, or the scan score of a
        short trigram query or of a scanned porter query, see :mod:`semsearch.keyword_text`).
    """
    if tokenizer == "trigram":
        long, short = trigram_clauses(text)
        if not long:
            return _substring_scan(rows, cid, short, k, where)
        return _trigram_top(rows, cid, " OR ".join(long), k, where, unit)

    def rank(said: list[Clause], n: int, scope: Filter | None) -> list[ScoredChunk]:
        ranked = sidecar(said, n, scope) if sidecar is not None and unit == "record" else None
        if ranked is not None:
            return ranked
        return _ranked_by_clause(rows, cid, said, n, scope, counts, unit)

    # CJK text, word parts and prefixes: a substring scan (see semsearch.keyword_text)
    return keyword_or_substring(
        text,
        lambda: rank(clauses, k, where),
        lambda pieces, cap: _substring_scan(rows, cid, pieces, k, where, cap),
        stopwords,
        lambda word: bool(rank(scoring_clauses(word, stopwords), 1, None)),
    )


def _clause_rows(
    rows: Rows, cid: int, clause: str, where: Filter | None, unit: Unit
) -> Sequence[Sequence[Any]]:
    """(rowid, chunk id or None, record id, FTS5 ``-bm25()`` of ``clause`` alone) of every row
    of the unit's FTS5 table matching it that ``where`` keeps."""
    table = _table(cid, unit)
    if unit == "record":
        rank = f"-bm25({table}, {TITLE_WEIGHT}, 1.0)"
        join = f"JOIN records r ON r.rowid = {table}.rowid"
        chunk = "NULL"
    else:
        rank = f"-bm25({table})"
        join = f"JOIN chunks k ON k.id = {table}.rowid JOIN records r ON r.rowid = k.record_rowid"
        chunk = "k.id"
    filter_sql, params = compile_filter(where) if where is not None else ("1", [])
    return rows(
        f"SELECT {table}.rowid, {chunk}, r.id, {rank} FROM {table} {join} "
        f"WHERE {table} MATCH ? AND ({filter_sql})",
        (clause, *params),
    )


def _ranked_by_clause(
    rows: Rows,
    cid: int,
    clauses: list[Clause],
    k: int,
    where: Filter | None,
    counts: TermCounts | None,
    unit: Unit,
) -> list[ScoredChunk]:
    """semsearch's BM25 from FTS5, one clause at a time (see the module docstring), with each
    hit's keyword evidence as the sidecar gives it (bm25/delta.py ``rank_clauses``)."""
    if not clauses:
        return []
    counts = counts or TermCounts(())
    total = counts.documents(rows, cid, unit)
    found = [_clause_rows(rows, cid, c.fts, where, unit) for c in clauses]
    names = {int(r[0]): (r[1], r[2]) for rs in found for r in rs}
    to_ours = _length_converter(rows, _table(cid, unit), list(names))
    scores: dict[int, float] = {}
    parts: list[tuple[float, dict[int, float]]] = []  # (w * idf, parts)
    idfs: list[float] = []
    dfs: list[int] = []
    for clause, clause_rows in zip(clauses, found, strict=True):
        n = counts.hits(rows, cid, unit, clause.fts)  # in the whole collection, as FTS5 counts
        weight = clause.weight * idf(total, n)
        scale = 1.0 / fts5_idf(total, n)
        held = {int(r[0]): to_ours(int(r[0]), float(r[3]) * scale) for r in clause_rows}
        for rowid, part in held.items():
            scores[rowid] = scores.get(rowid, 0.0) + weight * part
        parts.append((weight, held))
        idfs.append(idf(total, n))
        dfs.append(n)
    chosen = [parts[i] for i in evidence_clauses(idfs, dfs, [c.stop for c in clauses])]
    reference = sum(w for w, _ in chosen) or 1.0
    best = sorted(scores, key=lambda r: (-scores[r], names[r][1], names[r][0] or 0))[:k]
    evidence = {
        r: (
            sum(w * held.get(r, 0.0) for w, held in chosen) / reference,
            sum(w for w, held in chosen if r in held) / reference,
        )
        for r in best
    }
    if unit == "chunk":
        return [
            ScoredChunk(int(names[r][0] or 0), names[r][1], scores[r], False, *evidence[r])
            for r in best
        ]
    return _record_hits(rows, [(r, names[r][1], scores[r], *evidence[r]) for r in best])


def _length_converter(rows: Rows, table: str, rowids: list[int]) -> Callable[[int, float], float]:
    """``(rowid, FTS5 term part) -> semsearch's term part`` for documents of ``table``: FTS5
    normalises lengths linearly, semsearch by keyword_query.relative_length, so each part goes
    back to its weighted frequency (keyword_query.fts5_frequency) and forward again."""
    n_docs, totals = fts_totals(rows, table)
    avgdl = (sum(totals) / n_docs if n_docs else 0.0) or 1.0
    lengths = fts_lengths(rows, table, rowids)

    def convert(rowid: int, part: float) -> float:
        length = lengths.get(rowid, 0)
        return term_part(fts5_frequency(part, length, avgdl), length, avgdl)

    return convert


def _trigram_top(
    rows: Rows, cid: int, match: str, k: int, where: Filter | None, unit: Unit
) -> list[ScoredChunk]:
    """FTS5's own BM25 for a trigram query's ORed substrings (no stop words, no weights)."""
    if unit == "record":
        return _bm25_records(rows, cid, match, k, where)
    return _bm25_top(rows, cid, match, k, where)


def _bm25_records(
    rows: Rows, cid: int, match: str, k: int, where: Filter | None
) -> list[ScoredChunk]:
    """Top-k records by whole-record FTS5 BM25, each with its first chunk, ``provisional``."""
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
    return _record_hits(rows, [(*r, None, None) for r in ranked])


def _record_hits(rows: Rows, ranked: Sequence[Sequence[Any]]) -> list[ScoredChunk]:
    """``(rowid, id, score, evidence, coverage)`` rows as ScoredChunks of each record's first
    chunk, in order."""
    first: dict[int, int] = {}
    for batch in batches([int(r[0]) for r in ranked]):
        found = rows(
            f"SELECT record_rowid, min(id) FROM chunks WHERE record_rowid IN ({marks(batch)}) "
            "GROUP BY record_rowid",
            batch,
        )
        first.update({int(r[0]): int(r[1]) for r in found})
    return [
        ScoredChunk(first[int(r[0])], r[1], float(r[2]), True, r[3], r[4])
        for r in ranked
        if int(r[0]) in first
    ]


def _weighty(rows: Rows, cid: int, clauses: list[str], counts: TermCounts, unit: Unit) -> list[str]:
    """The clauses with a positive FTS5 IDF: log((N - n + 0.5) / (n + 0.5)) > 0 iff 2n < N."""
    total = counts.documents(rows, cid, unit)
    return [c for c in clauses if 2 * counts.hits(rows, cid, unit, c) < total]


def best_chunks(
    rows: Rows,
    cid: int,
    tokenizer: str,
    text: str,
    record_ids: Sequence[str],
    counts: TermCounts | None = None,
    clauses: Sequence[Clause] = (),
) -> dict[str, int]:
    """``{record id: chunk id}``: each record's chunk with the highest chunk-level FTS5 BM25
    for the query's scoring ``clauses`` (``porter``; ``trigram`` uses ``text``'s substrings),
    ties: the first chunk; records with no chunk matching on its own are left out. With
    ``counts``, weightless clauses (in half the chunks or more) are left out: they add at most
    2.2e-6 to a chunk's FTS5 score and cost most of the query."""
    porter = [c.fts for c in clauses]
    return _best_chunks(
        rows,
        cid,
        trigram_clauses(text)[0] if tokenizer == "trigram" else porter,
        record_ids,
        counts,
    )


def _best_chunks(
    rows: Rows,
    cid: int,
    clauses: list[str],
    record_ids: Sequence[str],
    counts: TermCounts | None,
) -> dict[str, int]:
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
    rows: Rows, cid: int, pieces: list[str], k: int, where: Filter | None, cap: int | None = None
) -> list[ScoredChunk]:
    """Top-k chunks containing any of ``pieces`` (casefolded), of the first ``cap`` found (None:
    all), scored by :func:`~semsearch.keyword_text.scan_score`, each with the share of the
    pieces it holds as its keyword evidence and coverage
    (:func:`~semsearch.stores.query_rules.scanned`)."""
    if not pieces:
        return []
    # SQLite's lower() is exact for ASCII and CJK (no case) and fast; Python's casefold, called
    # per row, only when a piece holds a cased non-ASCII letter (über, straße)
    text = f"{CASEFOLD_FUNCTION}(k.text)" if needs_unicode_fold(pieces) else "lower(k.text)"
    contains = " OR ".join(f"instr({text}, ?) > 0" for _ in pieces)
    filter_sql, params = compile_filter(where) if where is not None else ("1", [])
    sql = (
        f"SELECT k.id, r.id, k.ordinal, k.text FROM chunks k "
        "JOIN records r ON r.rowid = k.record_rowid "
        f"WHERE k.collection_id = ? AND k.id > ? AND ({contains}) AND ({filter_sql}) "
        "ORDER BY k.id LIMIT ?"
    )

    def fetch(after: int, n: int) -> list[ScanRow]:
        found = rows(sql, (cid, after, *pieces, *params, n))
        return [(int(r[0]), r[1], int(r[2]), r[3]) for r in found]

    return scanned(paged(fetch, cap), pieces, k)
