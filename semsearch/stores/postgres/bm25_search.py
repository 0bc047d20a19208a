"""Keyword search over PostgreSQL's BM25 tables: statistics, one scoring statement, evidence,
and the chunk a record-level hit shows.

A search reads, in one REPEATABLE READ snapshot (the caller's transaction): the collection's
totals (N, total length), then the document frequencies of the query's clauses (single terms
from ``kw_df``, phrases counted from their positions), then runs the one scoring statement
(:func:`semsearch.stores.postgres.bm25_sql.score_sql`) with the filter inside, so a filtered
search returns min(k, matching records). Scores, ties, keyword evidence and coverage are the
SQLite store's (semsearch/bm25/delta.py ``rank_clauses``), from the same terms.

*Scoped* searches (conversation memory, :class:`~semsearch.stores.keyword_capabilities.ScopedKeyword`)
count N, n(q) and avgdl over the records the filter allows only, and score each term of the
clauses once with the largest weight of its clauses, without phrase scores, as SQLite's
sidecar does (``KeywordSidecar.rank(..., scoped=True)``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from semsearch.filters import Filter
from semsearch.keyword_query import fts5_idf, idf, keyword_evidence, term_part
from semsearch.stores.base import ScoredChunk
from semsearch.stores.postgres.bm25_sql import phrase_sql, score_sql
from semsearch.stores.postgres.sql import Tables, where_sql
from semsearch.stores.record_terms import chunk_score

__all__ = ["Part", "Totals", "best_chunks", "rank", "read_dfs", "read_totals", "snapshot"]


@dataclass(frozen=True)
class Part:
    """One scored clause: its terms (one: a term; several: a phrase) and query weight (> 0)."""

    terms: tuple[str, ...]
    weight: float = 1.0


@dataclass(frozen=True)
class Totals:
    """Counts of the records BM25 is computed over: N, their tokens, their chunks and the
    chunks' tokens (the chunk counts are 0 for scoped totals, which never need them)."""

    records: int
    length: int
    chunks: int = 0
    chunk_len: int = 0

    @property
    def avgdl(self) -> float:
        """Mean record length in tokens (1.0 for an empty collection)."""
        return (self.length / self.records if self.records else 0.0) or 1.0


def snapshot(conn: Any) -> None:
    """Make the transaction ``conn`` just began one read-only snapshot (REPEATABLE READ):
    statistics and scores then agree whatever other writers commit meanwhile."""
    conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")


def read_totals(conn: Any, t: Tables, where: Filter | None = None) -> Totals:
    """The collection's totals (``kw_stats``), or with ``where`` those of the records it
    allows (counted, no chunk counts)."""
    if where is None:
        row = conn.execute(f"SELECT records, len, chunks, chunk_len FROM {t.kw_stats}").fetchone()
        return Totals(*(int(v) for v in row))
    sql, params = where_sql(where)
    row = conn.execute(
        f"SELECT count(*), coalesce(sum(d.len), 0) FROM {t.records} r "
        f"LEFT JOIN {t.kw_docs} d ON d.record_rid = r.rid WHERE ({sql})",
        params,
    ).fetchone()
    return Totals(int(row[0]), int(row[1]))


def read_dfs(
    conn: Any, t: Tables, parts: Sequence[Part], where: Filter | None = None, chunk: bool = False
) -> list[int]:
    """n(q) of each part: records holding it (``chunk``: chunks holding a term; a phrase
    counts the records holding it); with ``where``, among the records it allows (single
    terms only: a phrase counts 0)."""
    terms = sorted({p.terms[0] for p in parts if len(p.terms) == 1})
    if where is None:
        column = "chunk_df" if chunk else "df"
        rows = conn.execute(
            f"SELECT term, {column} FROM {t.kw_df} WHERE term = ANY(%s)", (terms,)
        ).fetchall()
    else:
        sql, params = where_sql(where)
        rows = conn.execute(
            f"SELECT k.term, count(*) FROM {t.kw_terms} k JOIN {t.records} r "
            f"ON r.rid = k.record_rid WHERE k.term = ANY(%s) AND ({sql}) GROUP BY k.term",
            (terms, *params),
        ).fetchall()
    found = {r[0]: int(r[1]) for r in rows}
    out = []
    for p in parts:
        if len(p.terms) == 1:
            out.append(found.get(p.terms[0], 0))
        elif where is not None:
            out.append(0)
        else:
            sql = f"SELECT count(*) FROM ({phrase_sql(t, len(p.terms))}) AS x"
            out.append(int(conn.execute(sql, (*p.terms[1:], p.terms[0])).fetchone()[0]))
    return out


