"""Conversation memory's keyword leg: scores from one user's messages, never from others'.

A store's keyword index holds every user's messages, and BM25 weighs a word by how many
documents hold it (IDF) and each document's length against the average (avgdl), both counted
over the whole index (SQLite's FTS5 and its sidecar, Milvus' BM25 function). So a user's
keyword scores would move with other users' words, and the score of a one-word query would
tell a user how many messages of other users hold that word (a rare name, a diagnosis).

Memory therefore scores word queries from the user's scope (the ``where`` filter) alone:

- SQLite counts BM25's statistics (N, n(q), avgdl) over the records inside the filter, from
  its keyword sidecar (:class:`~semsearch.stores.keyword_capabilities.ScopedKeyword`; no message is read).
- Milvus (layout 4) does the same from its keyword index in the process
  (semsearch/stores/milvus/keyword_index.py; no message is read).
- PostgreSQL counts them in the database, over the same records (its BM25 tables,
  stores/postgres/bm25_search.py; no message is read). A collection written by an earlier
  version, still ranked by ``ts_rank_cd``, scores each message on its own words.
- Otherwise (a Milvus collection of an earlier layout, until a write migrates it), and while
  SQLite's sidecar rebuilds, memory reads every message inside the scope, builds BM25 postings of those alone (:mod:`semsearch.bm25.postings`, words
  tokenized as SQLite's FTS5 table does: ``porter unicode61 remove_diacritics 2``) and scores
  the query's words there: the same scores as SQLite's.

BM25 is Robertson & Zaragoza's Okapi BM25 (2009) with FTS5's constants k1 = 1.2, b = 0.75; as
the stores do, words held by at least half of the messages are left out when the rest still
finds ``limit`` messages. A query word cut into several terms (``ADR-0042``) counts each term
on its own: the stores' extra phrase score (counted over the whole collection) is not given.
A query none of whose words matches (Chinese or Japanese text, a word part such as ``blaz``)
goes to the store's keyword search inside the same scope, which scans for substrings: those
scores count occurrences in each message and use no other message.

Cost (docs/benchmarks.md, "memory-keyword"): on SQLite and Milvus a few array operations over
the collection's postings (on Milvus plus one query for the ids of the scope's messages after
each write), on PostgreSQL two statements over its BM25 tables; on an old-layout Milvus
collection each keyword or hybrid search reads every message of the scope, linear in one
user's history. Other users' messages are never read.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from semsearch.bm25.delta import LivePostings, rank_clauses
from semsearch.bm25.postings import build_postings
from semsearch.collection import Collection
from semsearch.filters import parse_filter
from semsearch.keyword_query import scoring_clauses, stopword_list
from semsearch.results import Record
from semsearch.stores.base import supports
from semsearch.stores.fts5_tokens import PORTER, PieceTokenizer
from semsearch.stores.keyword_capabilities import ScopedKeyword

__all__ = ["PAGE", "KeywordHit", "keyword_by_reading", "keyword_messages"]

#: Messages read per store call while collecting a user's scope (``Collection.find``'s
#: largest page: Milvus scans the whole scope for every page, so few pages keep it linear).
PAGE = 10_000


@dataclass(frozen=True)
class KeywordHit:
    """One message found by its words: its id, its score (BM25 > 0 inside the user's scope, or
    a substring scan's score >= 1, :func:`semsearch.keyword_text.scan_score`), and its keyword
    evidence and coverage as :class:`~semsearch.stores.base.ScoredChunk` defines them (a
    scan's: the share of the query's pieces held)."""

    id: str
    score: float
    evidence: float | None = None
    coverage: float | None = None


_tokenizer: PieceTokenizer | None = None
_lock = threading.Lock()  # PieceTokenizer is not thread-safe; it is cheap next to the scan


def keyword_messages(
    collection: Collection, query: str, limit: int, where: Mapping[str, Any]
) -> list[KeywordHit]:
    """The best ``limit`` messages inside ``where`` for ``query``'s words, best first, ties by
    message id. Scores: BM25 > 0 from the messages inside ``where`` only (the module
    docstring); for a query whose words match nothing there, the store's keyword search
    inside ``where`` (a substring scan's score >= 1). Hits carry the message id, score and
    keyword evidence only: memory reads the messages afterwards.

    Raises:
        InvalidQuery: from the store's keyword search (e.g. a bad ``where``).
    """
    store = collection.store
    if supports(store, ScopedKeyword):  # the store scores inside the filter
        hits = _from_store(store, collection, query, limit, where)
        if hits is not None:
            return hits or _scanned(collection, query, limit, where)
    return keyword_by_reading(collection, query, limit, where)


def _scanned(
    collection: Collection, query: str, limit: int, where: Mapping[str, Any]
) -> list[KeywordHit]:
    """The store's own keyword search inside ``where`` (a query no word of which matches:
    the substring scan), every hit kept (memory applies its own floor)."""
    found = collection.search(query, mode="keyword", limit=limit, where=where, min_score=None)
    return [KeywordHit(h.id, h.score) for h in found.hits]


def _from_store(
    store: ScopedKeyword,
    collection: Collection,
    query: str,
    limit: int,
    where: Mapping[str, Any],
) -> list[KeywordHit] | None:
    """The store's scoped ranking, one hit per message (a store ranking chunks, such as an
    older PostgreSQL collection, may return a long message several times: its best chunk
    counts), asking deeper until ``limit`` messages are found or the store has no more; None
    when the store cannot answer now."""
    ast = parse_filter(where, collection.schema)
    k = limit
    while True:
        scored = store.keyword_search_scoped(collection.name, query, k, ast)
        if scored is None:
            return None
        best: dict[str, KeywordHit] = {}
        for s in scored:  # best first, so a message's first chunk is its best
            best.setdefault(s.record_id, KeywordHit(s.record_id, s.score, s.evidence, s.coverage))
        if len(best) >= limit or len(scored) < k:
            return list(best.values())[:limit]
        k *= 4


def keyword_by_reading(
    collection: Collection, query: str, limit: int, where: Mapping[str, Any]
) -> list[KeywordHit]:
    """:func:`keyword_messages` by reading every message inside ``where`` (any store; the
    path when the store cannot count inside a filter). The same scores as SQLite's sidecar
    to within rounding (sums in another order): two messages whose scores tie exactly may
    come in the other order."""
    messages = list(_scope(collection, where))
    clauses = scoring_clauses(query, stopword_list(collection.info.options))
    with _lock:
        tokenizer = _shared_tokenizer()
        weights: dict[str, float] = {}  # each term once, with its clause's query weight
        stops: dict[str, bool] = {}
        for clause in clauses:
            for term in tokenizer.terms(clause.text):
                weights[term] = max(weights.get(term, 0.0), clause.weight)
                stops[term] = stops.get(term, True) and clause.stop
        postings = LivePostings(
            build_postings(((i, "", m.text) for i, m in enumerate(messages)), tokenizer)
        )
    ranked = _ranked(postings, weights, stops, limit)
    if not ranked:
        return _scanned(collection, query, limit, where)
    return [
        KeywordHit(messages[i].id, score, evidence, coverage)
        for i, score, evidence, coverage in sorted(
            ranked, key=lambda p: (-p[1], messages[p[0]].id)
        )[:limit]
    ]


def _ranked(
    postings: LivePostings, weights: dict[str, float], stops: dict[str, bool], limit: int
) -> list[tuple[int, float, float, float]]:
    """(message position, BM25 > 0, evidence, coverage) of the best ``limit`` messages holding
    a term, each term with its query weight (``stops``: the stop words a query of stop words
    only keeps)."""
    if not any(postings.df(t) for t in weights):
        return []
    positions, scores, _, evidence, coverage = rank_clauses(
        postings, list(weights), list(weights.values()), limit, None, list(stops.values())
    )
    found = zip(positions, scores, evidence, coverage, strict=True)
    return [(int(p), float(s), float(e), float(c)) for p, s, e, c in found if s > 0]


def _scope(collection: Collection, where: Mapping[str, Any]) -> Iterator[Record]:
    """Every message inside ``where``, each once (pages in message order)."""
    seen: set[str] = set()
    offset = 0
    while True:
        page = collection.find(
            where, limit=PAGE, offset=offset, order_by=["conversation_id", "message_index"]
        )
        for record in page:
            if record.id not in seen:  # a write between pages may shift one
                seen.add(record.id)
                yield record
        if len(page) < PAGE:
            return
        offset += PAGE


def _shared_tokenizer() -> PieceTokenizer:
    global _tokenizer
    if _tokenizer is None:
        _tokenizer = PieceTokenizer(PORTER)
    return _tokenizer
