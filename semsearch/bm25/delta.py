"""A keyword sidecar caught up from the record change log: base postings plus a delta.

After a write, only the records the log names (stores/sqlite/record_changes.py) are re-read: their
positions in the base postings (the ``.kw`` file, or the last build) are marked dead, and their
current text, if they still exist, forms a small *delta* :class:`Postings`. The two are scored
as one collection with the statistics of the collection as it is now, so the ranking is the
one a full rebuild gives (FTS5's ``bm25()``, bm25/postings.py):

- ``N`` = live base records + delta records;
- ``n(q)`` = base records holding ``q`` that are not dead + delta records holding it;
- ``avgdl`` over the same live records.

Positions: ``0 .. len(base) - 1`` are the base's records (dead ones never score),
``len(base) ..`` the delta's. Chunk-level term counts (for the chunk a hit shows) are not
kept for the delta: :meth:`LivePostings.chunk_hits` returns None and the caller asks FTS5.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numpy.typing import NDArray

from semsearch.bm25.postings import (
    Clause,
    Postings,
    add_term,
    length_norms,
    query_weights,
    top_of,
)
from semsearch.bm25.prune import top_pruned
from semsearch.keyword_query import K1, evidence_clauses, idf

__all__ = [
    "LivePostings",
    "Ranked",
    "ScopedPostings",
    "rank_clauses",
    "term_parts",
]


def _positions(rowids: NDArray[np.int64], ids: NDArray[np.int64]) -> NDArray[np.int64]:
    """Each id's position in the ascending ``rowids``, -1 where absent."""
    at = np.searchsorted(rowids, ids)
    ok = at < len(rowids)
    ok[ok] = rowids[at[ok]] == ids[ok]
    return np.where(ok, at, -1).astype(np.int64)


