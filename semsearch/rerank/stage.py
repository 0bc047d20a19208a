"""The reranking stage: retrieve the top N by any mode, rescore them, return the top ``limit``.

:func:`plan_rerank` checks a search's ``rerank`` and ``rerank_top_n`` arguments and says how
deep to retrieve; :func:`apply_rerank` rescores a :class:`SearchResult`'s hits with the
reranker's (query, chunk text) scores. The reranked hit's ``score`` is the reranker's, in
[0, 1]; its ``components`` keep what it had (each hybrid leg's score and rank) plus the
retrieval mode's own score and rank (``"semantic"``, ``"keyword"`` or ``"hybrid"``, the fused
score) and ``"rerank"`` (the reranker's score and new rank). Ties break by id.

If the reranker fails in any way, the result is the retrieval's own top ``limit``, marked
degraded with the reason: never an error, never empty when retrieval found hits.

Cost: one reranker call over at most ``top_n`` pairs, so reranking adds at most
``top_n x (per-pair time)`` to a query (docs/retrieval.md has the measured per-pair time).
"""

from __future__ import annotations

import dataclasses
import logging
from dataclasses import dataclass

from semsearch.errors import InvalidQuery, SemsearchError
from semsearch.rerank.base import Reranker, check_scores, resolve_reranker
from semsearch.results import Hit, LegScore, SearchResult

__all__ = [
    "DEFAULT_TOP_N",
    "MAX_TOP_N",
    "RerankPlan",
    "apply_rerank",
    "plan_rerank",
    "retrieval_reason",
]

log = logging.getLogger(__name__)

_NOT_RERANKED = "; results are not reranked"
_SEPARATOR = "; reranking with "

#: Hits retrieved for reranking when a search gives no ``rerank_top_n`` (the field's usual 50).
DEFAULT_TOP_N = 50
MAX_TOP_N = 1000


@dataclass(frozen=True)
class RerankPlan:
    """A checked reranking request: which reranker and how many hits it rescores."""

    reranker: Reranker
    top_n: int

    def fetch_limit(self, limit: int) -> int:
        """How many hits retrieval returns: ``max(limit, top_n)``."""
        return max(limit, self.top_n)


def plan_rerank(rerank: object, top_n: object) -> RerankPlan | None:
    """The plan for ``search(rerank=..., rerank_top_n=...)``, or None for no reranking.

    Args:
        rerank: None (no reranking), a Reranker, or a spec string (see
            :func:`~semsearch.rerank.base.resolve_reranker`).
        top_n: hits to rescore, an int in [1, 1000], or None for :data:`DEFAULT_TOP_N`.
    Raises:
        InvalidQuery: ``top_n`` out of range or not an int, ``rerank`` of another type.
        RerankerUnavailable: a spec that names no provider or model, or a ``local:`` folder
            without a one-label cross-encoder.
    """
    from semsearch.validation import type_name

    if top_n is not None and (
        isinstance(top_n, bool) or not isinstance(top_n, int) or not 1 <= top_n <= MAX_TOP_N
    ):
        raise InvalidQuery(
            f"rerank_top_n must be an int in [1, {MAX_TOP_N}], got {top_n!r} ({type_name(top_n)})",
            hint=f"e.g. rerank_top_n={DEFAULT_TOP_N}",
        )
    if rerank is None:
        return None
    if not isinstance(rerank, str | Reranker):
        raise InvalidQuery(
            f"rerank must be a reranker spec (str) or a Reranker, got {type_name(rerank)}",
            hint="e.g. rerank='local:/models/ms-marco-MiniLM-L6-v2'",
        )
    return RerankPlan(resolve_reranker(rerank), DEFAULT_TOP_N if top_n is None else top_n)


def apply_rerank(result: SearchResult, reranker: Reranker, limit: int) -> SearchResult:
    """``result``'s hits rescored by ``reranker`` against ``result.query``, best ``limit`` kept.

    Structured results (no ranking) and empty ones are returned as they are. On any failure
    of the reranker the retrieval's top ``limit`` is returned with ``degraded`` set.
    """
    if result.mode == "structured" or not result.hits:
        return dataclasses.replace(result, hits=result.hits[:limit])
    texts = [hit.chunk.text if hit.chunk else "" for hit in result.hits]
    try:
        scores = check_scores(reranker.rerank(result.query, texts), len(texts), reranker.model_id)
    except Exception as exc:  # any failure degrades: reranking is an optional refinement
        return _degraded(result, reranker, exc, limit)
    order = sorted(range(len(texts)), key=lambda i: (-float(scores[i]), result.hits[i].id))
    hits = [
        _reranked(result.hits[i], result.mode, i + 1, float(scores[i]), new_rank)
        for new_rank, i in enumerate(order[:limit], 1)
    ]
    return dataclasses.replace(result, hits=hits, reranked_by=reranker.model_id)


def _reranked(hit: Hit, mode: str, rank: int, score: float, new_rank: int) -> Hit:
    components = {**(hit.components or {}), mode: LegScore(hit.score, rank)}
    components["rerank"] = LegScore(score, new_rank)
    return dataclasses.replace(hit, score=score, components=components)


def _degraded(result: SearchResult, reranker: Reranker, exc: Exception, limit: int) -> SearchResult:
    if isinstance(exc, SemsearchError):
        why = exc.message
    else:  # not a failure any provider reports: keep the traceback for whoever debugs it
        log.warning("reranker %s failed", reranker.model_id, exc_info=exc)
        why = f"{type(exc).__name__}: {exc}"
    reason = f"reranking with {reranker.model_id} failed ({why}){_NOT_RERANKED}"
    if result.degraded_reason:
        reason = f"{result.degraded_reason}; {reason}"  # retrieval_reason() splits it again
    return dataclasses.replace(
        result, hits=result.hits[:limit], degraded=True, degraded_reason=reason
    )


def retrieval_reason(result: SearchResult) -> str | None:
    """Why retrieval itself degraded (e.g. the embedder failed), leaving out a failed
    reranking; None when retrieval ran whole."""
    reason = result.degraded_reason
    if not result.degraded or reason is None:
        return None
    if reason.startswith("reranking with ") and reason.endswith(_NOT_RERANKED):
        return None
    if reason.endswith(_NOT_RERANKED) and _SEPARATOR in reason:
        return reason.rsplit(_SEPARATOR, 1)[0]
    return reason
