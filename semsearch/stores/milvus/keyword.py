"""Keyword search of the Milvus store: record-level BM25 (layout 4), the substring scan, and
collections of earlier layouts until a write (or ``semsearch compact``) migrates them.

Layout 4 ranks as the SQLite store does (semsearch/keyword_query.py, bm25/postings.py): BM25
over whole records (title weight, phrase clauses, query weights, query-side stop words, Lucene's
IDF), from the process's keyword index (:mod:`semsearch.stores.milvus.keyword_index`,
:mod:`semsearch.stores.milvus.keyword_build`); a filter (and a path scope) becomes the set of
records it allows, read from Milvus, and applies before the top k, so a search returns
min(k, matching records) hits. Each hit is a record, with its first chunk, ``provisional``,
its keyword evidence and coverage; :func:`keyword_chunks` picks the chunk a shown hit shows.

A query holding CJK text, or one whose words match nothing (a word part such as ``blaz``) or
whose last word is being typed (``black blaz``), is answered by a substring scan of the chunks' casefolded text (``folded``), as the SQLite store
scans its chunks' text (:mod:`semsearch.keyword_text`): a piece is found as typed, never as its
stem, so ``eating`` does not find ``weather`` (its stem ``eat`` is inside it).

Layouts 1 to 3 (written by earlier versions, read as they are until a write migrates them):
Milvus' BM25 function over each chunk's snowball-stemmed ``terms`` ranks chunks, as before
(:func:`legacy_note` says so in every keyword result), and the substring scan reads ``text``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from semsearch.filters import Filter
from semsearch.keyword_query import scoring_clauses, stopword_list
from semsearch.stores.base import ScoredChunk
from semsearch.stores.milvus.access import MilvusAccess
from semsearch.stores.milvus.conn import translated
from semsearch.stores.milvus.keyword_build import current_index, read_matching
from semsearch.stores.milvus.keyword_columns import query_terms
from semsearch.stores.milvus.layout import HEADS, MAX_TOPK
from semsearch.stores.milvus.terms import keyword_terms
from semsearch.stores.query_rules import best_first, keyword_or_substring, scanned

__all__ = [
    "RECORD_LEVEL",
    "KeywordMethods",
    "keyword_chunks",
    "keyword_search",
    "keyword_search_scoped",
    "legacy_note",
]

#: The layout from which keyword search ranks records by semsearch's BM25.
RECORD_LEVEL = 4


def keyword_search(
    store: MilvusAccess, collection: str, text: str, k: int, where: Filter | None
) -> list[ScoredChunk]:
    """See :meth:`MilvusStore.keyword_search`."""
    store._settle(collection)  # a batch held back is committed first
    meta = store._meta_entry(collection)  # the cached row itself (read only): no copy
    if k <= 0 or meta is None:
        return []
    stop = stopword_list(meta.get("options", {}))
    if store.layout(collection) < RECORD_LEVEL:
        return _legacy(store, collection, text, k, where, stop)
    return keyword_or_substring(
        text,
        lambda: _ranked(store, collection, text, k, where, scoped=False),
        lambda pieces, cap: _substring_scan(store, collection, pieces, k, where, "folded", cap),
        stop,
        lambda word: bool(_ranked(store, collection, word, 1, None, scoped=False)),
    )


def keyword_search_scoped(
    store: MilvusAccess, collection: str, text: str, k: int, where: Filter | None
) -> list[ScoredChunk] | None:
    """See :meth:`MilvusStore.keyword_search_scoped`: None before layout 4."""
    store._settle(collection)
    if store._meta_entry(collection) is None:
        return []
    if store.layout(collection) < RECORD_LEVEL:
        return None
    return _ranked(store, collection, text, k, where, scoped=True)


def keyword_chunks(
    store: MilvusAccess, collection: str, text: str, record_ids: Sequence[str]
) -> dict[str, int]:
    """See :meth:`MilvusStore.keyword_chunks`."""
    meta = store._meta_entry(collection)
    if meta is None or store.layout(collection) < RECORD_LEVEL:
        return {}
    parts = query_terms(scoring_clauses(text, stopword_list(meta.get("options", {}))))
    index = current_index(store, collection)
    with index.lock:
        return index.best_chunks([ts for _, ts in parts], record_ids)


def legacy_note(store: MilvusAccess, collection: str) -> str | None:
    """The note of a keyword result ranked by an earlier layout's Milvus BM25, else None."""
    if store._meta_entry(collection) is None or store.layout(collection) >= RECORD_LEVEL:
        return None
    return (
        "keyword ranking: Milvus' chunk-level BM25 of a collection written by an earlier "
        "semsearch version; the first write or `semsearch compact` moves it to record-level "
        "BM25, the ranking of every other store"
    )


def _ranked(
    store: MilvusAccess, collection: str, text: str, k: int, where: Filter | None, scoped: bool
) -> list[ScoredChunk]:
    """Record-level BM25 from the keyword index (``scoped``: statistics within ``where``)."""
    meta = store._meta_entry(collection) or {}
    parts = query_terms(scoring_clauses(text, stopword_list(meta.get("options", {}))))
    if not parts:
        return []
    index = current_index(store, collection)
    allowed = None
    if where is not None:
        expr = store.filter_expr(where)
        allowed = (expr, lambda: _allowed_ids(store, collection, expr))
    with index.lock:
        return index.rank(parts, k, allowed, scoped)


def _allowed_ids(store: MilvusAccess, collection: str, expr: str) -> Iterable[str]:
    """The ids of the records a filter expression allows (their head rows)."""
    rows = read_matching(store, collection, f"{HEADS} and ({expr})", ["record_id"])
    return [r["record_id"] for r in rows]


