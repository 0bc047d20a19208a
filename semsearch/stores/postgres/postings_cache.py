"""Term postings of a PostgreSQL collection held in this process, for BM25 scored in numpy.

Scoring a query in SQL aggregates every posting of its terms: at 100,000 records a 10-word
SciFact claim reads 50,000-130,000 ``kw_terms`` rows, and PostgreSQL's hash aggregate over
them took 60-120 ms (stop 52, EXPLAIN ANALYZE). The common words of those queries ("patient",
"cell", "increas") recur from query to query, so this module keeps each term's postings as
numpy arrays once read: an unfiltered keyword search then reads only its new terms' postings
from the database (one statement, each list as three ``bytea`` values) and scores in numpy.

Consistency: every change to ``kw_terms`` updates the collection's one ``kw_stats`` row in the
same transaction (stores/postgres/bm25_index.py ``_apply``), which gives that row a new
``xmin`` and ``ctid``. Both are read with the statistics, in the search's snapshot, as the
*generation*; cached postings serve only a search of the same generation, so they are exactly
the postings that snapshot sees. Any write, from any process, empties the collection's cache on
the next search.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from semsearch.bm25.postings import length_norms
from semsearch.keyword_query import K1
from semsearch.stores.postgres.sql import Tables

__all__ = [
    "BUDGET",
    "PostingsCache",
    "TermPostings",
    "fetch_postings",
    "postings_sql",
    "term_postings",
]

#: Postings kept per store (all collections), least recently used dropped first: 12 bytes each
#: (record rid int32, BM25 part float64), so about 48 MiB. 150 SciFact claims at 100,000
#: records ask for 5.4 million postings, 2.6 million of them distinct terms' (stop 53).
BUDGET = 4_000_000


@dataclass(frozen=True)
class TermPostings:
    """One clause's postings, record rids ascending.

    Attributes:
        rids: int32 or int64 [n], the records' ``rid`` (ascending, unique); int32 while they
            fit.
        parts: float64[n], the clause's BM25 part in each record, ``f * (k1 + 1) / (f +
            norm(|d|))`` in (0, k1 + 1), for the collection's avgdl at the generation it was
            read at (so valid while the generation lasts).
    """

    rids: NDArray[np.integer]
    parts: NDArray[np.float64]

    def __len__(self) -> int:
        return len(self.rids)


def term_postings(
    rids: NDArray[np.integer],
    tf: NDArray[np.floating],
    lengths: NDArray[np.integer] | NDArray[np.floating],
    avgdl: float,
) -> TermPostings:
    """:class:`TermPostings` from rids (ascending), weighted frequencies (> 0) and record
    lengths in tokens, with ``avgdl`` (> 0): the parts of
    :func:`semsearch.bm25.postings.length_norms`' formula."""
    f = np.asarray(tf, np.float64)
    parts = f * (K1 + 1.0) / (f + length_norms(lengths, avgdl))
    small = len(rids) == 0 or int(rids[-1]) < 2**31
    return TermPostings(np.asarray(rids, np.int32 if small else np.int64), parts)


def postings_sql(t: Tables) -> str:
    """The statement that reads the postings of the terms in its one param (text[]): rows
    ``(term, rids, tf, lengths)``, each list packed big-endian (int8, float4, int4) in rid
    order; packing spares psycopg a Python object per posting."""
    return (
        "SELECT term, string_agg(int8send(record_rid), ''::bytea ORDER BY record_rid), "
        "string_agg(float4send(tf), ''::bytea ORDER BY record_rid), "
        "string_agg(int4send(len), ''::bytea ORDER BY record_rid) "
        f"FROM {t.kw_terms} WHERE term = ANY(%s::text[]) GROUP BY term"
    )


def fetch_postings(
    run: Any, t: Tables, terms: Sequence[str], avgdl: float
) -> dict[str, TermPostings]:
    """``{term: TermPostings}`` of ``terms`` read with ``run(sql, params)`` (in the caller's
    snapshot), their parts for ``avgdl``; terms no record holds are absent."""
    if not terms:
        return {}
    return {
        term: term_postings(
            np.frombuffer(rids, ">i8"),
            np.frombuffer(tf, ">f4"),
            np.frombuffer(lengths, ">i4"),
            avgdl,
        )
        for term, rids, tf, lengths in run(postings_sql(t), [list(terms)])
    }


class PostingsCache:
    """Term postings of several collections, each valid for one generation (see the module
    docstring), least recently used dropped beyond ``budget`` postings. Thread-safe: a server
    searches from several threads."""

    def __init__(self, budget: int = BUDGET) -> None:
        self.budget = budget
        self._lock = threading.Lock()
        self._generation: dict[str, str] = {}
        self._terms: OrderedDict[tuple[str, str], TermPostings] = OrderedDict()
        self._size = 0

    def get(self, table: str, generation: str, terms: Sequence[str]) -> dict[str, TermPostings]:
        """The cached postings of ``terms`` in ``table`` at ``generation`` (others absent);
        a new generation first drops everything cached for ``table``."""
        with self._lock:
            if self._generation.get(table) != generation:
                self._drop(table)
                self._generation[table] = generation
                return {}
            out = {}
            for term in terms:
                found = self._terms.get((table, term))
                if found is not None:
                    self._terms.move_to_end((table, term))
                    out[term] = found
            return out

    def put(self, table: str, generation: str, postings: dict[str, TermPostings]) -> None:
        """Keep ``postings`` of ``table`` read at ``generation`` (ignored when the cache has
        moved to another generation meanwhile, or a list alone exceeds the budget)."""
        with self._lock:
            if self._generation.get(table) != generation:
                return
            for term, found in postings.items():
                if len(found) > self.budget or (table, term) in self._terms:
                    continue
                self._terms[(table, term)] = found
                self._size += len(found)
            while self._size > self.budget:
                _, dropped = self._terms.popitem(last=False)
                self._size -= len(dropped)

    def _drop(self, table: str) -> None:
        for key in [key for key in self._terms if key[0] == table]:
            self._size -= len(self._terms.pop(key))

    @property
    def size(self) -> int:
        """Postings held, all collections."""
        return self._size
