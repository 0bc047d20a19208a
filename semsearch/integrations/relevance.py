"""LangChain relevance scores from semsearch results: every search's score as a number in
[0, 1], 0 dissimilar and 1 most similar, as LangChain's ``similarity_search_with_relevance_scores``
promises (it warns about any value outside).

| result | relevance |
|---|---|
| semantic (cosine similarity in [-1, 1]) | (1 + cos) / 2: -1 -> 0, 0 -> 0.5, 1 -> 1 |
| hybrid (fused score in [0, 1]) | the score itself |
| reranked (a reranker's score in [0, 1]) | the score itself |
| structured listing (an empty query, unranked) | 0 |
| keyword (BM25 >= 0, no upper bound) | none: :func:`check_relevance_mode` refuses it |

Each rule is monotonic, so relevance keeps the search's order. No LangChain import here.
"""

from __future__ import annotations

from collections.abc import Callable

from semsearch.errors import InvalidQuery
from semsearch.results import SearchResult

__all__ = ["check_relevance_mode", "cosine_relevance", "relevance_fn"]


def cosine_relevance(score: float) -> float:
    """A cosine similarity in [-1, 1] as relevance: (1 + cos) / 2, clipped to [0, 1]."""
    return min(1.0, max(0.0, (1.0 + score) / 2.0))


def relevance_fn(result: SearchResult) -> Callable[[float], float]:
    """The rule turning ``result``'s hit scores into relevance in [0, 1] (the table above)."""
    if result.mode == "structured":
        return _unranked
    if result.reranked_by or result.mode == "hybrid":
        return _unit  # a cross-encoder's sigmoid or the fused score: in [0, 1] already
    return cosine_relevance


def check_relevance_mode(mode: object, rerank: object) -> None:
    """Raise InvalidQuery for a keyword search that is not reranked: BM25 has no [0, 1] scale."""
    if mode == "keyword" and rerank is None:
        raise InvalidQuery(
            "keyword mode has no relevance score in [0, 1]: BM25 is unbounded",
            hint="use mode='semantic' ((1 + cosine) / 2) or 'hybrid' (the fused score), or "
            "similarity_search_with_score for the raw BM25",
        )


def _unit(score: float) -> float:
    return min(1.0, max(0.0, score))


def _unranked(score: float) -> float:
    return 0.0
