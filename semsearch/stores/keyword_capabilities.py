"""Optional keyword capabilities of a store, beside the Store protocol (stores/base.py).

A caller checks for each with ``isinstance`` and does without it otherwise: the best chunk of a
record-level keyword hit, keyword scores that stay inside a filter, rebuilding a derived
keyword index before a one-shot process ends, and a note when a collection's keyword ranking is
not yet the record-level BM25 every store gives (data written by an earlier version).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from semsearch.filters import Filter
from semsearch.stores.base import ScoredChunk, Store, supports

__all__ = [
    "KeywordChunks",
    "KeywordIndexRefresh",
    "KeywordRankingNote",
    "ScopedKeyword",
    "keyword_ranking_note",
    "refresh_keyword_index",
]


@runtime_checkable
class ScopedKeyword(Protocol):
    """Optional store capability: keyword search whose statistics stay inside the filter.

    BM25 weighs a word by the records holding it (IDF) and a record's length by the average
    (avgdl); a store's ``keyword_search`` counts both over the whole collection. Here every
    score depends on the records ``where`` allows only, so records outside it never move a
    score (conversation memory: one user's messages per filter): SQLite and PostgreSQL count
    N, n(q) and avgdl over those records.
    Callers without it (or given None) compute the scores from the records inside ``where``.
    """

    def keyword_search_scoped(
        self, collection: str, text: str, k: int, where: Filter | None
    ) -> list[ScoredChunk] | None:
        """Top-k by a keyword score (> 0) computed from the records ``where`` allows only
        (BM25, semsearch/keyword_query.py, each query term once, one record each, its first
        chunk ``provisional``), best first, ties by id; [] when
        nothing matches there; None when the store cannot answer so right now (the caller
        computes it)."""
        ...


@runtime_checkable
class KeywordChunks(Protocol):
    """Optional store capability, declared by a store whose keyword search ranks whole records
    (its hits are ``provisional``): the chunk of each record that matches the query best."""

    def keyword_chunks(
        self, collection: str, text: str, record_ids: Sequence[str]
    ) -> dict[str, int]:
        """``{record id: chunk id}`` of the best-matching chunk (chunk-level BM25) of each
        record; records none of whose chunks match the query on their own are left out."""
        ...


@runtime_checkable
class KeywordIndexRefresh(Protocol):
    """Optional store capability, declared by a store with a derived keyword index beside its
    file (SQLite's keyword sidecar): rebuild it after writes, before a one-shot process ends."""

    def refresh_keyword_index(self, collection: str, wait: bool = True) -> None:
        """Bring the derived keyword index in step with the collection (``wait``: until built)."""
        ...


def refresh_keyword_index(store: Store, collection: str, wait: bool = True) -> None:
    """:meth:`KeywordIndexRefresh.refresh_keyword_index` when ``store`` has it, else nothing."""
    if supports(store, KeywordIndexRefresh):
        store.refresh_keyword_index(collection, wait)


@runtime_checkable
class KeywordRankingNote(Protocol):
    """Optional store capability, declared by a store that may still hold collections written
    by an earlier version, which it searches as that version did until a write (or
    ``semsearch compact``) migrates them (Milvus: chunk-level BM25 before layout 4;
    PostgreSQL: ``ts_rank_cd`` before its BM25 tables). Search adds the note to the result of
    a search whose keyword leg ran (keyword and hybrid modes)."""

    def keyword_ranking_note(self, collection: str) -> str | None:
        """One sentence saying which older ranking answers ``collection``'s keyword search and
        what moves it to the current one; None when record-level BM25 answers."""
        ...


def keyword_ranking_note(store: Store, collection: str) -> str | None:
    """:meth:`KeywordRankingNote.keyword_ranking_note` when ``store`` has it, else None."""
    if supports(store, KeywordRankingNote):
        return store.keyword_ranking_note(collection)
    return None
