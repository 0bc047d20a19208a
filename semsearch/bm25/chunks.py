"""Each keyword hit's best chunk, scored in Python from the chunks' own text (issue 26).

Record-level hits show the chunk with the highest chunk-level BM25 (stores/sqlite/keyword.py
``best_chunks``). Asking FTS5 for it costs a query that scores every chunk holding a query word,
most of a keyword search's time once the ranking itself is fast. Here only the shown records'
chunks are scored: their text is tokenized by FTS5's own tokenizer (stores/fts5_tokens.py),
and BM25's collection statistics come from the chunk-level FTS5 table itself: N and the total
token count from its averages record (``fts_<C>_data`` row 1: SQLite varints, the row count
then each column's token total), a term's n(q) from the keyword sidecar's chunk frequencies
(counted from the same chunk texts at build; once the sidecar is caught up from the change log
they are not kept, bm25/delta.py), else, and a phrase's, from the snapshot's cached FTS5
counts (:class:`~semsearch.stores.sqlite.keyword.TermCounts`). Same formula as FTS5's ``bm25()``
(one column, weight 1), the same weightless-clause rule and the same ties (the first chunk),
so the same chunk as ``best_chunks`` to float tolerance.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence

from semsearch.bm25.delta import LivePostings
from semsearch.keyword_query import FTS5_IDF_FLOOR, K1, B
from semsearch.stores.fts5_tokens import PieceTokenizer
from semsearch.stores.sqlite.fts_stats import fts_totals
from semsearch.stores.sqlite.keyword import TermCounts
from semsearch.stores.sqlite.schema import fts_table
from semsearch.stores.sqlite.sql import Rows, batches, marks

__all__ = ["best_chunks_from_text"]


def _occurrences(tokens: list[str], phrase: tuple[str, ...]) -> int:
    """Start positions where ``phrase`` occurs in ``tokens`` (FTS5 counts each)."""
    m = len(phrase)
    return sum(1 for i in range(len(tokens) - m + 1) if tuple(tokens[i : i + m]) == phrase)


def best_chunks_from_text(
    rows: Rows,
    cid: int,
    tokenizer: PieceTokenizer,
    postings: LivePostings,
    clauses: Sequence[str],
    record_ids: Sequence[str],
    counts: TermCounts,
) -> dict[str, int]:
    """``{record id: chunk id}``: each record's chunk with the highest chunk-level FTS5 BM25
    for the quoted FTS5 ``clauses`` (``porter`` collections: the query's scoring clauses),
    ties to the first chunk; records with no chunk matching on its own are left out. Same
    answer as ``semsearch.stores.sqlite.keyword.best_chunks``."""
    clauses = list(clauses)
    if not clauses or not record_ids:
        return {}
    n_chunks, totals = fts_totals(rows, fts_table(cid))
    if n_chunks <= 0:
        return {}
    inner = {c: c[1:-1].replace('""', '"') for c in clauses}
    phrases = {c: tuple(tokenizer.terms(t)) for c, t in inner.items()}
    hits = {}  # n(q): a term's from the sidecar, else (a phrase, or caught up) by FTS5, cached
    for c, t in phrases.items():
        found = postings.chunk_hits(t[0]) if len(t) == 1 else None
        hits[c] = found if found is not None else counts.hits(rows, cid, "chunk", c)
    if len(clauses) > 1:  # as best_chunks: weightless clauses out, unless all are
        clauses = [c for c in clauses if 2 * hits[c] < n_chunks] or clauses
    idf = {}
    for c in clauses:
        value = math.log((n_chunks - hits[c] + 0.5) / (hits[c] + 0.5))
        idf[c] = value if value > 0 else FTS5_IDF_FLOOR
    avgdl = (sum(totals) / n_chunks) or 1.0
    best: dict[str, tuple[float, int]] = {}
    for record_id, chunk_id, chunk_text in _chunks(rows, cid, record_ids):
        tokens = tokenizer.terms(chunk_text)
        tf = Counter(tokens)
        norm = K1 * (1 - B + B * len(tokens) / avgdl)
        score = 0.0
        for c in clauses:
            terms = phrases[c]
            f = tf[terms[0]] if len(terms) == 1 else _occurrences(tokens, terms) if terms else 0
            score += idf[c] * (f * (K1 + 1)) / (f + norm)
        if score > 0 and (record_id not in best or score > best[record_id][0]):
            best[record_id] = (score, chunk_id)
    return {r: chunk for r, (_, chunk) in best.items()}


def _chunks(rows: Rows, cid: int, record_ids: Sequence[str]) -> list[tuple[str, int, str]]:
    """(record id, chunk id, chunk text) of the records' chunks, chunk ids ascending."""
    out: list[tuple[str, int, str]] = []
    for batch in batches(list(record_ids)):
        out += [
            (r[0], int(r[1]), r[2])
            for r in rows(
                "SELECT r.id, k.id, k.text FROM records r JOIN chunks k ON k.record_rowid = r.rowid "
                f"WHERE r.collection_id = ? AND r.id IN ({marks(batch)}) ORDER BY k.id",
                (cid, *batch),
            )
        ]
    return out
