"""What every store does the same way when it answers a query: the order of its hits, the
dimension check of a query vector, and the keyword leg's fallback to a substring scan.

Backends call these so that the rules of the Store protocol (:mod:`semsearch.stores.base`:
"best first, ties by record id"; ``DimensionMismatch`` for a query of another dimension; the
CJK, no-match and word-being-typed fallback of :mod:`semsearch.keyword_text`, and the scan's
ranking) are written once.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterable, Iterator, Sequence

import numpy as np
from numpy.typing import NDArray

from semsearch.errors import DimensionMismatch
from semsearch.keyword_text import WORD_START, has_cjk, scan_score, substring_pieces
from semsearch.stores.base import ScoredChunk

__all__ = [
    "PROBE_ROWS",
    "ScanRow",
    "best_first",
    "check_query_dim",
    "keyword_or_substring",
    "paged",
    "partial_last_word",
    "scanned",
]

#: Chunks read, at most, to see whether a last word begins a word of the text: a word being
#: typed begins words in most chunks holding it; reading them all cost 0.3 s for ``prot`` on
#: SciFact. Missing one beyond this keeps BM25's answer.
PROBE_ROWS = 256
#: Chunks a scan reads per query (:func:`paged`).
SCAN_PAGE = 1000
#: A chunk a substring scan read: (chunk id, record id, ordinal, text).
ScanRow = tuple[int, str, int, str]


def best_first(hits: Iterable[ScoredChunk]) -> list[ScoredChunk]:
    """``hits`` by score, highest first; ties by record id, then chunk id (deterministic)."""
    return sorted(hits, key=lambda h: (-h.score, h.record_id, h.chunk_id))


def check_query_dim(collection: str, dim: int | None, vector: NDArray[np.float32]) -> None:
    """Refuse a query vector (float32[d]) of another dimension than the collection's ``dim``
    (None: the collection holds no vectors yet, and any query passes).

    Raises:
        DimensionMismatch: ``d != dim``.
    """
    if dim is not None and int(dim) != vector.shape[0]:
        raise DimensionMismatch(
            f"query vector is {vector.shape[0]}-d; collection {collection!r} is {dim}-d",
            hint="query with the model the collection was built with",
        )


def keyword_or_substring(
    text: str,
    words: Callable[[], list[ScoredChunk]],
    substrings: Callable[[list[str], int | None], list[ScoredChunk]],
    stopwords: frozenset[str] = frozenset(),
    holds: Callable[[str], bool] | None = None,
) -> list[ScoredChunk]:
    """The keyword leg's plan, the same on every store (see :mod:`semsearch.keyword_text`).

    ``words`` answers, unless the query holds CJK characters, or ``words`` finds nothing, or
    its last word is a word being typed; then ``substrings`` does, with every piece of the
    query, so the partial word still counts (``black blaz``: ``black`` and ``blaz``). A word
    being typed is a last word (:func:`partial_last_word`) that the index does not hold
    (``holds``) but that begins a word of the text (a scan for it alone finds it at a word's
    start: ``blaz`` in ``blazer``). A rare or misspelt last word of a finished query
    (``... by Admpchordin.``) begins no word, and BM25 keeps the query: on SciFact's 300
    test queries no ranking changes.

    Args:
        text: the user's keyword query.
        words: ranks ``text`` by the store's word index.
        substrings: ranks, by :func:`scanned`, the chunks containing any of the given pieces
            (``substring_pieces(text, stopwords)``), reading at most the given number of them
            (None: all; :data:`PROBE_ROWS` when asking whether a word is being typed).
        stopwords: the collection's stop words, left out of the pieces.
        holds: whether the word index holds a query word anywhere in the collection (no
            filter: a word of the index is not being typed); None: never asked.
    Returns:
        The hits of whichever answered (each store's own score and order).
    """
    hits = [] if has_cjk(text) else words()
    last = partial_last_word(text, hits, stopwords) if holds is not None else None
    if holds is not None and last is not None and not holds(last):
        found = substrings(substring_pieces(last)[:1], PROBE_ROWS)  # whole, not its parts
        if found and found[0].score >= WORD_START:  # best first
            hits = []
    return hits or substrings(substring_pieces(text, stopwords), None)


def partial_last_word(
    text: str, hits: Sequence[ScoredChunk], stopwords: frozenset[str] = frozenset()
) -> str | None:
    """The last word of a query of two or more words, when the word index may not hold it
    (the caller asks): the query found ``hits`` but none holds every meaningful query word
    (coverage 1; None counts as unknown), and the word is a piece a scan would look for (3+
    characters, not a stop word). None otherwise: a query of one word that found nothing is
    scanned anyway."""
    split = text.split()
    if not hits or len(split) < 2 or has_cjk(text):
        return None
    if any(h.coverage is not None and h.coverage >= 1 - 1e-9 for h in hits):
        return None
    last = split[-1]
    pieces = substring_pieces(last)
    return last if pieces and not set(pieces) <= stopwords else None


def scanned(rows: Iterable[ScanRow], pieces: list[str], k: int) -> list[ScoredChunk]:
    """The top-k of the chunks a substring scan read, by :func:`~semsearch.keyword_text.
    scan_score` (> 0; rows holding no piece are dropped), best first, ties by record id, each
    with the share of ``pieces`` it holds, in (0, 1], as its keyword evidence and coverage.
    ``rows`` is consumed once, keeping k hits (memory bounded by k, not by the rows)."""

    def hits() -> Iterator[ScoredChunk]:
        for chunk_id, record_id, ordinal, body in rows:
            score, held = scan_score(body, pieces, ordinal == 0)
            if held:
                share = held / len(pieces)
                yield ScoredChunk(int(chunk_id), record_id, score, False, share, share)

    return heapq.nsmallest(k, hits(), key=lambda h: (-h.score, h.record_id, h.chunk_id))


def paged(fetch: Callable[[int, int], Sequence[ScanRow]], cap: int | None) -> Iterator[ScanRow]:
    """The rows of a scan page by page, so a scan never holds every matching text at once:
    ``fetch(after, n)`` returns at most n rows whose chunk id is above ``after``, by chunk id;
    at most ``cap`` rows in all (None: every row)."""
    after, left = -(2**63), cap
    while left is None or left > 0:
        n = SCAN_PAGE if left is None else min(SCAN_PAGE, left)
        page = fetch(after, n)
        yield from page
        if len(page) < n:
            return
        after = page[-1][0]
        left = None if left is None else left - len(page)
