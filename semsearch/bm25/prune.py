"""Exact top-k BM25 over posting arrays without scoring every posting: MaxScore pruning.

Exhaustive scoring (bm25/postings.py) touches every posting of every query term; a
common word's list holds a large share of the collection, so at 1M records a 10-word query
scores millions of postings. MaxScore (Turtle and Flood 1995, "Query evaluation: strategies
and optimizations") returns the same top k with less work:

1. Each term's *upper bound* is its IDF times the largest ``f * (k1 + 1) / (f + norm)`` over
   its postings (computed once per snapshot and term, then cached).
2. Terms are scored exhaustively rarest first (short lists) into a dense score array. After
   each, the k-th best partial score ``theta`` (of the records a filter allows) bounds the final
   k-th score from below, as every further term only adds. Once the upper bounds of the terms
   left sum below ``theta``, no record without a scored term can reach the top k.
3. The terms left are looked up only for the *candidates*: records whose partial score plus
   that sum reaches ``theta``, by binary search in each term's (ascending) record list. After
   each such term ``theta`` rises to the candidates' k-th best partial score and the bound
   left shrinks by that term's, so candidates that can no longer reach ``theta`` are dropped
   before the next look-up.

Every record that can reach the top k gets every term's part, so the top k and its scores
equal the exhaustive ones, to float tolerance (the parts are added in another order):
``tests/unit/test_keyword_prune.py``. ``theta`` is only computed (a pass over the score
array) once the scored terms' bounds exceed the ones left, as before that it cannot stop.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numpy.typing import NDArray

from semsearch.bm25.postings import Clause, Postings, add_term, query_weights, top_of
from semsearch.keyword_query import K1, idf

__all__ = ["term_bound", "top_pruned"]


def term_bound(p: Postings, term: str) -> float:
    """The largest ``f * (k1 + 1) / (f + norm)`` over ``term``'s postings in ``p`` (0 when
    it has none), cached on ``p``: times the term's IDF, its upper bound on a record's score."""
    cache: dict[str, float] = p.__dict__.setdefault("_bounds", {})
    found = cache.get(term)
    if found is None:
        tid = p.term_ids.get(term)
        found = 0.0
        if tid is not None and p.offsets[tid + 1] > p.offsets[tid]:
            lo, hi = int(p.offsets[tid]), int(p.offsets[tid + 1])
            f = p.freqs[lo:hi].astype(np.float64)
            found = float(np.max(f * (K1 + 1.0) / (f + p.norm[p.docs[lo:hi]])))
        cache[term] = found
    return found


def _kth(scores: NDArray[np.float64], k: int, mask: NDArray[np.bool_] | None) -> float:
    """The k-th best positive score of the records a filter allows (0: fewer than k)."""
    hit = scores > 0
    if mask is not None:
        hit &= mask
    vals = scores[hit]
    if len(vals) < k:
        return 0.0
    return float(np.partition(vals, len(vals) - k)[len(vals) - k])


def top_pruned(
    p: Postings,
    terms: list[Clause],
    k: int,
    mask: NDArray[np.bool_] | None,
    query: Sequence[float] | None = None,
) -> tuple[NDArray[np.int64], NDArray[np.float64], int]:
    """As :meth:`Postings.top` (positions, scores, matches; the top ``k`` with ties; ``query``
    the clauses' query weights, default 1.0), with MaxScore pruning (see the module
    docstring). ``matches`` is exact when below ``k`` and a lower bound of at least ``k``
    otherwise (pruned records are not counted)."""
    weights, bounds, order = _plan(p, terms, query_weights(terms, query))
    scores = np.zeros(len(p.rowids), dtype=np.float64)
    done, left, theta = _score_exhaustively(p, terms, order, weights, bounds, scores, k, mask)
    if done == len(terms):  # nothing pruned
        return top_of(scores, k, mask)
    cand = np.flatnonzero(scores)
    if mask is not None:
        cand = cand[mask[cand]]
    cand = cand[scores[cand] + left >= theta]
    part = scores[cand]
    rest = order[done:]
    for n, i in enumerate(rest):
        term = terms[i]
        assert isinstance(term, str)  # phrases come first and are never pruned
        _add_to_candidates(p, term, weights[i], cand, part)
        if n + 1 < len(rest) and len(cand) > k:  # drop candidates that can no longer reach
            left = float(np.sum([bounds[j] for j in rest[n + 1 :]]))
            theta = max(theta, _kth(part, k, None))
            keep = part + left >= theta
            cand, part = cand[keep], part[keep]
    found, best, _ = top_of(part, k, None)
    return cand[found], best, max(k, int(np.count_nonzero(part)))


def _plan(
    p: Postings, terms: list[Clause], query: list[float]
) -> tuple[list[float], list[float], list[int]]:
    """(weights, upper bounds, order): each clause's weight (its query weight times its IDF)
    and bound on its part of a score, and the order to score them in: phrases first, then
    terms rarest first."""
    n = len(p.rowids)
    weights: list[float] = []
    bounds: list[float] = []
    sizes: list[int] = []
    for term, w in zip(terms, query, strict=True):
        weight = w * idf(n, p.df(term))
        weights.append(weight)
        if isinstance(term, str):
            bounds.append(weight * term_bound(p, term))
            sizes.append(p.df(term))
        else:
            bounds.append(weight * float(term[1].max()) if len(term[1]) else 0.0)
            sizes.append(-1)  # phrases first: FTS5 gave their few records
    return weights, bounds, sorted(range(len(terms)), key=lambda i: sizes[i])


def _score_exhaustively(
    p: Postings,
    terms: list[Clause],
    order: list[int],
    weights: list[float],
    bounds: list[float],
    scores: NDArray[np.float64],
    k: int,
    mask: NDArray[np.bool_] | None,
) -> tuple[int, float, float]:
    """Add whole clauses, in ``order``, to ``scores`` until the bounds of the clauses left sum
    below ``theta``. Returns (clauses scored, their bounds left, theta)."""
    left = float(sum(bounds))
    theta = 0.0
    done = 0
    for i in order:
        if theta > 0 and left < theta:
            break
        term = terms[i]
        if isinstance(term, str):
            add_term(scores, p, term, weights[i], p.norm)
        else:
            scores[term[0]] += weights[i] * term[1]
        left -= bounds[i]
        done += 1
        if left < sum(bounds) - left:  # theta <= the best partial <= the bounds scored
            theta = _kth(scores, k, mask)
    return done, left, theta


def _add_to_candidates(
    p: Postings,
    term: str,
    weight: float,
    cand: NDArray[np.int64],
    part: NDArray[np.float64],
) -> None:
    """Add ``term``'s part to the partial scores ``part`` of the records at positions ``cand``
    (ascending), each found by binary search in the term's record list."""
    tid = p.term_ids.get(term)
    if tid is None:
        return
    lo, hi = int(p.offsets[tid]), int(p.offsets[tid + 1])
    docs = p.docs[lo:hi]
    at = np.searchsorted(docs, cand)
    hit = at < len(docs)
    hit[hit] = docs[at[hit]] == cand[hit]
    f = p.freqs[lo:hi][at[hit]].astype(np.float64)
    part[hit] += weight * (f * (K1 + 1.0)) / (f + p.norm[cand[hit]])
