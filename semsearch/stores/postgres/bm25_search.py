"""Keyword search over PostgreSQL's BM25 tables: statistics, one scoring statement, evidence,
and the chunk a record-level hit shows.

A search reads, in one REPEATABLE READ snapshot (the caller's transaction), first the
collection's totals (N, total length) with the document frequencies of the query's clauses
(single terms from ``kw_df``, phrases counted from their positions), then runs the one scoring
statement (:func:`semsearch.stores.postgres.bm25_sql.score_sql`) with the filter inside, so a
filtered search returns min(k, matching records), best first, ties by record id. Scores,
keyword evidence and coverage are the SQLite store's (semsearch/bm25/delta.py
``rank_clauses``), from the same terms, to float rounding (sums in another order).

Each hit shows the chunk with the best chunk-level BM25 (:func:`choose_chunks`, as
semsearch/bm25/chunks.py picks it on SQLite), chosen from the texts the scoring statement
returns for the winners, so a search needs no second query for it.

*Scoped* searches (conversation memory, :class:`~semsearch.stores.keyword_capabilities.ScopedKeyword`)
count N, n(q) and avgdl over the records the filter allows only, and score each term of the
clauses once with the largest weight of its clauses, without phrase scores, as SQLite's
sidecar does (``KeywordSidecar.rank(..., scoped=True)``); their hits keep their first chunk.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from semsearch.filters import Filter
from semsearch.keyword_query import evidence_clauses, idf
from semsearch.stores.base import ScoredChunk
from semsearch.stores.postgres.bm25_memory import score_postings
from semsearch.stores.postgres.bm25_sql import phrase_sql, ranked_sql, score_sql, statistics_sql
from semsearch.stores.postgres.postings_cache import (
    PostingsCache,
    TermPostings,
    fetch_postings,
    term_postings,
)
from semsearch.stores.postgres.sql import Tables, where_sql
from semsearch.stores.record_terms import best_chunk

__all__ = [
    "Part",
    "Run",
    "Snapshot",
    "Statistics",
    "Terms",
    "best_chunks",
    "choose_chunks",
    "rank",
    "read_statistics",
    "runner",
]

#: Tokenizes texts (the store's tokenizer): one list of terms per text.
Terms = Callable[[Sequence[str]], list[list[str]]]


@dataclass(frozen=True)
class Part:
    """One scored clause: its terms (one: a term; several: a phrase), query weight (> 0), and
    whether it is a stop word (a query of stop words only keeps them; they are no evidence)."""

    terms: tuple[str, ...]
    weight: float = 1.0
    stop: bool = False


@dataclass(frozen=True)
class Statistics:
    """What BM25 needs of the records it is computed over, for one query's parts.

    Attributes:
        records, length: N and their tokens (avgdl = length / records).
        chunks, chunk_len: their chunks and the chunks' tokens (0 when scoped).
        dfs: n(q) of each part (a phrase: records holding it; 0 when scoped).
        chunk_dfs: chunks holding each part (a phrase: records holding it); empty when scoped.
        generation: the postings' generation (stores/postgres/postings_cache.py); None when
            scoped.
    """

    records: int
    length: int
    chunks: int
    chunk_len: int
    dfs: list[int]
    chunk_dfs: list[int]
    generation: str | None = None

    @property
    def avgdl(self) -> float:
        """Mean record length in tokens (1.0 for an empty collection)."""
        return (self.length / self.records if self.records else 0.0) or 1.0


#: Runs one statement with its params and returns its rows.
Run = Callable[[str, Sequence[Any]], list[Any]]


def runner(conn: Any) -> Run:
    """A :data:`Run` on ``conn`` as it is (autocommit, or inside its open transaction)."""
    return lambda sql, params: list(conn.execute(sql, params).fetchall())


class Snapshot:
    """One read-only REPEATABLE READ transaction on an autocommit connection, so statistics
    and scores agree whatever other writers commit meanwhile. Its ``BEGIN`` travels with its
    first statement (:meth:`first`) and its ``ROLLBACK`` (it only reads) with its last
    (:meth:`last`), in psycopg's pipeline mode, so a search pays no round trip for the
    transaction. Use it as a context manager (``with
    Snapshot(conn) as snap``): leaving it ends the transaction if :meth:`last` did not."""

    _BEGIN = "BEGIN ISOLATION LEVEL REPEATABLE READ, READ ONLY"

    def __init__(self, conn: Any) -> None:
        self.conn = conn

    def __enter__(self) -> Snapshot:
        return self

    def __exit__(self, *exc: object) -> None:
        if self._open():
            self.conn.execute("ROLLBACK")

    def _open(self) -> bool:
        from psycopg.pq import TransactionStatus

        return bool(self.conn.info.transaction_status != TransactionStatus.IDLE)

    def first(self, sql: str, params: Sequence[Any]) -> list[Any]:
        """Run ``sql`` in the transaction, beginning it if it was not; its rows."""
        if self._open():
            return list(self.conn.execute(sql, params).fetchall())
        with self.conn.pipeline():
            self.conn.execute(self._BEGIN)
            cur = self.conn.execute(sql, params)
        return list(cur.fetchall())

    def last(self, sql: str, params: Sequence[Any]) -> list[Any]:
        """Run ``sql`` and end the transaction; its rows."""
        with self.conn.pipeline():
            cur = self.conn.execute(sql, params)
            self.conn.execute("ROLLBACK")
        return list(cur.fetchall())


def read_statistics(
    run: Run, t: Tables, parts: Sequence[Part], where: Filter | None = None
) -> Statistics:
    """The :class:`Statistics` of ``parts``, in one statement: the collection's (``kw_stats``,
    ``kw_df``), or with ``where`` those of the records it allows (single terms only)."""
    terms = [p.terms[0] for p in parts if len(p.terms) == 1]
    phrases = [p.terms for p in parts if len(p.terms) > 1]
    if where is None:
        sql = statistics_sql(t, [len(p) for p in phrases], None)
        params: list[Any] = [terms, terms]
        for p in phrases:
            params += [sorted(set(p)), len(set(p)), *p[1:], p[0]]
    else:
        (r_sql, r_params), (s_sql, s_params) = where_sql(where, "r"), where_sql(where, "s")
        sql = statistics_sql(t, [], (r_sql, s_sql))
        params = [*s_params, terms, *r_params]
    records, length, chunks, chunk_len, term_dfs, chunk_dfs, phrase_dfs, generation = run(
        sql, params
    )[0]

    def per_part(single: Sequence[int], several: Sequence[int]) -> list[int]:
        a, b = iter(single), iter(several)
        return [int(next(a)) if len(p.terms) == 1 else int(next(b, 0)) for p in parts]

    return Statistics(
        int(records), int(length), int(chunks), int(chunk_len),
        per_part(term_dfs, phrase_dfs), per_part(chunk_dfs, phrase_dfs) if where is None else [],
        generation,
    )  # fmt: skip


def _score_statement(
    t: Tables, parts: Sequence[Part], wi: Sequence[float], ev: Sequence[float],
    stats: Statistics, where: Filter | None, k: int, texts: bool,
) -> tuple[str, list[Any]]:  # fmt: skip
    """(sql, params) of :func:`~semsearch.stores.postgres.bm25_sql.score_sql` for the parts
    some record holds, with their ``wi`` (query weight x IDF) and evidence weight ``ev``."""
    held = [i for i, n in enumerate(stats.dfs) if n > 0]
    single = [i for i in held if len(parts[i].terms) == 1]
    phrases = [i for i in held if len(parts[i].terms) > 1]
    params: list[Any] = [
        [parts[i].terms[0] for i in single],
        [wi[i] for i in single],
        [ev[i] for i in single],
        stats.avgdl,
    ]
    for i in phrases:
        params += [wi[i], ev[i], *parts[i].terms[1:], parts[i].terms[0]]
    filtered = None
    if where is not None:
        filtered, filter_params = where_sql(where)
        params += filter_params
    else:
        params.append(k)
    sql = score_sql(t, [len(parts[i].terms) for i in phrases], filtered, texts)
    return sql, [*params, k]


def rank(
    snap: Snapshot,
    t: Tables,
    parts: Sequence[Part],
    k: int,
    where: Filter | None,
    scoped: bool,
    terms_of: Terms | None = None,
    cache: PostingsCache | None = None,
) -> list[ScoredChunk]:
    """The top ``k`` records for ``parts``, best first, ties by record id: BM25 (> 0) with
    keyword evidence and coverage. Statistics over the whole collection, or over the records
    ``where`` allows when ``scoped``; the ranking keeps only records ``where`` allows either
    way. With ``terms_of`` (not scoped) each hit shows its best chunk (:func:`choose_chunks`;
    its first when none matches alone), else its first chunk, ``provisional``. [] when no
    record holds any part.

    Without ``where``, with ``cache``, the records are scored in numpy from the parts'
    postings (bm25_memory.py; single terms' postings kept in ``cache``, phrases' counted in
    SQL), else by the one SQL statement of bm25_sql.py: the same ranking, to float rounding."""
    stats = read_statistics(snap.first, t, parts, where if scoped else None)
    if k <= 0 or not any(stats.dfs):
        return []
    idfs = [idf(stats.records, n) for n in stats.dfs]
    wi = [p.weight * v for p, v in zip(parts, idfs, strict=True)]
    chosen = set(evidence_clauses(idfs, stats.dfs, [p.stop for p in parts]))
    reference = sum(wi[i] for i in chosen)
    ev = [wi[i] if i in chosen and reference > 0 else 0.0 for i in range(len(parts))]
    choose = terms_of is not None and not scoped
    if where is None and cache is not None and stats.generation is not None:
        lists = _postings(snap, t, parts, stats, cache)
        rids, scores, evidence, coverage = score_postings(lists, wi, ev, k)
        params = [rids.tolist(), scores.tolist(), evidence.tolist(), coverage.tolist(), k]
        rows = snap.last(ranked_sql(t, choose), params)
    else:
        sql, params = _score_statement(t, parts, wi, ev, stats, where, k, choose)
        rows = snap.last(sql, params)
    rows = [r for r in rows if r[4]]  # a record without chunks has nothing to show
    shown = {}
    if choose and terms_of is not None:  # a record of one chunk shows it: no choice to make
        texts = {r[0]: list(zip(r[4], r[5], strict=True)) for r in rows if len(r[4]) > 1}
        shown = choose_chunks(parts, stats, texts, terms_of)
    return [
        ScoredChunk(
            shown.get(rid, int(ids[0])), rid, float(score), not choose,
            evidence / reference if reference > 0 else 0.0,
            coverage / reference if reference > 0 else 0.0,
        )
        for rid, score, evidence, coverage, ids, _ in rows
    ]  # fmt: skip


def _postings(
    snap: Snapshot, t: Tables, parts: Sequence[Part], stats: Statistics, cache: PostingsCache
) -> list[TermPostings]:
    """Each part's postings in ``snap``: single terms from ``cache`` or read (and then kept),
    phrases counted by :func:`~semsearch.stores.postgres.bm25_sql.phrase_sql`."""
    assert stats.generation is not None
    empty = TermPostings(np.zeros(0, np.int64), np.zeros(0, np.float64))
    held = [p.terms[0] for p, n in zip(parts, stats.dfs, strict=True) if n and len(p.terms) == 1]
    found = cache.get(t.kw_terms, stats.generation, held)
    missing = sorted(set(held) - set(found))
    if missing:
        read = fetch_postings(snap.first, t, missing, stats.avgdl)
        cache.put(t.kw_terms, stats.generation, read)
        found.update(read)
    lists = []
    for part, n in zip(parts, stats.dfs, strict=True):
        if not n:
            lists.append(empty)
        elif len(part.terms) == 1:
            lists.append(found.get(part.terms[0], empty))
        else:
            sql = phrase_sql(t, len(part.terms)) + " ORDER BY rid"
            rows = snap.first(sql, [*part.terms[1:], part.terms[0]])
            columns = np.asarray(rows, np.float64).reshape(-1, 3)  # rid, len, f
            lists.append(
                term_postings(
                    columns[:, 0].astype(np.int64), columns[:, 2], columns[:, 1], stats.avgdl
                )
            )
    return lists


def choose_chunks(
    parts: Sequence[Part],
    stats: Statistics,
    chunks: Mapping[str, Sequence[tuple[int, str]]],
    terms_of: Terms,
) -> dict[str, int]:
    """``{record id: chunk id}``: among each record's ``(chunk id, text)`` (ids ascending),
    the chunk with the highest chunk-level BM25 for ``parts`` (FTS5's ``bm25()`` of the
    chunk-level table, as the SQLite store picks it: semsearch/bm25/chunks.py), ties to the
    first chunk; records none of whose chunks holds a part are left out. N, avgdl and a
    term's n(q) are the collection's chunk counts; a phrase's n(q) is the number of records
    holding it (chunks are not indexed by position). Parts held by half of the chunks or more
    are left out unless all are, as SQLite does."""
    if not parts or stats.chunks <= 0:
        return {}
    phrases = [part.terms for part in parts]
    avgdl = (stats.chunk_len / stats.chunks) or 1.0
    rows = [(record_id, int(c), text) for record_id, pairs in chunks.items() for c, text in pairs]
    tokens_of: dict[str, list[tuple[int, Sequence[str]]]] = {}
    for (record_id, chunk_id, _), tokens in zip(rows, terms_of([r[2] for r in rows]), strict=True):
        tokens_of.setdefault(record_id, []).append((chunk_id, tokens))
    chosen = {
        record_id: best_chunk(pairs, phrases, stats.chunk_dfs, stats.chunks, avgdl)
        for record_id, pairs in tokens_of.items()
    }
    return {record_id: chunk_id for record_id, chunk_id in chosen.items() if chunk_id is not None}


def best_chunks(
    conn: Any, t: Tables, parts: Sequence[Part], record_ids: Sequence[str], terms_of: Terms
) -> dict[str, int]:
    """:func:`choose_chunks` for records named by id (their chunks read here), with the
    collection's statistics."""
    if not parts or not record_ids:
        return {}
    rows = conn.execute(
        f"SELECT r.id, c.id, c.text FROM {t.chunks} c JOIN {t.records} r ON r.rid = c.record_rid "
        "WHERE r.id = ANY(%s) ORDER BY c.id",
        (list(record_ids),),
    ).fetchall()
    chunks: dict[str, list[tuple[int, str]]] = {}
    for record_id, chunk_id, text in rows:
        chunks.setdefault(record_id, []).append((int(chunk_id), text))
    stats = read_statistics(runner(conn), t, parts)
    return choose_chunks(parts, stats, chunks, terms_of)
