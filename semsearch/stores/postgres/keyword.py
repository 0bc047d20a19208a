"""Keyword search of the PostgreSQL store: BM25 over whole records, as on every store.

:class:`PostgresKeyword` answers ``keyword_search`` (and the optional capabilities
:class:`~semsearch.stores.keyword_capabilities.ScopedKeyword`, ``KeywordChunks`` and
``KeywordRankingNote``) from the collection's BM25 tables (stores/postgres/bm25_index.py,
bm25_search.py). Query words become clauses as on SQLite
(:func:`semsearch.keyword_query.scoring_clauses`) and terms through FTS5's own tokenizer
(:class:`~semsearch.stores.fts5_tokens.PieceTokenizer`), so the same query ranks the same
records on both stores. A query holding CJK characters, or whose words match nothing, is
answered by a substring scan (:func:`semsearch.stores.query_rules.keyword_or_substring`).

A collection written by an earlier semsearch (no BM25 tables until its first write or
``semsearch compact``) is searched as before: chunks ranked by ``ts_rank_cd`` over
``websearch_to_tsquery('english', ...)``, and :meth:`PostgresKeyword.keyword_ranking_note`
says so.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from psycopg.errors import UndefinedTable

from semsearch.filters import Filter
from semsearch.keyword_query import scoring_clauses, stopword_list
from semsearch.stores.base import ScoredChunk
from semsearch.stores.fts5_tokens import PORTER, PieceTokenizer
from semsearch.stores.postgres import bm25_search
from semsearch.stores.postgres.bm25_index import IndexRow, RecordCounts, count_rows
from semsearch.stores.postgres.bm25_search import Part, Run, Snapshot, runner
from semsearch.stores.postgres.postings_cache import PostingsCache
from semsearch.stores.postgres.reads import PostgresReads
from semsearch.stores.postgres.search import keyword_scan, substring_scan
from semsearch.stores.postgres.sql import Tables, websearch_text
from semsearch.stores.query_rules import keyword_or_substring
from semsearch.stores.record_terms import clause_terms, term_weights

__all__ = ["OLD_RANKING_NOTE", "PostgresKeyword"]

#: The note of a search whose keyword leg an older collection's ranking answered.
OLD_RANKING_NOTE = (
    "keyword ranking: this collection was written by an earlier semsearch, so its keyword "
    "search still ranks chunks by PostgreSQL's ts_rank_cd, not BM25 over records as other "
    "stores do; its next write, or `semsearch compact`, moves it to BM25"
)


class PostgresKeyword(PostgresReads):
    """Keyword search over the store's BM25 tables (see the module docstring)."""

    def __init__(self, url: str, *, pool_size: int = 4, timeout: float = 10.0) -> None:
        super().__init__(url, pool_size=pool_size, timeout=timeout)
        self._tokenizer: PieceTokenizer | None = None
        self._tokens_lock = threading.Lock()
        #: names of collections seen with their BM25 tables (a collection never loses them;
        #: only an older semsearch could make another of that name without)
        self._bm25_names: set[str] = set()
        #: term postings of unfiltered searches, scored in numpy (postings_cache.py)
        self._postings = PostingsCache()

    @contextmanager
    def _tokens(self) -> Iterator[PieceTokenizer]:
        """The store's FTS5 ``porter`` tokenizer, held under its lock (it is not thread-safe)."""
        with self._tokens_lock:
            if self._tokenizer is None:
                self._tokenizer = PieceTokenizer(PORTER)
            yield self._tokenizer

    def _terms(self, texts: Sequence[str]) -> list[list[str]]:
        """The terms of each text (chunks of hits, whose terms the tokenizer keeps awhile)."""
        with self._tokens() as tokenizer:
            return tokenizer.shown_terms_of(texts)

    def _count(self, rows: Sequence[IndexRow]) -> list[RecordCounts]:
        """The rows' counts for the BM25 tables (bm25_index.count_rows)."""
        with self._tokens() as tokenizer:
            return count_rows(tokenizer, rows)

    def _parts(self, text: str, options: dict[str, Any], scoped: bool) -> list[Part]:
        """The query's scored clauses: each with its terms and weight, or (``scoped``) each
        term once with the largest weight of its clauses."""
        clauses = scoring_clauses(text, stopword_list(options))
        with self._tokens() as tokenizer:
            pairs = clause_terms(tokenizer, clauses)
        if scoped:
            weights, stops = term_weights(pairs)
            return [Part((term,), w, stops[term]) for term, w in weights.items()]
        return [Part(terms, clause.weight, clause.stop) for clause, terms in pairs]

    def _target(self, run: Run, collection: str) -> tuple[Tables, dict[str, Any], bool] | None:
        """(tables, options, has the BM25 tables) of ``collection``, or None when it is gone;
        ``run`` runs the lookup."""
        rows = run(
            "SELECT id, options, to_regclass(format('semsearch_c%%s_kw_stats', id)) IS NOT NULL "
            "FROM semsearch_collections WHERE name = %s",
            (collection,),
        )
        if not rows:
            return None
        if rows[0][2]:
            self._bm25_names.add(collection)
        return Tables(int(rows[0][0])), dict(rows[0][1]), bool(rows[0][2])

    @contextmanager
    def _snapshot(self) -> Iterator[Snapshot | None]:
        """A pooled connection's :class:`~semsearch.stores.postgres.bm25_search.Snapshot`,
        None before semsearch wrote to the database."""
        with self._conn() as conn:
            if not self._ready(conn):
                yield None
                return
            with Snapshot(conn) as snap:
                yield snap

    def _search(
        self, collection: str, text: str, k: int, where: Filter | None, scoped: bool
    ) -> list[ScoredChunk]:
        """:meth:`keyword_search` (``scoped``: :meth:`keyword_search_scoped`) in one snapshot:
        the transaction begun and the collection looked up in one round trip, the statistics
        read in one and the scores in one; [] when the collection is gone (or dropped
        meanwhile)."""
        try:
            with self._snapshot() as snap:
                found = None if snap is None else self._target(snap.first, collection)
                if snap is None or found is None:
                    return []
                t, options, bm25 = found
                if not bm25:
                    return self._old_keyword_search(snap.conn, t, text, k, where, options)

                def words(asked: str, n: int, scope: Filter | None) -> list[ScoredChunk]:
                    parts = self._parts(asked, options, scoped)
                    chunks = None if scoped else self._terms
                    return bm25_search.rank(
                        snap, t, parts, n, scope, scoped, chunks, self._postings
                    )

                if scoped:
                    return words(text, k, where)
                return keyword_or_substring(
                    text, lambda: words(text, k, where),
                    lambda pieces, cap: substring_scan(snap.conn, t, pieces, k, where, cap),
                    stopword_list(options), lambda word: self._holds(snap.conn, t, word, options),
                )  # fmt: skip
        except UndefinedTable:
            return []

    def _holds(self, conn: Any, t: Tables, word: str, options: dict[str, Any]) -> bool:
        """Whether some record of the collection holds a clause of ``word``: its document
        frequencies, read in one statement (ranking it, as before, cost two round trips and the
        scoring statement, on most long queries)."""
        parts = self._parts(word, options, scoped=False)
        return bool(parts) and any(bm25_search.read_statistics(runner(conn), t, parts).dfs)

    def keyword_search(
        self, collection: str, text: str, k: int, where: Filter | None
    ) -> list[ScoredChunk]:
        """Top-k records by BM25 (> 0, higher is better), best first, ties by record id, one
        each with its best chunk (chunk-level BM25; its first when none matches alone) and its
        keyword evidence; ``where`` applies before ranking. A query holding CJK characters,
        or whose words match nothing, or whose last word is being typed, is answered by a
        substring scan of chunks (scores >= 1, :func:`semsearch.keyword_text.scan_score`). A
        collection written by an earlier version ranks chunks by ``ts_rank_cd`` (>= 0) until
        its next write."""
        return self._search(collection, text, k, where, scoped=False)

    @staticmethod
    def _old_keyword_search(
        conn: Any, t: Tables, text: str, k: int, where: Filter | None, options: dict[str, Any]
    ) -> list[ScoredChunk]:
        """The ranking of collections written before the BM25 tables: chunks by ``ts_rank_cd``."""

        def words(asked: str, n: int, scope: Filter | None) -> list[ScoredChunk]:
            query = websearch_text(asked)
            return [] if query is None else keyword_scan(conn, t, query, n, scope)

        return keyword_or_substring(
            text,
            lambda: words(text, k, where),
            lambda pieces, cap: substring_scan(conn, t, pieces, k, where, cap),
            stopword_list(options),
            lambda word: bool(words(word, 1, None)),
        )

    def keyword_search_scoped(
        self, collection: str, text: str, k: int, where: Filter | None
    ) -> list[ScoredChunk] | None:
        """Top-k records by BM25 with N, n(q) and avgdl counted over the records ``where``
        allows only (see :class:`~semsearch.stores.keyword_capabilities.ScopedKeyword`): each
        query term once, with the largest weight of its clauses, no phrase scores, as SQLite's
        sidecar scores it. [] when no word of the query is held there (the caller then scans
        for substrings). A collection written by an earlier version answers as
        :meth:`keyword_search` (``ts_rank_cd`` uses no statistic of other records)."""
        return self._search(collection, text, k, where, scoped=True)

    def keyword_chunks(
        self, collection: str, text: str, record_ids: Sequence[str]
    ) -> dict[str, int]:
        """``{record id: chunk id}`` of each record's chunk that matches ``text`` best
        (chunk-level BM25, see :func:`semsearch.stores.postgres.bm25_search.best_chunks`);
        records with no matching chunk are left out. {} for an older collection (its hits
        are chunks already)."""
        if not record_ids:
            return {}
        with self._conn() as conn:
            found = self._target(runner(conn), collection) if self._ready(conn) else None
            if found is None or not found[2]:
                return {}
            t, options, _ = found
            parts = [Part(p.terms) for p in self._parts(text, options, scoped=False)]
            try:  # for display: no snapshot needed
                return bm25_search.best_chunks(conn, t, parts, record_ids, self._terms)
            except UndefinedTable:
                return {}

    def keyword_ranking_note(self, collection: str) -> str | None:
        """:data:`OLD_RANKING_NOTE` while ``collection`` (written by an earlier version) has no
        BM25 tables yet; None otherwise (see
        :class:`~semsearch.stores.keyword_capabilities.KeywordRankingNote`)."""
        if collection in self._bm25_names:
            return None
        with self._conn() as conn:
            if not self._ready(conn):
                return None
            found = self._target(runner(conn), collection)
        return OLD_RANKING_NOTE if found is not None and not found[2] else None