def rank(
    conn: Any, t: Tables, parts: Sequence[Part], k: int, where: Filter | None, scoped: bool
) -> list[ScoredChunk]:
    """The top ``k`` records for ``parts``, best first, ties by record id: BM25 (> 0) with
    keyword evidence and coverage, each with its first chunk, ``provisional``. Statistics
    over the whole collection, or over the records ``where`` allows when ``scoped``; the
    ranking keeps only records ``where`` allows either way. Run it inside a transaction
    begun with :func:`snapshot`. [] when no record holds any part."""
    totals = read_totals(conn, t, where if scoped else None)
    dfs = read_dfs(conn, t, parts, where if scoped else None)
    idfs = [idf(totals.records, n) for n in dfs]
    held = [i for i, n in enumerate(dfs) if n > 0]
    if not held or k <= 0:
        return []
    single = [i for i in held if len(parts[i].terms) == 1]
    params: list[Any] = [
        [parts[i].terms[0] for i in single],
        single,
        [parts[i].weight * idfs[i] for i in single],
    ]
    phrases = [i for i in held if len(parts[i].terms) > 1]
    for i in phrases:
        params += [i, parts[i].weight * idfs[i], *parts[i].terms[1:], parts[i].terms[0]]
    params.append(totals.avgdl)
    filtered = None
    if where is not None:
        filtered, filter_params = where_sql(where)
        params += filter_params
    else:
        params.append(k - 1)
    sql = score_sql(t, [len(parts[i].terms) for i in phrases], filtered)
    rows = conn.execute(sql, (*params, k)).fetchall()
    weights = [p.weight for p in parts]
    hits = []
    for record_id, score, ords, fs, length, first in rows:
        if first is None:  # a record without chunks has nothing to show
            continue
        f_of = dict(zip(ords, fs, strict=True))
        part = [term_part(f_of.get(i, 0.0), length, totals.avgdl) for i in range(len(parts))]
        evidence, coverage = keyword_evidence(weights, idfs, dfs, part)
        hits.append(ScoredChunk(int(first), record_id, float(score), True, evidence, coverage))
    return hits


def best_chunks(
    conn: Any,
    t: Tables,
    parts: Sequence[Part],
    record_ids: Sequence[str],
    terms_of: Callable[[Sequence[str]], list[list[str]]],
) -> dict[str, int]:
    """``{record id: chunk id}``: each record's chunk with the highest chunk-level BM25 for
    ``parts`` (FTS5's ``bm25()`` of the chunk-level table, as the SQLite store picks it:
    semsearch/bm25/chunks.py), ties to the first chunk; records none of whose chunks holds a
    part are left out. N, avgdl and a term's n(q) are the collection's chunk counts; a
    phrase's n(q) is the number of records holding it (chunks are not indexed by position).
    ``terms_of`` tokenizes texts (the store's tokenizer). Parts held by half of the chunks or
    more are left out unless all are, as SQLite does."""
    if not parts or not record_ids:
        return {}
    totals = read_totals(conn, t)
    if totals.chunks <= 0:
        return {}
    hits = read_dfs(conn, t, parts, chunk=True)
    keep = list(range(len(parts)))
    if len(parts) > 1:
        keep = [i for i in keep if 2 * hits[i] < totals.chunks] or keep
    phrases = [parts[i].terms for i in keep]
    idfs = [fts5_idf(totals.chunks, hits[i]) for i in keep]
    avgdl = (totals.chunk_len / totals.chunks) or 1.0
    rows = conn.execute(
        f"SELECT r.id, c.id, c.text FROM {t.chunks} c JOIN {t.records} r ON r.rid = c.record_rid "
        "WHERE r.id = ANY(%s) ORDER BY c.id",
        (list(record_ids),),
    ).fetchall()
    best: dict[str, tuple[float, int]] = {}
    for (record_id, chunk_id, _), tokens in zip(rows, terms_of([r[2] for r in rows]), strict=True):
        score = chunk_score(tokens, phrases, idfs, avgdl)
        if score > 0 and (record_id not in best or score > best[record_id][0]):
            best[record_id] = (score, int(chunk_id))
    return {record_id: chunk_id for record_id, (_, chunk_id) in best.items()}
