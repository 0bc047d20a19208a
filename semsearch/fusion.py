"""Rank fusion for hybrid search: pure functions over ranked lists of ids.

A ranked list is a sequence of ``(id, score)`` pairs, best first (higher score is better).
Ranks are 1-based. Results are sorted by fused score, best first, ties broken by id, so fusion
is deterministic. A list whose weight is 0 is switched off: it adds nothing, and documents only
it holds are dropped.

Two families, both measured on BEIR SciFact in docs/benchmarks.md:

- :func:`rrf`, reciprocal rank fusion (Cormack, Clarke and Buettcher 2009): uses ranks only.
- :func:`weighted`, a convex combination of min-max normalised scores (Bruch, Gai and Ingber
  2023, "An Analysis of Fusion Functions for Hybrid Retrieval", ACM TOIS), optionally with a
  theoretical lower bound per list in place of the observed minimum ("TM2C2"). A document
  absent from a list that was cut at a depth can be given that list's lowest score (the most
  it can have) instead of 0: ``truncated``.

:class:`Fusion` names one configured fusion of a semantic and a keyword list; hybrid search
uses :data:`semsearch.search.HYBRID_FUSION`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

__all__ = ["RRF_K", "Fusion", "Ranked", "rrf", "weighted"]

Ranked = Sequence[tuple[str, float]]

#: RRF's constant k. Cormack, Clarke and Buettcher (2009), "Reciprocal Rank Fusion outperforms
#: Condorcet and individual Rank Learning Methods", SIGIR: k = 60.
RRF_K = 60


def _sorted(scores: Mapping[str, float]) -> list[tuple[str, float]]:
    return sorted(scores.items(), key=lambda item: (-item[1], item[0]))


def _first_ranks(ranked: Ranked) -> list[tuple[int, str, float]]:
    """``(1-based rank, id, score)`` with each id kept at its first (best) position."""
    seen: set[str] = set()
    out = []
    for rank, (doc_id, score) in enumerate(ranked, start=1):
        if doc_id not in seen:
            seen.add(doc_id)
            out.append((rank, doc_id, score))
    return out


def rrf(
    lists: Sequence[Ranked], k: float = RRF_K, weights: Sequence[float] | None = None
) -> list[tuple[str, float]]:
    """Reciprocal rank fusion: ``score(d) = sum_i w_i / (k + rank_i(d))`` with 1-based ranks.

    A list that does not contain ``d`` contributes nothing for it (Cormack, Clarke and
    Buettcher 2009). Only ranks matter; the lists' own scores are ignored.

    Args:
        lists: ranked lists, best first; an id appearing twice in one list keeps its best rank.
        k: the RRF constant (default 60), > 0.
        weights: one weight per list (default 1.0 each), >= 0; a 0-weight list is ignored.
    Returns:
        ``(id, fused score)`` best first, ties broken by id. Scores lie in (0, sum(weights)/(k+1)].
    Raises:
        ValueError: k <= 0, a negative weight, or len(weights) != len(lists).
    """
    if k <= 0:
        raise ValueError(f"RRF k must be > 0, got {k}")
    fused: dict[str, float] = {}
    for ranked, w in zip(lists, _weights(weights, len(lists)), strict=True):
        if w == 0:
            continue
        for rank, doc_id, _score in _first_ranks(ranked):
            fused[doc_id] = fused.get(doc_id, 0.0) + w / (k + rank)
    return _sorted(fused)


def weighted(
    lists: Sequence[Ranked],
    weights: Sequence[float] | None = None,
    floors: Sequence[float | None] | None = None,
    truncated: Sequence[bool] | None = None,
) -> list[tuple[str, float]]:
    """Convex combination of normalised scores: ``sum_i (w_i / sum(w)) * norm_i(d)``.

    ``norm_i(s) = (s - lo_i) / (max_i - lo_i)`` where ``max_i`` is the list's best score and
    ``lo_i`` is ``floors[i]`` (a theoretical minimum: -1 for cosine similarity, 0 for BM25) or,
    when that is None, the list's lowest score (plain min-max). Normalised scores are clipped
    to [0, 1]; a list whose scores are all equal maps them to 1.0. A document absent from a list
    gets 0 from it, or, when the list is ``truncated`` (a leg's top D of more candidates), the
    list's lowest normalised score: a document outside a leg's top D scores at most the D-th
    score there, and counting it as the floor instead punished a document that one leg ranks
    high and the other just missed (SciFact: docs/retrieval.md, "Hybrid search"). Weights are
    normalised to sum to 1, so weights (1, 0) give exactly the first list's order and (0, 1)
    the second's.

    Args:
        lists: ranked lists of (id, score), higher score is better; an id appearing twice in
            one list keeps its first score.
        weights: one weight per list, >= 0, not all 0 (default: equal).
        floors: one lower bound per list, or None for min-max (default: min-max for all).
        truncated: per list, whether it was cut at a depth (default: none was).
    Returns:
        ``(id, fused score in [0, 1])`` best first, ties broken by id.
    Raises:
        ValueError: negative or all-zero weights, or a length mismatch.
    """
    ws = _weights(weights, len(lists))
    total = sum(ws)
    if total <= 0:
        raise ValueError("weights must not all be 0")
    lows = list(floors) if floors is not None else [None] * len(lists)
    if len(lows) != len(lists):
        raise ValueError(f"got {len(lows)} floors for {len(lists)} lists")
    cut = list(truncated) if truncated is not None else [False] * len(lists)
    if len(cut) != len(lists):
        raise ValueError(f"got {len(cut)} truncated flags for {len(lists)} lists")
    parts = [
        (w / total, _normalised(ranked, floor), was_cut)
        for ranked, w, floor, was_cut in zip(lists, ws, lows, cut, strict=True)
        if w > 0 and ranked
    ]
    if len(parts) == 1:
        # One list carries all the weight: order by its raw scores, so rounding in the
        # normalisation cannot reorder near-equal scores.
        return [(doc_id, norm) for doc_id, norm, _ in sorted(parts[0][1], key=_by_raw)]
    # every document starts at what it gets from the lists that lack it (0 unless truncated)
    absent = [min(n for _, n, _ in normed) if was_cut else 0.0 for _, normed, was_cut in parts]
    base = sum(share * low for (share, _, _), low in zip(parts, absent, strict=True))
    fused: dict[str, float] = {}
    for (share, normed, _), low in zip(parts, absent, strict=True):
        for doc_id, norm, _raw in normed:
            fused[doc_id] = fused.get(doc_id, base) + share * (norm - low)
    return _sorted(fused)


def _by_raw(item: tuple[str, float, float]) -> tuple[float, str]:
    return -item[2], item[0]


def _normalised(ranked: Ranked, floor: float | None) -> list[tuple[str, float, float]]:
    """``(id, score mapped to [0, 1] by (s - lo) / (max - lo), raw score)`` per document."""
    items = _first_ranks(ranked)
    hi = max(s for _, _, s in items)
    lo = min(s for _, _, s in items) if floor is None else floor
    return [
        (doc_id, 1.0 if hi <= lo else min(1.0, max(0.0, (score - lo) / (hi - lo))), score)
        for _rank, doc_id, score in items
    ]


def _weights(weights: Sequence[float] | None, n: int) -> list[float]:
    if weights is None:
        return [1.0] * n
    if len(weights) != n:
        raise ValueError(f"got {len(weights)} weights for {n} lists")
    if any(w < 0 for w in weights):
        raise ValueError(f"weights must be >= 0, got {list(weights)}")
    return [float(w) for w in weights]


@dataclass(frozen=True)
class Fusion:
    """One configured fusion of a semantic and a keyword ranked list (hybrid search).

    Attributes:
        method: ``"rrf"`` (:func:`rrf`) or ``"weighted"`` (:func:`weighted`).
        weights: (semantic, keyword) weights, each >= 0, not both 0. ``weighted`` normalises them
            to sum to 1, so (1, 0) reproduces the semantic order exactly and (0, 1) the keyword
            order; ``rrf`` uses them as given, so (1, 1) gives the textbook RRF scores.
        k: the RRF constant (``rrf`` only), > 0.
        floors: ``weighted`` only: the theoretical minimum of (semantic, keyword) scores, or None
            per leg for the observed minimum; (-1.0, 0.0) are cosine's and BM25's.
        absent: ``weighted`` only: what a document absent from a leg gets from it when that leg
            was cut at its depth: ``"floor"`` (0 after normalisation) or ``"lowest"`` (the
            leg's lowest normalised score; see :func:`weighted`). A leg that returned fewer
            records than its depth holds every match, so its absent documents get 0 either way.
    Raises:
        ValueError: an unknown method or ``absent``, a negative or all-zero weight, k <= 0, or
            ``absent="lowest"`` with RRF (ranks have no lowest score to give).
    """

    method: Literal["rrf", "weighted"] = "rrf"
    weights: tuple[float, float] = (1.0, 1.0)
    k: float = RRF_K
    floors: tuple[float | None, float | None] = (None, None)
    absent: Literal["floor", "lowest"] = "floor"

    def __post_init__(self) -> None:
        if self.method not in ("rrf", "weighted"):
            raise ValueError(f"unknown fusion method {self.method!r}; use 'rrf' or 'weighted'")
        if len(self.weights) != 2 or min(self.weights) < 0 or max(self.weights) <= 0:
            raise ValueError(f"weights must be two numbers >= 0, not both 0; got {self.weights}")
        if self.k <= 0:
            raise ValueError(f"RRF k must be > 0, got {self.k}")
        if self.absent not in ("floor", "lowest"):
            raise ValueError(f"unknown absent rule {self.absent!r}; use 'floor' or 'lowest'")
        if self.absent == "lowest" and self.method == "rrf":
            raise ValueError("absent='lowest' applies to weighted fusion only, not to RRF")

    def fuse(
        self, semantic: Ranked, keyword: Ranked, truncated: tuple[bool, bool] = (False, False)
    ) -> list[tuple[str, float]]:
        """Fuse the two legs: ``(id, fused score)`` best first, ties by id.

        ``truncated``: (semantic, keyword), whether each leg was cut at its depth (it returned
        as many records as it was asked for); used with ``absent="lowest"``.
        When one leg is empty (no keyword match, embedder down) the other keeps its own order
        whatever the weights, so a degraded hybrid search still answers.
        """
        weights = self.weights if semantic and keyword else (1.0, 1.0)
        if self.method == "rrf":
            return rrf([semantic, keyword], k=self.k, weights=weights)
        cut = truncated if self.absent == "lowest" else (False, False)
        return weighted([semantic, keyword], weights=weights, floors=self.floors, truncated=cut)
