"""Rank fusion for hybrid search: pure functions over ranked lists of ids.

A ranked list is a sequence of ``(id, score)`` pairs, best first. Ranks are 1-based. Results
are sorted by fused score, best first, ties broken by id, so fusion is deterministic.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

__all__ = ["RRF_K", "Ranked", "rrf", "weighted"]

Ranked = Sequence[tuple[str, float]]

#: RRF's constant k. Cormack, Clarke and Buettcher (2009), "Reciprocal Rank Fusion outperforms
#: Condorcet and individual Rank Learning Methods", SIGIR: k = 60.
RRF_K = 60


def _sorted(scores: Mapping[str, float]) -> list[tuple[str, float]]:
    return sorted(scores.items(), key=lambda item: (-item[1], item[0]))


def rrf(
    lists: Sequence[Ranked], k: float = RRF_K, weights: Sequence[float] | None = None
) -> list[tuple[str, float]]:
    """Reciprocal rank fusion: ``score(d) = sum_i w_i / (k + rank_i(d))`` with 1-based ranks.

    A list that does not contain ``d`` contributes nothing for it (Cormack, Clarke and
    Buettcher 2009). Only ranks matter; the lists' own scores are ignored.

    Args:
        lists: ranked lists, best first; an id appearing twice in one list keeps its best rank.
        k: the RRF constant (default 60), > 0.
        weights: one weight per list (default 1.0 each), >= 0.
    Returns:
        ``(id, fused score)`` best first, ties broken by id. Scores lie in (0, sum(weights)/(k+1)].
    Raises:
        ValueError: k <= 0, a negative weight, or len(weights) != len(lists).
    """
    if k <= 0:
        raise ValueError(f"RRF k must be > 0, got {k}")
    ws = _weights(weights, len(lists))
    fused: dict[str, float] = {}
    for ranked, w in zip(lists, ws, strict=True):
        seen: set[str] = set()
        for rank, (doc_id, _score) in enumerate(ranked, start=1):
            if doc_id in seen:
                continue
            seen.add(doc_id)
            fused[doc_id] = fused.get(doc_id, 0.0) + w / (k + rank)
    return _sorted(fused)


def weighted(
    lists: Sequence[Ranked], weights: Sequence[float] | None = None
) -> list[tuple[str, float]]:
    """Convex combination of min-max normalised scores: ``sum_i w_i * norm_i(d)``.

    Each list's scores are scaled to [0, 1] by min-max over that list (a list whose scores are
    all equal maps them to 1.0). A document absent from a list gets 0 from it. Weights are
    normalised to sum to 1, so with weights (1, 0) the result is exactly the first list's order
    (among its documents) and with (0, 1) the second's.

    Args:
        lists: ranked lists of (id, score), higher score is better.
        weights: one weight per list, >= 0, not all 0 (default: equal).
    Returns:
        ``(id, fused score in [0, 1])`` best first, ties broken by id. Documents whose combined
        weight is 0 (present only in zero-weight lists) are dropped.
    Raises:
        ValueError: negative weights, all-zero weights, or a length mismatch.
    """
    ws = _weights(weights, len(lists))
    total = sum(ws)
    if total <= 0:
        raise ValueError("weights must not all be 0")
    fused: dict[str, float] = {}
    for ranked, w in zip(lists, ws, strict=True):
        if w == 0 or not ranked:
            continue
        scores = [s for _, s in ranked]
        lo, hi = min(scores), max(scores)
        seen: set[str] = set()
        for doc_id, score in ranked:
            if doc_id in seen:
                continue
            seen.add(doc_id)
            norm = 1.0 if hi == lo else (score - lo) / (hi - lo)
            fused[doc_id] = fused.get(doc_id, 0.0) + (w / total) * norm
    return _sorted(fused)


def _weights(weights: Sequence[float] | None, n: int) -> list[float]:
    if weights is None:
        return [1.0] * n
    if len(weights) != n:
        raise ValueError(f"got {len(weights)} weights for {n} lists")
    if any(w < 0 for w in weights):
        raise ValueError(f"weights must be >= 0, got {list(weights)}")
    return [float(w) for w in weights]
