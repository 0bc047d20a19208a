"""BM25 over records scored in numpy from term postings (stores/postgres/postings_cache.py),
the unfiltered keyword search of the PostgreSQL store.

The formula is the one :func:`semsearch.stores.postgres.bm25_sql.score_sql` runs in SQL (and
semsearch/keyword_query.py defines): per clause ``wi * f * (k1 + 1) / (f + norm(|d|))``, the
part after ``wi`` computed once per posting (postings_cache.term_postings), summed per record
in clause order (as the SQL statement sums them), so records of equal statistics tie exactly.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numpy.typing import NDArray

from semsearch.bm25.postings import top_of
from semsearch.stores.postgres.postings_cache import TermPostings

__all__ = ["Scored", "score_postings"]

#: (record rids int64[m], BM25 float64[m], evidence sums float64[m], coverage sums
#: float64[m]) of the best records, unordered.
Scored = tuple[NDArray[np.int64], NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]

#: Records are indexed densely by ``rid - min(rid)`` while the rid span is at most this many
#: times the postings (a bincount over the span); beyond it through np.unique (a sort).
DENSE_SPAN = 8


def score_postings(
    lists: Sequence[TermPostings], wi: Sequence[float], ev: Sequence[float], k: int
) -> Scored:
    """The ``k`` best records (and every record tied with the k-th) for clauses held by the
    records of ``lists``.

    Args:
        lists: each clause's postings with its BM25 parts (one per clause, clause order).
        wi: each clause's weight, query weight x IDF (> 0).
        ev: each clause's evidence weight (0 for a clause that is no evidence).
        k: how many records (>= 1).

    Returns:
        :data:`Scored`; empty arrays when no list holds a record. The evidence and coverage
        sums are ``sum ev * part`` and ``sum ev`` over the clauses each record holds (the
        caller divides by the reference, as for the SQL statement's rows).
    """
    held = [i for i, p in enumerate(lists) if len(p)]
    if not held:
        empty = np.zeros(0, np.float64)
        return np.zeros(0, np.int64), empty, empty, empty
    low = min(int(lists[i].rids[0]) for i in held)
    high = max(int(lists[i].rids[-1]) for i in held)
    total = sum(len(lists[i]) for i in held)
    names: NDArray[np.int64] | None = None
    if high - low >= DENSE_SPAN * total:
        names = np.unique(np.concatenate([lists[i].rids for i in held]).astype(np.int64))
    size = high - low + 1 if names is None else len(names)

    def index(i: int) -> NDArray[np.int64]:
        rids = lists[i].rids.astype(np.int64)
        return rids - low if names is None else np.searchsorted(names, rids)

    indexes = {i: index(i) for i in held}  # ascending, as the rids
    scores = np.zeros(size, np.float64)
    for i in held:  # a list holds a record once: no repeated index; sums in clause order
        scores[indexes[i]] += wi[i] * lists[i].parts
    best, best_scores, _ = top_of(scores, k, None)
    evidence = np.zeros(len(best), np.float64)
    coverage = np.zeros(len(best), np.float64)
    for i in held:
        at = np.searchsorted(indexes[i], best)
        found = at < len(lists[i])
        found[found] = indexes[i][at[found]] == best[found]
        evidence[found] += ev[i] * lists[i].parts[at[found]]
        coverage[found] += ev[i]
    chosen = best + low if names is None else names[best]
    return chosen.astype(np.int64), best_scores, evidence, coverage
