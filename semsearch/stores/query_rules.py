"""What every store does the same way when it answers a query: the order of its hits, the
dimension check of a query vector, and the keyword leg's fallback to a substring scan.

Backends call these so that the rules of the Store protocol (:mod:`semsearch.stores.base`:
"best first, ties by record id"; ``DimensionMismatch`` for a query of another dimension; the
CJK and no-match fallback of :mod:`semsearch.keyword_text`) are written once.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

import numpy as np
from numpy.typing import NDArray

from semsearch.errors import DimensionMismatch
from semsearch.keyword_text import has_cjk, substring_pieces
from semsearch.stores.base import ScoredChunk

__all__ = ["best_first", "check_query_dim", "keyword_or_substring"]


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
    substrings: Callable[[list[str]], list[ScoredChunk]],
    stopwords: frozenset[str] = frozenset(),
) -> list[ScoredChunk]:
    """The keyword leg's plan, the same on every store (see :mod:`semsearch.keyword_text`).

    Args:
        text: the user's keyword query.
        words: ranks by the store's word index; not asked for a query holding CJK characters
            (no word token holds a CJK word).
        substrings: ranks chunks containing any of the given pieces; asked with
            ``substring_pieces(text, stopwords)`` when ``words`` was not asked or found
            nothing. Its hits should carry ``coverage`` (and ``evidence``): the share of the
            pieces each chunk holds.
        stopwords: the collection's stop words, left out of the pieces.
    Returns:
        The hits of whichever was answered last (each store's own score and order).
    """
    hits = [] if has_cjk(text) else words()
    return hits or substrings(substring_pieces(text, stopwords))
