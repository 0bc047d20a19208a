"""Rank fusion for hybrid search: pure functions over ranked lists of ids.

A ranked list is a sequence of ``(id, score)`` pairs, best first (higher score is better).
Ranks are 1-based. Results are sorted by fused score, best first, ties broken by id, so fusion
is deterministic. A list whose weight is 0 is switched off: it adds nothing, and documents only
it holds are dropped.

Three families, measured on BEIR SciFact in docs/retrieval.md:

- :func:`rrf`, reciprocal rank fusion (Cormack, Clarke and Buettcher 2009): uses ranks only.
- :func:`weighted`, a convex combination of min-max normalised scores (Bruch, Gai and Ingber
  2023, "An Analysis of Fusion Functions for Hybrid Retrieval", ACM TOIS), optionally with a
  theoretical lower bound per list in place of the observed minimum ("TM2C2"). A document
  absent from a list that was cut at a depth can be given that list's lowest score (the most
  it can have) instead of 0: ``truncated``. Its scores are rescaled inside each query.
- :func:`calibrated`, the default: an absolute score in [0, 1] built from the cosine, mapped
  through the model's threshold, and from the keyword evidence, which saturates; nothing is
  rescaled per query, so a score means the same in every query, and 0.5 is the floor of a
  confident match (see :func:`calibrated_score`).

:class:`Fusion` names one configured fusion of a semantic and a keyword list; hybrid search
uses :data:`semsearch.search.HYBRID_FUSION`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

__all__ = [
    "CONFIDENT",
    "KEYWORD_HALF",
    "RRF_K",
    "SEMANTIC_SCALE",
    "Calibrated",
    "Fusion",
    "KeywordRanked",
    "Ranked",
    "calibrated",
    "calibrated_score",
    "keyword_part",
    "rrf",
    "semantic_part",
    "weighted",
]

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


#: A keyword leg for :func:`calibrated`: ``(id, BM25, evidence, coverage)`` best first;
#: evidence and coverage as :class:`semsearch.stores.base.ScoredChunk` defines them (None: a
#: substring scan, whose every hit is literal evidence).
KeywordRanked = Sequence[tuple[str, float, float | None, float | None]]
#: One fused record of :func:`calibrated`: ``(id, score in [0, 1], confident)``.
Calibrated = tuple[str, float, bool]

#: The score from which a hybrid hit is a confident match (the default floor).
CONFIDENT = 0.5
#: Cosine distance that moves the semantic part from 0.5 (at the model's threshold) to
#: sigmoid(1) = 0.73. Chosen on BEIR SciFact with the two-fold protocol (docs/retrieval.md).
SEMANTIC_SCALE = 0.2
#: Keyword evidence at which the keyword part is 0.5 (evidence 0.5: half of what a record
#: holding every meaningful query term once, at the average length, scores). Same source.
KEYWORD_HALF = 0.5
_COVERED = 1.0 - 1e-9


def semantic_part(cosine: float, threshold: float) -> float:
    """The semantic leg's part of a calibrated score: ``sigmoid((cos - t) / SEMANTIC_SCALE)``,
    in (0, 1), 0.5 at the model's threshold ``t`` (cosine similarity in [-1, 1])."""
    return 1.0 / (1.0 + math.exp(-(cosine - threshold) / SEMANTIC_SCALE))


def keyword_part(evidence: float) -> float:
    """The keyword leg's part: ``x / (x + KEYWORD_HALF)`` for evidence ``x >= 0``, in [0, 1):
    it saturates (a record holding the query's words many times is not unboundedly better)."""
    x = max(0.0, evidence)
    return x / (x + KEYWORD_HALF)


def calibrated_score(cosine: float, evidence: float, threshold: float, confident: bool) -> float:
    """One record's calibrated hybrid score, in [0, 1]:

        0.25 * semantic_part(cos, t) + 0.25 * keyword_part(evidence) + (0.5 if confident else 0)

    ``confident`` is the floor's test (:func:`calibrated`): the cosine reaches the model's
    threshold ``t``, or the record holds every meaningful word of the query. So a confident hit
    scores in [0.5, 1] and any other in [0, 0.5); within each half, more of either leg's
    evidence scores higher, and the score depends on nothing else the query found.
    """
    parts = 0.25 * semantic_part(cosine, threshold) + 0.25 * keyword_part(evidence)
    return parts + (CONFIDENT if confident else 0.0)


