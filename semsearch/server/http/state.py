"""What one HTTP server holds: the database, open collections, shared embedders, keys, worker.

Collections are opened once and cached (opening one resolves its embedder, and a model should
load once per process, not once per request). Collections that use the same model share one
Embedder instance.
"""

from __future__ import annotations

import gc
import logging
import threading
from dataclasses import dataclass, field

from anyio import CapacityLimiter

from semsearch.collection import Collection
from semsearch.database import MEMORY_COLLECTION, MEMORY_OPTION, Database
from semsearch.embedders.base import Embedder
from semsearch.embedders.query_cache import QueryCache, uncached, with_query_cache
from semsearch.embedders.registry import resolve_embedder
from semsearch.errors import BackendUnavailable, IndexNotFound, InvalidQuery, SemsearchError
from semsearch.rerank import Reranker
from semsearch.results import UpsertReport
from semsearch.schema import Schema
from semsearch.server.http.auth import KeyRing
from semsearch.server.http.models import CollectionIn, CollectionOut
from semsearch.server.http.rate import DEFAULT_BURST, DEFAULT_PER_MINUTE, RateLimiter
from semsearch.worker import EmbeddingWorker

__all__ = ["MEMORY_COLLECTION", "Limits", "ServerState", "describe"]


@dataclass(frozen=True)
class Limits:
    """Request limits.

    Attributes:
        max_body_bytes: largest request body accepted (413 above it); default 8 MiB.
        max_batch: most records per upsert call (413 above it); default 1000.
        rate_per_minute: requests per minute per API key (429 above it, see
            :mod:`semsearch.server.http.rate`), at least one a day; 0 or ``inf`` turn it off;
            None: 600 with API keys, off in local mode (no keys). ``ServerState`` raises
            InvalidQuery for a smaller one.
        rate_burst: requests a key may send at once before the per-minute rate applies.
    """

    max_body_bytes: int = 8 * 1024 * 1024
    max_batch: int = 1000
    rate_per_minute: float | None = None
    rate_burst: int = DEFAULT_BURST