#: LIKE's wildcards and escape, which Milvus Lite and a server escape differently.
_LIKE_SPECIAL = re.compile(r"[%_\\]")


def _substring_scan(
    store: MilvusAccess,
    collection: str,
    pieces: list[str],
    k: int,
    where: Filter | None,
    column: str,
    cap: int | None = None,
) -> list[ScoredChunk]:
    """Top-k chunks holding any of ``pieces`` (casefolded) in their casefolded text, of the
    first ``cap`` found (None: all), scored by
    :func:`~semsearch.keyword_text.scan_score`, best first, ties by record id, each with the
    share of the pieces it holds as its keyword evidence and coverage
    (:func:`~semsearch.stores.query_rules.scanned`). Milvus narrows the rows with LIKE on
    ``column`` (``folded``; layouts before 4: ``text``, where it is case-sensitive, so each
    piece is asked in lower, upper and title case); every row it returns is scored here."""
    if not pieces:
        return []
    likes = [_like(column, p, column != "folded") for p in pieces]
    expr = " or ".join(f"({x})" for x in likes) if all(likes) else "chunk_id >= 0"
    user = store.filter_expr(where)
    if user:
        expr = f"({expr}) and ({user})"
    fields = ["chunk_id", "record_id", "ordinal", column]
    rows = read_matching(store, collection, expr, fields, cap)
    return scanned(
        ((int(r["chunk_id"]), r["record_id"], int(r["ordinal"]), r[column]) for r in rows),
        pieces,
        k,
    )


def _like(column: str, piece: str, cased: bool) -> str:
    """A LIKE condition every row holding ``piece`` meets ('' when none can be written: the
    piece is all wildcard characters). Only the longest run of ``piece`` without LIKE's
    special characters is asked for (they escape differently on Lite and on a server)."""
    run = max(_LIKE_SPECIAL.split(piece), key=len)
    if not run:
        return ""
    forms = dict.fromkeys([run, run.upper(), run.title()] if cased else [run])
    return " or ".join(f'{column} like "%{_quoted(f)}%"' for f in forms)


def _quoted(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', '\\"')


def _legacy(
    store: MilvusAccess,
    collection: str,
    text: str,
    k: int,
    where: Filter | None,
    stop: frozenset[str],
) -> list[ScoredChunk]:
    """Layouts 1 to 3: Milvus' BM25 over chunks' snowball terms, as those versions ranked."""
    if not keyword_terms(text):
        return []

    def words(asked: str, n: int, scope: Filter | None) -> list[ScoredChunk]:
        terms = keyword_terms(asked)
        return _milvus_bm25(store, collection, terms, n, scope) if terms else []

    return keyword_or_substring(
        text,
        lambda: words(text, k, where),
        lambda pieces, cap: _substring_scan(store, collection, pieces, k, where, "text", cap),
        stop,
        lambda word: bool(words(word, 1, None)),
    )


def _milvus_bm25(
    store: MilvusAccess, collection: str, terms: str, k: int, where: Filter | None
) -> list[ScoredChunk]:
    """Milvus' BM25 function's top k chunks (Milvus Lite reports it as a negative distance, a
    server as the score: the absolute value is the BM25 score in both)."""
    found = store._coll(collection, "chunks")
    if found is None:
        return []
    client, name = found
    with translated("searching keywords"):
        res = client.search(
            name,
            data=[terms],
            anns_field="sparse",
            limit=min(k, MAX_TOPK),
            filter=store.filter_expr(where),
            output_fields=["record_id"],
            search_params={"metric_type": "BM25"},
        )
    hits = [
        ScoredChunk(int(h["chunk_id"]), h["entity"]["record_id"], abs(float(h["distance"])))
        for h in res[0]
    ]
    return best_first([h for h in hits if h.score > 0])


class KeywordMethods(MilvusAccess):
    """The keyword capabilities of :class:`~semsearch.stores.milvus.store.MilvusStore`
    (``KeywordChunks``, ``ScopedKeyword``, ``KeywordRankingNote``; see this module)."""

    def keyword_search(
        self, collection: str, text: str, k: int, where: Filter | None
    ) -> list[ScoredChunk]:
        """Top-k by keyword score, best first, ties by record id. Layout 4: records by
        semsearch's BM25 (> 0; the SQLite store's ranking), each with its first chunk
        (``provisional``), keyword evidence and coverage; a substring scan's chunks (scores
        >= 1, :func:`~semsearch.keyword_text.scan_score`) for CJK text, when no word matches,
        or when the last word is being typed. Earlier layouts: chunks by Milvus' BM25 (>= 0),
        until a write migrates them."""
        return keyword_search(self, collection, text, k, where)

    def keyword_search_scoped(
        self, collection: str, text: str, k: int, where: Filter | None
    ) -> list[ScoredChunk] | None:
        """As :meth:`keyword_search`, with BM25's N, n(q) and avgdl counted over the records
        ``where`` allows only (``ScopedKeyword``); None before layout 4 (the caller counts)."""
        return keyword_search_scoped(self, collection, text, k, where)

    def keyword_chunks(
        self, collection: str, text: str, record_ids: Sequence[str]
    ) -> dict[str, int]:
        """``{record id: chunk id}`` of each record's best chunk for ``text`` by chunk-level
        BM25 (FTS5's formula over the chunks' terms, ``KeywordChunks``)."""
        return keyword_chunks(self, collection, text, record_ids)

    def keyword_ranking_note(self, collection: str) -> str | None:
        """A note for keyword results ranked otherwise than by record-level BM25 (a
        collection of an earlier layout), else None (``KeywordRankingNote``)."""
        return legacy_note(self, collection)