class LivePostings:
    """The records of one snapshot as posting arrays: ``base`` with the records at ``dead``
    (int64 positions) replaced by ``delta`` (see the module docstring).

    Args:
        base: the postings read from the ``.kw`` file or built.
        dead: positions in ``base`` of records changed since (ascending, unique); None: none.
        delta: postings of the changed records that exist now (their rowids ascending); None:
            none. Its term ids are its own.
    """

    def __init__(
        self,
        base: Postings,
        dead: NDArray[np.int64] | None = None,
        delta: Postings | None = None,
    ) -> None:
        self.base = base
        self.dead = np.zeros(0, np.int64) if dead is None else dead
        self.delta = delta
        self.caught_up = delta is not None or len(self.dead) > 0
        n_base = len(base.rowids)
        self.size = n_base + (0 if delta is None else len(delta.rowids))
        self.n = self.size - len(self.dead)
        if not self.caught_up:
            self.norm, self._dead_mask, self.avgdl = base.norm, None, base.avgdl
            return
        self._dead_mask = np.zeros(n_base, np.bool_)
        self._dead_mask[self.dead] = True
        lengths = base.lengths.astype(np.float64)
        total = float(lengths.sum()) - float(lengths[self.dead].sum())
        if delta is not None:
            lengths = np.concatenate([lengths, delta.lengths.astype(np.float64)])
            total += float(delta.lengths.sum())
        self.avgdl = (total / self.n if self.n else 0.0) or 1.0
        self.norm = length_norms(lengths, self.avgdl)

    def positions(self, rowids: NDArray[np.int64]) -> NDArray[np.int64]:
        """int64[len(rowids)]: each live record's position, -1 for records not in the snapshot
        (or dead: a changed record's position is its delta one)."""
        found = _positions(self.base.rowids, rowids)
        if self._dead_mask is not None:
            hit = found >= 0
            hit[hit] = ~self._dead_mask[found[hit]]
            found = np.where(hit, found, -1)
        if self.delta is not None:
            extra = _positions(self.delta.rowids, rowids)
            found = np.where(extra >= 0, extra + len(self.base.rowids), found)
        return found

    def df(self, term: Clause) -> int:
        """n(q): live records holding ``term``."""
        if not isinstance(term, str):
            return len(term[0])
        n = self.base.df(term)
        if self._dead_mask is not None and n:
            tid = self.base.term_ids[term]
            docs = self.base.docs[int(self.base.offsets[tid]) : int(self.base.offsets[tid + 1])]
            n -= int(np.count_nonzero(self._dead_mask[docs]))
        return n + (0 if self.delta is None else self.delta.df(term))

    def chunk_hits(self, term: str) -> int | None:
        """Chunks holding ``term``, None once caught up (ask FTS5: see the module docstring)."""
        return None if self.caught_up else self.base.chunk_hits(term)

    def scores(
        self, terms: list[Clause], weights: Sequence[float] | None = None
    ) -> NDArray[np.float64]:
        """float64[size]: each position's BM25 for ``terms`` with their query ``weights``
        (default 1.0), 0 for dead or non-matching positions."""
        if not self.caught_up:
            return self.base.scores(terms, weights)
        out = np.zeros(self.size, dtype=np.float64)
        n_base = len(self.base.rowids)
        for term, w in zip(terms, query_weights(terms, weights), strict=True):
            weight = w * idf(self.n, self.df(term))
            if not isinstance(term, str):
                out[term[0]] += weight * term[1]
                continue
            add_term(out[:n_base], self.base, term, weight, self.norm[:n_base])
            if self.delta is not None:
                add_term(out[n_base:], self.delta, term, weight, self.norm[n_base:])
        out[self.dead] = 0.0
        return out

    def top(
        self,
        terms: list[Clause],
        k: int,
        mask: NDArray[np.bool_] | None,
        weights: Sequence[float] | None = None,
    ) -> tuple[NDArray[np.int64], NDArray[np.float64], int]:
        """As :meth:`Postings.top`, over the live records' positions: pruned (MaxScore,
        bm25/prune.py) on a fresh snapshot, exhaustive once caught up."""
        if not self.caught_up:
            return top_pruned(self.base, terms, k, mask, weights)
        return top_of(self.scores(terms, weights), k, mask)

    def parts(self, term: Clause, positions: NDArray[np.int64]) -> NDArray[np.float64]:
        """float64[len(positions)]: ``f * (k1 + 1) / (f + norm)`` of ``term`` at each live
        position (0 where the record does not hold it): its BM25 part without the IDF."""
        if not isinstance(term, str):
            return _phrase_parts(term, positions)
        n_base = len(self.base.rowids)
        out = np.zeros(len(positions), np.float64)
        in_base = positions < n_base
        out[in_base] = term_parts(self.base, term, positions[in_base], self.norm)
        if self.delta is not None and not in_base.all():
            at = positions[~in_base]
            out[~in_base] = term_parts(self.delta, term, at - n_base, self.norm[n_base:])
        if self._dead_mask is not None:
            out[in_base] *= ~self._dead_mask[positions[in_base]]
        return out

    def within(self, mask: NDArray[np.bool_]) -> ScopedPostings:
        """BM25 over the live records ``mask`` allows, with N, n(q) and avgdl counted over
        them only (:class:`ScopedPostings`)."""
        return ScopedPostings(self, mask)

    def lengths(self) -> NDArray[np.float64]:
        """float64[size]: each position's length in terms (dead ones included)."""
        parts = [self.base.lengths] + ([] if self.delta is None else [self.delta.lengths])
        return np.concatenate(parts).astype(np.float64)

    def holders(self, term: str) -> NDArray[np.int64]:
        """Positions of the live records holding ``term``."""
        found = [np.zeros(0, np.int64)]
        tid = self.base.term_ids.get(term)
        if tid is not None:
            docs = self.base.docs[int(self.base.offsets[tid]) : int(self.base.offsets[tid + 1])]
            if self._dead_mask is not None:
                docs = docs[~self._dead_mask[docs]]
            found.append(docs.astype(np.int64))
        if self.delta is not None and (tid := self.delta.term_ids.get(term)) is not None:
            lo, hi = int(self.delta.offsets[tid]), int(self.delta.offsets[tid + 1])
            found.append(self.delta.docs[lo:hi].astype(np.int64) + len(self.base.rowids))
        return np.concatenate(found)


class ScopedPostings:
    """BM25 of single terms over the records a mask allows, with the statistics of those
    records alone: N = records allowed, n(q) = allowed records holding q, avgdl = their mean
    length (same formula and constants as :mod:`semsearch.bm25.postings`). Scores of other
    records never enter, so another tenant's words cannot move them.

    Args:
        live: the snapshot's postings.
        mask: bool[live.size], the records allowed (never dead ones: ``Snapshot.mask``).
    """

    def __init__(self, live: LivePostings, mask: NDArray[np.bool_]) -> None:
        self.live, self.mask = live, mask
        self.n = int(np.count_nonzero(mask))
        lengths = live.lengths()
        avgdl = (float(lengths[mask].sum()) / self.n if self.n else 0.0) or 1.0
        self.norm = length_norms(lengths, avgdl)

    def df(self, term: Clause) -> int:
        """n(q) among the allowed records; a phrase clause counts none (not scored here)."""
        if not isinstance(term, str):
            return 0
        return int(np.count_nonzero(self.mask[self.live.holders(term)]))

    def top(
        self,
        terms: list[Clause],
        k: int,
        mask: NDArray[np.bool_] | None,
        weights: Sequence[float] | None = None,
    ) -> tuple[NDArray[np.int64], NDArray[np.float64], int]:
        """As :meth:`Postings.top`, over the allowed records (``mask`` narrows them more)."""
        live = self.live
        out = np.zeros(live.size, dtype=np.float64)
        n_base = len(live.base.rowids)
        for term, w in zip(terms, query_weights(terms, weights), strict=True):
            if isinstance(term, str) and (n := self.df(term)):
                weight = w * idf(self.n, n)
                add_term(out[:n_base], live.base, term, weight, self.norm[:n_base])
                if live.delta is not None:
                    add_term(out[n_base:], live.delta, term, weight, self.norm[n_base:])
        return top_of(out, k, self.mask if mask is None else self.mask & mask)

    def parts(self, term: Clause, positions: NDArray[np.int64]) -> NDArray[np.float64]:
        """As :meth:`LivePostings.parts`, with the allowed records' length normalisation; 0
        for a phrase (not scored here) and outside the mask."""
        if not isinstance(term, str):
            return np.zeros(len(positions), np.float64)
        live = self.live
        n_base = len(live.base.rowids)
        out = np.zeros(len(positions), np.float64)
        in_base = positions < n_base
        out[in_base] = term_parts(live.base, term, positions[in_base], self.norm[:n_base])
        if live.delta is not None and not in_base.all():
            at = positions[~in_base] - n_base
            out[~in_base] = term_parts(live.delta, term, at, self.norm[n_base:])
        return out * self.mask[positions]