@dataclass
class ServerState:
    """The server's shared objects.

    Args:
        db: the open Database (the server does not close it; its creator does).
        keys: the API keys; empty means local mode (loopback only, no auth).
        embedder: the embedder (an instance or spec) every collection must use; a collection
            built with another model answers 409. None: each collection uses its stored model
            and new collections the default (``SEMSEARCH_MODEL`` or all-MiniLM-L6-v2).
        worker: the background embedding worker (one is created if None).
        limits: request body and batch limits.
        search_limiter: searches running at once (default 4); more wait on the event loop
            instead of contending for the GIL and the store's lock in threads.
        private: collections the generic collection routes neither list nor open (404, as if
            absent) nor create: by default the per-user memory of ``/memory``.
        reranker: the server-wide reranker (``serve --reranker``): searches rerank with it
            unless a request sends ``rerank: false``; None: no reranking.
        rerank_top_n: hits it rescores (None: 50).
        query_cache: the LRU of query vectors every collection's embedder shares (its hit rate
            is in ``/health``); None turns it off.
    """

    db: Database
    keys: KeyRing = field(default_factory=lambda: KeyRing({}))
    embedder: str | Embedder | None = None
    worker: EmbeddingWorker = field(default_factory=EmbeddingWorker)
    limits: Limits = field(default_factory=Limits)
    search_limiter: CapacityLimiter = field(default_factory=lambda: CapacityLimiter(4))
    private: frozenset[str] = frozenset({MEMORY_COLLECTION})
    reranker: Reranker | None = None
    rerank_top_n: int | None = None
    query_cache: QueryCache | None = field(default_factory=QueryCache)
    _collections: dict[str, Collection] = field(default_factory=dict, init=False, repr=False)
    _embedders: dict[str, Embedder] = field(default_factory=dict, init=False, repr=False)
    _lock: threading.RLock = field(default_factory=threading.RLock, init=False, repr=False)
    rate: RateLimiter = field(init=False, repr=False)

    def __post_init__(self) -> None:
        per_minute = self.limits.rate_per_minute
        if per_minute is None:
            per_minute = 0.0 if self.keys.empty else DEFAULT_PER_MINUTE
        self.rate = RateLimiter(per_minute, self.limits.rate_burst)

    def _embedder(self, stored_model: str | None) -> Embedder:
        """The shared embedder for a collection stored with ``stored_model`` (None: a new one).

        With an explicit server embedder, every collection uses it, so on a collection built
        with another model semantic and hybrid search and writes answer 409 (ModelMismatch), as
        the CLI does; keyword search and reads still work. Without one, each collection
        uses its stored model, and new collections use the default model.
        """
        spec: str | Embedder | None = self.embedder if self.embedder is not None else stored_model
        embedder = resolve_embedder(spec)  # cheap: nothing is loaded until first use
        cached = with_query_cache(embedder, self.query_cache)
        return self._embedders.setdefault(embedder.model_id, cached)

    def served_embedder(self) -> Embedder:
        """The model ``/v1/embeddings`` serves: the server's embedder, else the default model
        (``SEMSEARCH_MODEL`` or all-MiniLM-L6-v2), shared with the collections that use it."""
        return self._embedder(None)

    def warm_up(self) -> None:
        """Load the local embedding model of every existing collection, then freeze the heap.

        Loading at startup spares the first semantic search the model load (1-3 s). Freezing
        (``gc.freeze()``, Python 3.7+) moves every object alive so far, the model's
        included, out of the cyclic garbage collector's view, so a full collection no longer
        walks millions of long-lived objects in the middle of a request: on this project's
        machine the p99 of 50 clients searching fell from 120 to 87 ms (docs/benchmarks.md).
        A collection that cannot be opened is skipped (it answers its own error later); API
        models are never called here.
        """
        from semsearch.embedders.local import LocalEmbedder

        for name in self.db.collections(include_memory=True):
            try:
                embedder = uncached(self._open(name).embedder)  # a cached vector warms nothing
                if isinstance(embedder, LocalEmbedder):
                    embedder.embed_query("warm-up")
            except SemsearchError as exc:
                logging.getLogger(__name__).warning("warm-up skipped %r: %s", name, exc.message)
        gc.collect()
        gc.freeze()

    def resume_pending(self) -> list[str]:
        """Queue every collection that has pending chunks on the background worker.

        Chunks stay pending in the store when a server stops (or dies) before its worker has
        embedded them; the next server finishes them at start-up rather than waiting for a new
        write or a re-index. With ``serve --workers N`` each process does this, so the first
        batches may be embedded twice (same vectors). A collection that cannot be opened is
        skipped (it answers its own error later).

        Returns:
            The names queued.
        """
        queued: list[str] = []
        for name in self.db.collections(include_memory=True):
            try:
                coll = self._open(name)
                if coll.stats().pending and self.worker.submit(coll):
                    queued.append(name)
            except SemsearchError as exc:
                logging.getLogger(__name__).warning("resume skipped %r: %s", name, exc.message)
        return queued

    def collections(self) -> list[str]:
        """The names of the collections the generic routes serve (``private`` ones left out)."""
        return [name for name in self.db.collections() if name not in self.private]  # memory: never

    def collection(self, name: str) -> Collection:
        """An existing, non-private collection, opened once and cached.

        Raises:
            IndexNotFound: no collection called ``name``, or a private one (the hint lists the
                others).
        """
        if name in self.private:
            raise self._not_found(name)
        coll = self._open(name)
        if coll.info.options.get(MEMORY_OPTION):  # a memory kept under another name
            raise self._not_found(name)
        return coll

    def _not_found(self, name: str) -> IndexNotFound:
        existing = ", ".join(self.collections()) or "none yet"
        return IndexNotFound(
            f"no collection {name!r}",
            hint=f"existing collections: {existing}; an admin creates one with POST /collections",
        )

    def _open(self, name: str) -> Collection:
        """Any existing collection, private ones included, opened once and cached."""
        with self._lock:
            cached = self._collections.get(name)
            if cached is not None and cached.usable:  # else dropped elsewhere: open it again
                return cached
            info = self.db.store.get_collection(name)
            if info is None:
                raise self._not_found(name)
            embedder = self._embedder(info.model_id)
            if self.db.is_memory(name):  # warm-up and resume only: routes never reach it
                from semsearch.memory.types import MESSAGE_SCHEMA

                coll = self.db.memory_collection(name, schema=MESSAGE_SCHEMA, embedder=embedder)
            else:
                coll = self.db.collection(name, embedder=embedder, create=False, strict_model=False)
            # another model: keyword search and reads work, semantic search answers 409
            self._collections[name] = coll
            return coll

    def create(self, spec: CollectionIn) -> tuple[Collection, bool]:
        """Create a collection, or reopen an existing one whose schema is compatible.

        Returns:
            (collection, created).
        Raises:
            SchemaConflict: the collection exists with a conflicting schema (409).
            InvalidQuery: the name is a private collection's (400).
            SemsearchError: a bad field name or type (400).
        """
        if spec.name in self.private:
            raise InvalidQuery(
                f"the collection name {spec.name!r} is reserved for conversation memory",
                hint="pick another name; messages are added with POST /memory/messages",
            )
        schema = Schema.from_types(spec.fields, text=tuple(spec.text), chunker=spec.chunker)
        with self._lock:
            info = self.db.store.get_collection(spec.name)
            embedder = self._embedder(info.model_id if info else None)
            coll = self.db.collection(
                spec.name,
                schema=schema,
                embedder=embedder,
                keyword_tokenizer=spec.keyword_tokenizer,
            )
            self._collections[spec.name] = coll
            return coll, info is None

    def upsert(self, name: str, records: list[dict[str, object]]) -> tuple[UpsertReport, bool]:
        """Store records at once (keyword-searchable, pending) and queue their embedding.

        Never calls the embedder. Returns (report, queued); ``queued`` is False when the worker
        is stopped or its queue is full (the chunks stay pending for ``reindex``).

        Raises:
            InvalidRecord: as ``Collection.upsert``, or no record yields any text from the
                collection's template (``Schema.require_text``); nothing is written.
        """
        coll = self.collection(name)
        coll.schema.require_text(records)
        report = coll.upsert(records, embed=False)
        queued = False
        if report.chunks_pending:
            queued = self.worker.submit(coll)
        return report, queued

    def reindex(self, name: str) -> int:
        """Embed every pending or failed chunk now; returns how many were newly embedded.

        Raises:
            EmbedderUnavailable: the embedder still fails (503); chunks stay keyword-searchable.
        """
        coll = self.collection(name)
        with self.worker.exclusive(name):
            return coll.reindex().chunks_embedded

    def queue_reindex(self, name: str) -> None:
        """Hand every pending or failed chunk of ``name`` to the background embedder.

        Raises:
            IndexNotFound: no such collection (404).
            BackendUnavailable: the worker is stopped or its queue is full (503); the chunks
                stay stored, keyword-searchable and pending.
        """
        if not self.worker.submit(self.collection(name)):
            raise BackendUnavailable(
                "the background embedder cannot take more work now",
                hint="retry later, or reindex with wait=true to embed in this request",
            )


def describe(coll: Collection) -> CollectionOut:
    """The API view of a collection."""
    info = coll.store.get_collection(coll.name) or coll.info
    return CollectionOut(
        name=coll.name,
        model_id=info.model_id,
        dim=info.dim,
        fields={f.name: f.type for f in coll.schema.fields},
        text=list(coll.schema.text),
        chunker=coll.schema.chunker,
        records=coll.count(),
    )