def calibrated(
    semantic: Ranked,
    keyword: KeywordRanked,
    threshold: float,
    truncated: tuple[bool, bool] = (False, False),
) -> list[Calibrated]:
    """Fuse a semantic and a keyword leg into absolute scores (see :func:`calibrated_score`).

    Args:
        semantic: ``(id, cosine similarity in [-1, 1])`` best first (the rescored score).
        keyword: ``(id, BM25, evidence, coverage)`` best first (:data:`KeywordRanked`).
        threshold: the model's calibrated cosine threshold (``default_min_score``).
        truncated: (semantic, keyword), whether each leg was cut at its depth.
    Returns:
        ``(id, score in [0, 1], confident)`` best first, ties broken by id. A record a leg did
        not return counts that leg's lowest values (cosine; evidence and coverage) when the
        leg was cut at its depth, as it can score at most those there, else nothing (cosine
        -1, evidence 0, coverage 0): the leg returned every match. It is confident when its
        cosine reaches ``threshold`` or its coverage is 1 (every meaningful query word held;
        a substring-scan hit counts as covered). So when the semantic leg is confident down to
        its depth, the keyword leg's records are too: measured on SciFact, nDCG@10 0.749
        against 0.728 when only the records the semantic leg returned could pass by their
        cosine, with the same share of off-topic questions left empty (docs/retrieval.md).
    """
    cos = {doc: score for _rank, doc, score in _first_ranks(semantic)}
    kw: dict[str, tuple[float, float]] = {}
    for doc, _bm25, evidence, coverage in keyword:
        if doc not in kw:  # a scan hit (None) is literal evidence: the reference, covered
            kw[doc] = (1.0, 1.0) if evidence is None else (evidence, coverage or 0.0)
    cos_absent = min(cos.values()) if cos and truncated[0] else -1.0
    kw_absent = (
        (min(x for x, _ in kw.values()), min(v for _, v in kw.values()))
        if kw and truncated[1]
        else (0.0, 0.0)
    )
    fused: dict[str, tuple[float, bool]] = {}
    for doc in {**cos, **kw}:
        c = cos.get(doc, cos_absent)
        x, coverage = kw.get(doc, kw_absent)
        confident = c >= threshold or coverage >= _COVERED
        fused[doc] = (calibrated_score(c, x, threshold, confident), confident)
    return [(d, s, ok) for (d, (s, ok)) in sorted(fused.items(), key=lambda i: (-i[1][0], i[0]))]


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
        method: ``"calibrated"`` (:func:`calibrated`: absolute scores with a floor; the other
            attributes are unused), ``"rrf"`` (:func:`rrf`) or ``"weighted"``
            (:func:`weighted`).
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

    method: Literal["calibrated", "rrf", "weighted"] = "rrf"
    weights: tuple[float, float] = (1.0, 1.0)
    k: float = RRF_K
    floors: tuple[float | None, float | None] = (None, None)
    absent: Literal["floor", "lowest"] = "floor"

    def __post_init__(self) -> None:
        if self.method not in ("calibrated", "rrf", "weighted"):
            raise ValueError(
                f"unknown fusion method {self.method!r}; use 'calibrated', 'rrf' or 'weighted'"
            )
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
        if self.method == "calibrated":
            raise ValueError("calibrated fusion needs keyword evidence: use Fusion.fuse_legs")
        weights = self.weights if semantic and keyword else (1.0, 1.0)
        if self.method == "rrf":
            return rrf([semantic, keyword], k=self.k, weights=weights)
        cut = truncated if self.absent == "lowest" else (False, False)
        return weighted([semantic, keyword], weights=weights, floors=self.floors, truncated=cut)

    def fuse_legs(
        self,
        semantic: Ranked,
        keyword: KeywordRanked,
        threshold: float,
        truncated: tuple[bool, bool] = (False, False),
    ) -> list[Calibrated]:
        """Fuse hybrid search's legs: ``(id, fused score, confident)`` best first, ties by id.

        ``calibrated`` gives absolute scores and says which hits pass the floor
        (:func:`calibrated`; ``threshold`` is the model's cosine threshold). ``rrf`` and
        ``weighted`` fuse ``(id, BM25)`` with :meth:`fuse`; their scores are relative to the
        query, so every hit counts as confident (they have no floor).
        """
        if self.method == "calibrated":
            return calibrated(semantic, keyword, threshold, truncated)
        fused = self.fuse(semantic, [(d, s) for d, s, *_ in keyword], truncated)
        return [(d, s, True) for d, s in fused]
