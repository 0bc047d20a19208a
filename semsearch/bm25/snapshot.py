"""One keyword sidecar snapshot: the posting arrays of one FTS5 stamp, with what is cached on them.

A snapshot (bm25/sidecar.py makes them) scores the records as they are at its stamp: base arrays
(a ``.kw`` file or a build) caught up by the records the record change log names since
(bm25/delta.py). Per snapshot it keeps the masks of recent filters (stores/sqlite/allowed.py
names them) and the FTS5 scores of recent phrase clauses, and maps scored positions back to
record ids and first chunks.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Hashable

import numpy as np
from numpy.typing import NDArray

from semsearch.bm25.delta import LivePostings
from semsearch.bm25.postings import Phrase
from semsearch.keyword_query import K1, TITLE_WEIGHT, B, fts5_idf
from semsearch.stores.base import ScoredChunk
from semsearch.stores.sqlite.allowed import Allowed
from semsearch.stores.sqlite.record_fts import record_fts_table
from semsearch.stores.sqlite.sql import Rows

__all__ = ["Snapshot"]

_MASKS = 16  # filter masks kept per snapshot
_PHRASES = 1024  # phrase clauses' scores kept per snapshot


class Snapshot:
    """Posting arrays of one stamp, with the filter masks computed on them.

    ``live`` scores the records as they are at ``stamp``: the base arrays (a ``.kw`` file or a
    build, with ``names``/``first`` per base record) caught up by the records the log names
    (``changed``, rowids; their ids and first chunks in ``delta_names``/``delta_first``)."""

    def __init__(
        self,
        stamp: str,
        seq: int | None,
        live: LivePostings,
        names: list[str],
        first: NDArray[np.int64],
        changed: NDArray[np.int64] | None = None,
        delta_names: list[str] | None = None,
        delta_first: NDArray[np.int64] | None = None,
    ) -> None:
        self.stamp, self.seq, self.live = stamp, seq, live
        self.names = names  # base record ids, in base rowid order
        self.first = first  # each base record's first chunk id, -1 for none
        self.changed = np.zeros(0, np.int64) if changed is None else changed
        self.delta_names = delta_names or []
        self.delta_first = np.zeros(0, np.int64) if delta_first is None else delta_first
        self.masks: OrderedDict[Hashable, NDArray[np.bool_]] = OrderedDict()
        self.phrases: dict[str, Phrase] = {}

    def phrase(self, rows: Rows, cid: int, clause: str) -> Phrase:
        """A phrase clause's ``f * (k1 + 1) / (f + norm)`` per record holding it: FTS5's
        ``-bm25()`` of the phrase alone divided by FTS5's IDF of it (:func:`fts5_idf`), moved
        to semsearch's length normalisation (:meth:`_relengthen`)."""
        if clause not in self.phrases:
            table = record_fts_table(cid)
            found = rows(
                f"SELECT rowid, -bm25({table}, {TITLE_WEIGHT}, 1.0) FROM {table} "
                f"WHERE {table} MATCH ?",
                (clause,),
            )
            ids = np.fromiter((r[0] for r in found), np.int64, len(found))
            scores = np.fromiter((r[1] for r in found), np.float64, len(found))
            at = self.live.positions(ids)
            parts = scores[at >= 0] / fts5_idf(self.live.n, len(found))
            if len(self.phrases) >= _PHRASES:
                self.phrases.clear()
            self.phrases[clause] = (at[at >= 0], self._relengthen(at[at >= 0], parts))
        return self.phrases[clause]

    def _relengthen(self, at: NDArray[np.int64], parts: NDArray[np.float64]) -> NDArray[np.float64]:
        """FTS5's term parts (linear length normalisation) at positions ``at`` as semsearch's
        (keyword_query.relative_length): back to the weighted frequency, then forward."""
        live = self.live
        lengths = live.lengths()[at]
        linear = K1 * (1.0 - B + B * lengths / live.avgdl)
        room = np.maximum(K1 + 1.0 - parts, 1e-12)
        f = parts * linear / room
        return np.asarray(f * (K1 + 1.0) / (f + live.norm[at]), dtype=np.float64)

    def _record(self, position: int) -> tuple[str, int]:
        n_base = len(self.names)
        if position < n_base:
            return self.names[position], int(self.first[position])
        return self.delta_names[position - n_base], int(self.delta_first[position - n_base])

    def hits(
        self,
        positions: NDArray[np.int64],
        scores: NDArray[np.float64],
        k: int,
        evidence: tuple[NDArray[np.float64], NDArray[np.float64]] | None = None,
    ) -> list[ScoredChunk]:
        """ScoredChunks of the best ``k`` of (positions, scores), ties by record id, each with
        its keyword evidence and coverage (float64 per position) when given."""
        none = np.full(len(positions), np.nan)
        strength, coverage = (none, none) if evidence is None else evidence
        ranked = sorted(
            (-float(s), *self._record(int(i)), float(e), float(v))
            for i, s, e, v in zip(positions, scores, strength, coverage, strict=True)
        )
        return [
            ScoredChunk(c, r, -s, True, None if e != e else e, None if v != v else v)
            for s, r, c, e, v in ranked
            if c >= 0
        ][:k]

    def mask(self, allowed: Allowed) -> NDArray[np.bool_]:
        key, rowids = allowed
        if key in self.masks:
            self.masks.move_to_end(key)
            return self.masks[key]
        at = self.live.positions(rowids())
        mask = np.zeros(self.live.size, dtype=np.bool_)
        mask[at[at >= 0]] = True
        self.masks[key] = mask
        if len(self.masks) > _MASKS:
            self.masks.popitem(last=False)
        return mask
