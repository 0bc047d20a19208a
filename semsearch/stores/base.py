"""The Store protocol: what every backend implements. Only plain values cross it.

A store persists collections, records, chunks (with their float32 vectors and embedding status)
and a keyword index, and answers three primitive queries: exact-or-ANN vector search, keyword
search and structured find. Chunking, hashing, embedding, fusion and privacy live above it, once.
Filters arrive as the AST from :mod:`semsearch.filters`; each backend compiles them with bound
parameters.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar, runtime_checkable

import numpy as np
from numpy.typing import NDArray
from typing_extensions import TypeIs

from semsearch.filters import Filter, IdMatch
from semsearch.results import Chunk, Record

__all__ = [
    "ChunkWrite",
    "CollectionInfo",
    "CollectionSwap",
    "PartialIdFilters",
    "PendingChunk",
    "RecordWrite",
    "ScoredChunk",
    "SentenceWindows",
    "Store",
    "StoreStats",
    "VectorExport",
    "VectorRecords",
    "WindowSet",
    "WriteResult",
    "supports",
]

_Capability = TypeVar("_Capability")


def supports(store: object, capability: type[_Capability]) -> TypeIs[_Capability]:
    """``isinstance(store, capability)`` for an optional store capability (a
    ``runtime_checkable`` Protocol), answered once per store class: Python 3.11 checks every
    member of the protocol on each call (tens of microseconds), and a search asks several.
    Stores declare capabilities as methods of their class, never per instance."""
    key = (type(store), capability)
    found = _SUPPORTS.get(key)
    if found is None:
        found = _SUPPORTS[key] = issubclass(type(store), capability)
    return found


_SUPPORTS: dict[tuple[type, type], bool] = {}


@dataclass(frozen=True)
class CollectionInfo:
    """A collection as stored: name, schema (JSON), embedder model id and dimension.

    ``created_at`` is the store's creation stamp (ISO-8601 text, microseconds where the backend
    keeps them): it tells two collections of the same name apart (one dropped, one created
    again), see :func:`semsearch.lifecycle.check_stored`. None in an info not read from a store.
    """

    name: str
    schema_json: str
    model_id: str
    dim: int | None = None
    options: dict[str, Any] = field(default_factory=dict)
    created_at: str | None = None


@dataclass(frozen=True)
class ChunkWrite:
    """A chunk to store. ``content_hash`` is sha256 of the embedded text (model fixed per
    collection), keyed by the reuse scope in conversation memory (the user: see
    :func:`semsearch.collection_options.reuse_scope`); stores reuse a vector by equal hash."""

    chunk: Chunk
    embed_text: str
    content_hash: str


@dataclass(frozen=True)
class RecordWrite:
    """A record to store with its chunks.

    Attributes:
        id: record id.
        fields: the record's fields (JSON object, without ``id`` and ``text``).
        attrs: declared field values, type-checked, for filters.
        text: the record's derived text.
        content_hash: sha256 over fields + text; equal hash means nothing changed.
        chunks: the record's chunks, in order.
    """

    id: str
    fields: dict[str, Any]
    attrs: dict[str, Any]
    text: str
    content_hash: str
    chunks: list[ChunkWrite]


@dataclass(frozen=True)
class PendingChunk:
    """A chunk that still needs a vector: its store id, the text to embed, and its record's id
    (named in the report and the chunk's error when that text fails alone)."""

    chunk_id: int
    embed_text: str
    record_id: str = ""


@dataclass
class WriteResult:
    """What ``write_records`` did: record counts, and the chunks left to embed."""

    added: int = 0
    updated: int = 0
    unchanged: int = 0
    reused: int = 0
    pending: list[PendingChunk] = field(default_factory=list)


@dataclass(frozen=True)
class ScoredChunk:
    """A search candidate: chunk id, its record id, and the leg's score (higher is better).

    ``provisional`` marks a record-level keyword hit whose ``chunk_id`` is the record's first
    chunk, not yet the one that matches best: search asks the store (:class:`~semsearch.stores.keyword_capabilities.KeywordChunks`)
    for the best chunk only for the hits it shows (a second full-text query costs as much as
    the ranking).

    ``evidence`` (keyword hits): how much of the query's meaningful terms the record holds,
    float >= 0: the BM25 of its clauses that are not stop words and are held by at most half of
    the records (:func:`semsearch.keyword_query.meaningful`), divided by what a record holding
    each of them once at the average length would score. ``coverage``: the share of that
    reference score, in [0, 1], carried by the meaningful clauses the record holds at all. Both
    are 0 when it holds none of them (then it carries no keyword evidence for the default
    floor); a substring scan's hit carries the share of the query's pieces it holds as both,
    in (0, 1] (:func:`semsearch.stores.query_rules.scanned`); None when the store did not say.
    """

    chunk_id: int
    record_id: str
    score: float
    provisional: bool = False
    evidence: float | None = None
    coverage: float | None = None


@dataclass(frozen=True)
class StoreStats:
    """Counts for one collection."""

    records: int
    chunks: int
    embedded: int
    pending: int
    failed: int
    last_updated: str | None

    @classmethod
    def from_status_counts(
        cls, records: int, by_status: Mapping[str, int], last_updated: str | None
    ) -> StoreStats:
        """Stats from a record count and chunk counts per status (``embedded``, ``pending``,
        ``failed``; a status with no chunks may be left out), as SQL stores count them."""
        return cls(
            records=records,
            chunks=sum(by_status.values()),
            embedded=by_status.get("embedded", 0),
            pending=by_status.get("pending", 0),
            failed=by_status.get("failed", 0),
            last_updated=last_updated,
        )


class Store(Protocol):
    """A storage backend. Methods take the collection name first; errors are SemsearchErrors."""

    location: str

    def close(self) -> None: ...

    # -- collections ------------------------------------------------------------------------
    def exists(self) -> bool:
        """True when the store holds an index: a SQLite file that exists; on a server (PostgreSQL,
        Milvus), semsearch has written there before. Never creates anything."""
        ...

    def get_collection(self, name: str) -> CollectionInfo | None: ...
    def list_collections(self) -> list[CollectionInfo]: ...
    def create_collection(self, info: CollectionInfo) -> None: ...
    def update_collection(self, info: CollectionInfo) -> None: ...
    def drop_collection(self, name: str) -> bool: ...

    # -- records ----------------------------------------------------------------------------
    def record_hashes(self, collection: str, ids: Sequence[str]) -> dict[str, str]: ...

    def write_records(self, collection: str, records: Sequence[RecordWrite]) -> WriteResult:
        """Write records, chunks and keyword rows in ONE transaction; reuse vectors by hash."""
        ...

    def set_vectors(
        self, collection: str, chunk_ids: Sequence[int], vectors: NDArray[np.float32]
    ) -> None:
        """Store float32[n, dim] unit vectors for chunks; marks them embedded.

        The first vectors fix the collection's dimension; vectors of another dimension raise
        DimensionMismatch and nothing is written.
        """
        ...

    def mark_failed(self, collection: str, chunk_ids: Sequence[int], error: str) -> None: ...
    def pending_chunks(
        self, collection: str, limit: int, where: Filter | None = None
    ) -> list[PendingChunk]:
        """Up to ``limit`` chunks without a vector: every ``pending`` chunk before any
        ``failed`` one, oldest (lowest id) first within each, so chunks that failed alone
        (a poison text) never hold back chunks that were never tried.

        ``where`` limits them to chunks of records matching the filter (e.g. one user's
        messages, for a scoped backfill); None means every record.
        """
        ...

    def get_records(self, collection: str, ids: Sequence[str]) -> list[Record]: ...
    def get_chunks(self, collection: str, chunk_ids: Sequence[int]) -> dict[int, Chunk]:
        """``{chunk_id: Chunk}`` for the ids that exist. Chunk ids are only meaningful within
        ``collection`` (a backend may number each collection's chunks from 1)."""
        ...

    def record_fields(self, collection: str, ids: Sequence[str]) -> dict[str, dict[str, Any]]: ...
    def delete_records(self, collection: str, ids: Sequence[str]) -> int: ...
    def list_ids(self, collection: str) -> list[str]:
        """Every record id, sorted by code point (Python's ``str`` order) on every backend."""
        ...

    def count(self, collection: str) -> int: ...
    def stats(self, collection: str, where: Filter | None = None) -> StoreStats:
        """Record and chunk counts by embedding status; ``where`` counts matching records only."""
        ...

    # -- queries ----------------------------------------------------------------------------
    def vector_search(
        self,
        collection: str,
        vector: NDArray[np.float32],
        k: int,
        where: Filter | None,
        exact: bool = False,
    ) -> list[ScoredChunk]:
        """Top-k chunks by cosine similarity in [-1, 1], best first, ties by record id.

        ``exact=True`` forces an exact scan where the backend would use an ANN index. Must
        return min(k, matching chunks) rows whatever the filter's selectivity.
        """
        ...

    def keyword_search(
        self, collection: str, text: str, k: int, where: Filter | None
    ) -> list[ScoredChunk]:
        """Top-k chunks by keyword score: >= 0, higher is better, comparable within one query.

        The score is backend-specific (BM25 on SQLite, ``ts_rank_cd`` on PostgreSQL); every
        backend ORs the query's words, so a chunk matching more of them ranks higher.
        """
        ...

    def find(
        self,
        collection: str,
        where: Filter | None,
        limit: int,
        offset: int,
        order_by: Sequence[tuple[str, bool]],
    ) -> list[Record]:
        """Records matching ``where`` without ranking; ``order_by`` is (field, descending) pairs."""
        ...


@runtime_checkable
class VectorExport(Protocol):
    """Optional store capability: return stored vectors (``Collection.vectors`` uses it)."""

    def chunk_vectors(
        self, collection: str, ids: Sequence[str]
    ) -> dict[str, list[NDArray[np.float32] | None]]:
        """``{record_id: [float32[dim] vector, or None if not embedded, per chunk by ordinal]}``."""
        ...


@runtime_checkable
class PartialIdFilters(Protocol):
    """Optional store capability, declared by a store whose filter compiler cannot express every
    record-id glob (:class:`~semsearch.filters.IdMatch`). Search then sends it only the id
    matches it accepts and checks the rest of a path scope in Python, refetching deeper.
    A store without this method compiles every ``IdMatch`` exactly."""

    def compiles_id_match(self, match: IdMatch) -> bool:
        """True when this store's filters express ``match`` exactly."""
        ...


@runtime_checkable
class VectorRecords(Protocol):
    """Optional store capability: vector search that names only the records it keeps.

    A chunk-level ``vector_search`` to ``4 * limit`` chunks names every chunk's record; a hybrid
    leg of 200 records named 800. This returns the candidate chunks of the best ``limit``
    records only, so a caller keeping one chunk per record gets the same records as from the
    chunk-level search, deepened until ``limit`` records are found or no chunk is left.
    """

    def vector_search_records(
        self,
        collection: str,
        vector: NDArray[np.float32],
        limit: int,
        where: Filter | None,
        exact: bool = False,
    ) -> list[ScoredChunk]:
        """Every candidate chunk of the best ``limit`` records by cosine similarity in [-1, 1]
        (a record ranked by its best chunk), best first, ties by record id; so
        min(limit, matching records) distinct records. Raises DimensionMismatch like
        ``vector_search``."""
        ...


@runtime_checkable
class CollectionSwap(Protocol):
    """Optional store capability: replace one collection by another atomically (``reembed``)."""

    def collection_version(self, name: str) -> int | None:
        """A counter that every write to the collection changes; None if it does not exist."""
        ...

    def replace_collection(
        self, target: str, source: str, expected_version: int | None = None
    ) -> bool:
        """In ONE transaction: drop ``target`` (if it exists) and rename ``source`` to ``target``.

        Readers see either the old or the new collection, never neither and never a mix. With
        ``expected_version``, nothing changes and False is returned if ``target``'s
        :meth:`collection_version` differs (it was written meanwhile); otherwise returns True.
        """
        ...


@dataclass(frozen=True)
class WindowSet:
    """The sentence windows of one chunk (see :mod:`semsearch.windows`).

    Attributes:
        spans: int32[m, 2], each window's ``(start, end)`` char offsets into the chunk's text
            (``Chunk.text``, end exclusive), in text order; m >= 2.
        vectors: float[m, dim], each window's unit vector from the collection's model: float32
            as read back from int8 codes (stores/window_blobs.py), float16 from blobs written
            before, or as computed; either is enough for rescoring (cosines move by < 1e-3).
    """

    spans: NDArray[np.int32]
    vectors: NDArray[np.floating]


@runtime_checkable
class SentenceWindows(Protocol):
    """Optional store capability: the sentence windows of chunks, stored beside their vectors.

    Windows belong to a chunk's content (its ``content_hash``), so a chunk whose vector is
    reused by hash reuses its windows too; the store drops them when no chunk of the collection
    has that content any more (its records deleted or rewritten). A store without this
    capability, or a chunk without windows (one sentence, or written before windows existed),
    scores by its chunk vector alone.
    """

    def set_windows(self, collection: str, windows: Mapping[int, WindowSet]) -> None:
        """Store ``{chunk id: WindowSet}``; chunks that no longer exist are skipped."""
        ...

    def window_vectors(self, collection: str, chunk_ids: Sequence[int]) -> dict[int, WindowSet]:
        """``{chunk id: WindowSet}`` for the chunks that have windows (others left out)."""
        ...
