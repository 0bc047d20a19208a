"""What every Milvus store open on one location in this process shares: caches and counters
that spare searches and writes round trips to Milvus.

- **metadata rows** (schema, dim, health): served from here on Milvus Lite, which admits one
  process per folder, so every write goes through this cache; for :data:`META_TTL` seconds on a
  server, where other processes may change them.
- **a write generation**, bumped by every write; the filter caches below hold for one
  generation only.
- **large filters**: filters found to match more than :data:`EXACT_MAX` vectors, so the next
  search with them goes straight to filtered ANN (on a server another process's deletes may shrink
  such a set unseen; the search is then ANN where it could be exact, and still returns
  min(limit, matches) hits).
- **small match sets** (Milvus Lite only): every vector matching a filter of at most
  :data:`EXACT_MAX` matches, so the same filter again is ranked with no round trip.
- **unflushed rows** per Milvus collection (see :data:`FLUSH_ROWS`).
- **writes in flight** (Milvus Lite only): the collections whose ``writing`` mark this process
  set (:mod:`semsearch.stores.milvus.lookup`; it stays set until the last store closes, so a
  batch costs no metadata write for it), the Milvus collections known not to exist (the
  windows collection), the batch of rows the last ``write_records`` holds back until
  ``set_vectors`` brings their vectors (:mod:`semsearch.stores.milvus.batch`), the
  ``content_hash -> chunk_id`` map of embedded chunks (vector reuse across records, see
  :mod:`semsearch.stores.milvus.lookup`), the collections whose leftovers of an interrupted
  migration this process cleaned (:mod:`semsearch.stores.milvus.migrate`), whether every chunk
  of a collection is embedded (layout 2: vector searches then need no status filter), the last
  ``record_hashes`` answer (``write_records`` asks again for the ids ingestion just asked for),
  and for a collection this process created, every record's content hash (so that filling it
  asks Milvus nothing per batch; dropped when a write raises).
- **keyword indexes** (layout 4): each collection's record-level keyword index, kept up to
  date by this process's writes (:mod:`semsearch.stores.milvus.keyword_build`).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

if TYPE_CHECKING:
    from semsearch.stores.milvus.keyword_index import KeywordIndex

__all__ = [
    "EXACT_MAX",
    "FLUSH_ROWS",
    "META_TTL",
    "SMALL_SETS",
    "LocationState",
    "SmallSet",
    "acquire",
    "release",
]

#: Seconds a Milvus server's metadata row is served from this process's cache.
META_TTL = 2.0
#: A filtered vector search whose filter matches at most this many chunks is answered by an
#: exact scan of exactly those chunks (filtered ANN loses recall on selective filters).
EXACT_MAX = 256
#: On a server, a Milvus collection is flushed once this many rows were written to it since its
#: last flush; on Milvus Lite, when Lite flushes by itself (its memtable past 128 MB: about
#: 75,000 chunk rows of 384-d vectors), as for raw pymilvus writes. Everywhere, before the
#: next read after any write (but a primary-key lookup), and on close. Milvus Lite answers reads
#: of unflushed rows (its memtable) by brute force in Python and indexes only flushed segments,
#: and every read visits every segment, so few large segments are best: a flush per small
#: batch, as semsearch did before, made one segment per batch. Writes look their rows up by
#: primary key (a dictionary lookup in the memtable), so a large memtable does not slow them.
#: On Lite a flush also starts the segment's HNSW build in a background thread, which slowed
#: the rest of a fill: flushing at 50,000 rows there made benchmarks/milvus.py's 100,000-record
#: fill about 1.2x slower than leaving it to Lite (52 s against 44 s, two runs each, loaded).
FLUSH_ROWS = 50_000
#: Small match sets kept per location (LRU): at most 32 x 256 x dim float32 (12.6 MB at 384-d).
SMALL_SETS = 32


@dataclass(frozen=True)
class SmallSet:
    """Every vector matching one filter: ``chunk_ids`` and ``record_ids`` (length m) and
    ``matrix``, float32[m, dim] unit rows, read at write ``generation``."""

    generation: int
    chunk_ids: list[int]
    record_ids: list[str]
    matrix: NDArray[np.float32]


@dataclass
class LocationState:
    """The shared state of one location (see the module docstring). ``lite``: Milvus Lite."""

    lite: bool
    meta: dict[str, tuple[float, dict[str, Any]]] = field(default_factory=dict)
    generation: int = 0
    large: dict[tuple[str, str], int] = field(default_factory=dict)
    small: OrderedDict[tuple[str, str], SmallSet] = field(default_factory=OrderedDict)
    #: (collection, filter) -> the smallest k for which its filtered ANN returned fewer than k
    #: hits since the last write (see ``ann_starved``).
    starved: dict[tuple[str, str], int] = field(default_factory=dict)
    #: Milvus collection -> rows upserted or deleted since its last flush.
    unflushed: dict[str, int] = field(default_factory=dict)
    #: semsearch collections whose ``writing`` mark this process set (Lite).
    marked: set[str] = field(default_factory=set)
    #: collection -> the rows its last write holds back until their vectors arrive (Lite).
    batches: dict[str, Any] = field(default_factory=dict)
    #: collection -> {content hash: chunk id} of embedded chunks (Lite; checked on use).
    hash_index: dict[str, dict[str, int]] = field(default_factory=dict)
    #: collection -> (generation, every chunk embedded): no vector search filter needed (Lite).
    all_embedded: dict[str, tuple[int, bool]] = field(default_factory=dict)
    #: collections whose leftover Milvus collections this process dropped (migrate.py).
    settled: set[str] = field(default_factory=set)
    #: Milvus collections found not to exist (Lite: only this process creates them); the
    #: windows collection, which most semsearch collections never get, is looked up here.
    absent: set[str] = field(default_factory=set)
    #: (generation, collection, {record id: content hash or None}) of the last record_hashes.
    hashes: tuple[int, str, dict[str, str | None]] | None = None
    #: collection -> {record id: content hash} of every stored record, while complete (Lite:
    #: from the empty records part this process created, kept by its writes and deletes).
    records: dict[str, dict[str, str]] = field(default_factory=dict)
    #: collection -> its keyword index in this process (layout 4; see
    #: :mod:`semsearch.stores.milvus.keyword_build`), dropped when a write raises.
    keyword: dict[str, KeywordIndex] = field(default_factory=dict)
    #: collection -> {ticket: head row's chunk id} (layout 3): a record's ordinal-0 chunk is
    #: stored in its head row, whose id is stable across versions, so this process hands out
    #: the chunk's content-derived id (its ticket) and maps it back here; ``set_vectors``,
    #: ``mark_failed`` and ``set_windows`` apply a ticket only while the head row still holds
    #: that content (:func:`semsearch.stores.milvus.rows.ticket_of`).
    tickets: dict[str, dict[int, int]] = field(default_factory=dict)
    users: int = 0

    def wrote(self) -> None:
        """Note a write: filter caches from earlier generations no longer hold."""
        self.generation += 1
        self.large.clear()
        self.small.clear()
        self.starved.clear()

    def failed(self) -> None:
        """Note a write that raised half-way: the next write sweeps what it left (its
        ``writing`` mark is still stored) and no cached row of it is trusted."""
        self.marked.clear()
        self.batches.clear()  # not committed (no record row): the next upsert redoes them
        self.records.clear()  # some record rows of it may be stored: ask Milvus again
        self.keyword.clear()  # likewise: build the keyword indexes again

    def forget(self, collection: str) -> None:
        """Note that ``collection`` was dropped: nothing cached for it holds."""
        for cache in (self.hash_index, self.records, self.tickets, self.keyword, self.batches):
            cache.pop(collection, None)
        self.settled.discard(collection)
        self.marked.discard(collection)
        self.wrote()

    def known_large(self, collection: str, expr: str) -> bool:
        """True when ``expr`` was found, since the last write, to match more than EXACT_MAX
        vectors of ``collection``."""
        return self.large.get((collection, expr)) == self.generation

    def mark_large(self, collection: str, expr: str) -> None:
        """Remember that ``expr`` matches more than EXACT_MAX vectors (until the next write)."""
        self.large[(collection, expr)] = self.generation

    def ann_starved(self, collection: str, expr: str, k: int) -> bool:
        """True when filtered ANN with ``expr`` returned fewer than some k' <= ``k`` hits since
        the last write: it would starve again, so the search goes straight to the exact scan
        it would fall back to. A stale answer (another process wrote) costs only speed: the exact
        scan is always right."""
        first = self.starved.get((collection, expr))
        return first is not None and k >= first

    def mark_starved(self, collection: str, expr: str, k: int) -> None:
        """Remember that filtered ANN with ``expr`` returned fewer than ``k`` hits (until the
        next write); at most SMALL_SETS * 8 filters are remembered."""
        key = (collection, expr)
        if key not in self.starved and len(self.starved) >= SMALL_SETS * 8:
            self.starved.clear()
        self.starved[key] = min(k, self.starved.get(key, k))

    def small_set(self, collection: str, expr: str) -> SmallSet | None:
        """The cached vectors matching ``expr`` if read since the last write, else None."""
        found = self.small.get((collection, expr))
        if found is None or found.generation != self.generation:
            return None
        self.small.move_to_end((collection, expr))
        return found

    def keep_small_set(self, collection: str, expr: str, found: SmallSet) -> None:
        """Cache a small match set read at ``found.generation`` (Milvus Lite only)."""
        if not self.lite or found.generation != self.generation:
            return
        self.small[(collection, expr)] = found
        while len(self.small) > SMALL_SETS:
            self.small.popitem(last=False)


_states: dict[str, LocationState] = {}
_lock = threading.Lock()


def acquire(location: str, lite: bool) -> LocationState:
    """The state of ``location`` (its display form), created for its first store."""
    with _lock:
        state = _states.setdefault(location, LocationState(lite))
        state.users += 1
        return state


def release(location: str, state: LocationState) -> None:
    """A store of ``location`` closed; the last one drops the state."""
    with _lock:
        state.users -= 1
        if state.users <= 0 and _states.get(location) is state:
            del _states[location]