def term_parts(
    p: Postings, term: str, positions: NDArray[np.int64], norm: NDArray[np.float64]
) -> NDArray[np.float64]:
    """float64[len(positions)]: ``f * (k1 + 1) / (f + norm)`` of ``term`` for the records of
    ``p`` at ``positions`` (0 where absent), each found by binary search in its posting list;
    ``norm``: float64[len(p.rowids)], each record's length norm (postings.length_norms)."""
    out = np.zeros(len(positions), np.float64)
    tid = p.term_ids.get(term)
    if tid is None or not len(positions):
        return out
    lo, hi = int(p.offsets[tid]), int(p.offsets[tid + 1])
    docs = p.docs[lo:hi]
    at = np.searchsorted(docs, positions)
    hit = at < len(docs)
    hit[hit] = docs[at[hit]] == positions[hit]
    f = p.freqs[lo:hi][at[hit]].astype(np.float64)
    out[hit] = f * (K1 + 1.0) / (f + norm[positions[hit]])
    return out


def _phrase_parts(
    phrase: tuple[NDArray[np.int64], NDArray[np.float64]], positions: NDArray[np.int64]
) -> NDArray[np.float64]:
    """A phrase clause's parts at ``positions`` (0 where it does not occur)."""
    order = np.argsort(phrase[0])
    held, parts = phrase[0][order], phrase[1][order]
    at = np.searchsorted(held, positions)
    hit = at < len(held)
    hit[hit] = held[at[hit]] == positions[hit]
    out = np.zeros(len(positions), np.float64)
    out[hit] = parts[at[hit]]
    return out


#: A ranking of :func:`rank_clauses`: (positions, BM25 scores, matches, keyword evidence,
#: coverage).
Ranked = tuple[
    NDArray[np.int64], NDArray[np.float64], int, NDArray[np.float64], NDArray[np.float64]
]


def rank_clauses(
    p: LivePostings | ScopedPostings,
    terms: list[Clause],
    weights: Sequence[float],
    k: int,
    mask: NDArray[np.bool_] | None,
    stops: Sequence[bool] | None = None,
) -> Ranked:
    """The top ``k`` records for ``terms`` (each with its query weight; ``stops`` flags the
    stop words a query of stop words only keeps) and their keyword evidence.

    Returns:
        (positions, BM25 scores, matches, evidence, coverage): as :meth:`LivePostings.top`,
        plus for each position its evidence, float64 in [0, k1 + 1): the BM25 of the
        *meaningful* clauses (:func:`semsearch.keyword_query.meaningful`: IDF >= ln 2) divided
        by their reference score ``sum w(q) * idf(q)`` (what a record holding each of them
        once, at the average length, scores), and its coverage, float64 in [0, 1]: the share
        of that reference held by the clauses the record holds at all. Both are 0 for a
        record that holds no meaningful clause. Which clauses count:
        :func:`~semsearch.keyword_query.evidence_clauses`.
    """
    positions, scores, matches = p.top(terms, k, mask, weights)
    dfs = [p.df(t) for t in terms]
    idfs = [idf(p.n, n) for n in dfs]
    chosen = evidence_clauses(idfs, dfs, stops)
    reference = sum(weights[i] * idfs[i] for i in chosen)
    evidence = np.zeros(len(positions), np.float64)
    coverage = np.zeros(len(positions), np.float64)
    if reference > 0:
        for i in chosen:
            part = p.parts(terms[i], positions)
            evidence += weights[i] * idfs[i] * part
            coverage += weights[i] * idfs[i] * (part > 0)
        evidence /= reference
        coverage /= reference
    return positions, scores, matches, evidence, coverage
