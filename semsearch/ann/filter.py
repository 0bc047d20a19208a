"""Allowed sets: the live rows of one cache snapshot that pass one filter, cached per snapshot.

Evaluating a filter costs a SQL query over the collection's records plus an O(rows) mask, which
at 100k-1M rows is several milliseconds: more than the HNSW search it restricts. Searches that
repeat a filter (one tenant's notes, one category of a catalogue, one user's memories) reuse the
result for as long as the snapshot is current, like the filter cache of Lucene/Elasticsearch.
Derived forms (the row numbers, the faiss bitmap, the gathered vectors for an exact scan) are
built on first use and kept with the entry.

The cache is tied to one immutable :class:`~semsearch.ann.rows.AnnState` object: any
write (from this or another process) produces a new snapshot, which empties the cache, so a
cached set never outlives the data it was computed from.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Any

import numpy as np
from numpy.typing import NDArray

__all__ = ["VECTOR_BUDGET", "AllowedSet", "FilterCache", "rowid_mask", "vector_budget"]

# Entries kept per collection, and the bytes of gathered vectors kept across them: at most
# VECTOR_BUDGET, and at most a quarter of the collection's vectors at float32 (half the bytes
# of its fp16 graph), so the cache never dominates the memory of the index it serves.
_ENTRIES = 16
VECTOR_BUDGET = 256 * 1024 * 1024
_BUDGET_FRACTION = 0.25


def vector_budget(rows: int, dim: int) -> int:
    """Bytes of gathered float32 vectors a collection of ``rows`` x ``dim`` may keep cached:
    ``min(VECTOR_BUDGET, 0.25 * rows * dim * 4)``."""
    return int(min(VECTOR_BUDGET, _BUDGET_FRACTION * rows * dim * 4))


class AllowedSet:
    """The rows of one snapshot that may be returned (live and passing the filter).

    Args:
        mask: bool[rows], True for rows that may be returned.
    """

    def __init__(self, mask: NDArray[np.bool_]) -> None:
        self.mask = mask
        self.count = int(np.count_nonzero(mask))
        self._rows: NDArray[np.int64] | None = None
        self._bits: dict[int, NDArray[np.uint8] | None] = {}
        self.vectors: NDArray[np.float32] | None = None

    def rows(self) -> NDArray[np.int64]:
        """int64[count]: the allowed row numbers, ascending."""
        if self._rows is None:
            self._rows = np.flatnonzero(self.mask).astype(np.int64, copy=False)
        return self._rows

    def graph_bits(self, graph_rows: int) -> NDArray[np.uint8] | None:
        """The faiss ``IDSelectorBitmap`` bytes for rows [0, graph_rows), or None when all pass.

        Returns:
            uint8[ceil(graph_rows / 8)], bit ``i % 8`` of byte ``i // 8`` set for allowed row
            ``i`` (little bit order, as faiss reads it); None when every graph row is allowed.
        """
        if graph_rows not in self._bits:
            in_graph = self.mask[:graph_rows]
            every = bool(np.count_nonzero(in_graph) == graph_rows)
            self._bits[graph_rows] = None if every else np.packbits(in_graph, bitorder="little")
        return self._bits[graph_rows]

    def graph_count(self, graph_rows: int) -> int:
        """Allowed rows among the graph's rows [0, graph_rows)."""
        bits = self.graph_bits(graph_rows)
        if bits is None:
            return graph_rows
        return int(np.count_nonzero(self.mask[:graph_rows]))


class FilterCache:
    """Allowed sets of one collection's current snapshot, keyed by the compiled filter.

    Up to 16 filters are kept (least recently used dropped first); gathered vectors for exact
    scans are kept within :func:`vector_budget`, the least recently used entries' vectors
    dropped first to make room. Thread-safe: searches of one snapshot
    may run concurrently.
    """

    def __init__(self) -> None:
        self._owner: object | None = None
        self._entries: OrderedDict[Hashable, AllowedSet] = OrderedDict()
        self._vector_bytes = 0
        self._lock = threading.Lock()

    def allowed(
        self,
        state: Any,
        key: Hashable,
        rowid_mask: Callable[[], NDArray[np.bool_]] | None,
    ) -> AllowedSet:
        """The allowed set of ``state`` for the filter named ``key``.

        Args:
            state: the snapshot (an ``AnnState``; compared by identity).
            key: a hashable name of the filter (e.g. its compiled SQL and parameters), or None
                for no filter.
            rowid_mask: computes bool[rows] of rows whose record passes the filter (called once
                per snapshot and key); None for no filter.
        Returns:
            The cached or newly computed set (live rows only).
        """
        with self._lock:
            if self._owner is not state:
                self._owner, self._vector_bytes = state, 0
                self._entries.clear()
            found = self._entries.get(key)
            if found is not None:
                self._entries.move_to_end(key)
                return found
        mask = state.alive if rowid_mask is None else state.alive & rowid_mask()
        entry = AllowedSet(mask)
        with self._lock:
            if self._owner is state:
                self._entries[key] = entry
                while len(self._entries) > _ENTRIES:
                    _, dropped = self._entries.popitem(last=False)
                    self._vector_bytes -= 0 if dropped.vectors is None else dropped.vectors.nbytes
        return entry

    def keep_vectors(self, state: Any, entry: AllowedSet, vectors: NDArray[np.float32]) -> None:
        """Keep an entry's gathered vectors for later exact scans, within the byte budget,
        dropping the vectors of the least recently used entries to make room."""
        budget = vector_budget(state.rows, state.dim)
        with self._lock:
            if self._owner is not state or entry.vectors is not None:
                return
            if not any(kept is entry for kept in self._entries.values()):
                return  # evicted meanwhile: its bytes would never be given back
            if vectors.nbytes > budget:
                return
            for other in self._entries.values():  # least recently used first
                if self._vector_bytes + vectors.nbytes <= budget:
                    break
                if other.vectors is not None and other is not entry:
                    self._vector_bytes -= other.vectors.nbytes
                    other.vectors = None  # a search holding them keeps its own reference
            entry.vectors = vectors
            self._vector_bytes += vectors.nbytes


def rowid_mask(
    record_rowids: NDArray[np.int64], allowed_rowids: NDArray[np.int64]
) -> NDArray[np.bool_]:
    """bool[n]: which rows belong to an allowed record (a lookup table, O(n))."""
    if allowed_rowids.size == 0 or record_rowids.size == 0:
        return np.zeros(record_rowids.shape[0], dtype=np.bool_)
    top = int(max(record_rowids.max(), allowed_rowids.max())) + 1
    table = np.zeros(top, dtype=np.bool_)
    table[allowed_rowids] = True
    return table[record_rowids]
