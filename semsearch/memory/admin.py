"""Conversation memory's maintenance: backfill, counts and the health probe.

Used by :class:`semsearch.ConversationMemory`; each function takes the memory's Collection.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from typing import Any

from semsearch.collection import Collection
from semsearch.embedders.base import Embedder
from semsearch.embedders.query_cache import uncached
from semsearch.errors import EmbedderUnavailable, SemsearchError
from semsearch.filters import parse_filter
from semsearch.memory.types import BackfillReport, ComponentHealth, MemoryHealth, MemoryStats
from semsearch.worker import EmbeddingWorker

__all__ = ["backfill", "memory_health", "memory_stats", "pending_count", "probe_embedder"]

#: Records read per page when counting conversations and topics.
STATS_PAGE = 5000


def memory_stats(collection: Collection, where: Mapping[str, Any] | None) -> MemoryStats:
    """Counts for the messages matching ``where`` (None: all), reading their fields page by page.

    Chunk counts by status come from the store (one query); conversations and topics are counted
    over every message's fields, O(messages).
    """
    ast = parse_filter(where, collection.schema)
    store = collection.store
    counts = store.stats(collection.name, ast) if ast else store.stats(collection.name)
    conversations: set[tuple[str, str]] = set()
    topics: Counter[str] = Counter()
    offset = 0
    while True:
        page = collection.find(where, limit=STATS_PAGE, offset=offset)
        for record in page:
            fields = record.fields
            conversations.add((str(fields["user_id"]), str(fields["conversation_id"])))
            topics.update(fields.get("topics") or ())
        if len(page) < STATS_PAGE:
            break
        offset += STATS_PAGE
    return MemoryStats(
        counts.records, counts.embedded, counts.pending, counts.failed, len(conversations),
        dict(sorted(topics.items())),
    )  # fmt: skip


def memory_health(
    collection: Collection, worker: EmbeddingWorker | None, where: Mapping[str, Any] | None = None
) -> MemoryHealth:
    """Probe the store with the chunk counts of the messages matching ``where`` (None: all),
    the embedder with one short text, and report the worker's state; never raises. Pending and
    failed chunks are counted apart, as :func:`memory_stats` counts them."""
    pending = failed = 0
    try:
        ast = parse_filter(where, collection.schema)
        s = (
            collection.store.stats(collection.name, ast)
            if ast
            else collection.store.stats(collection.name)
        )
        pending, failed = s.pending, s.failed
        store = ComponentHealth(
            True,
            f"{s.records} messages in collection {collection.name!r}, {pending} pending, "
            f"{failed} failed",
        )
    except SemsearchError as exc:
        store = ComponentHealth(False, exc.message)
    except Exception as exc:  # a driver error must not escape a health probe
        store = ComponentHealth(False, f"{type(exc).__name__}: {exc}")
    embedder = probe_embedder(collection.embedder, collection.model_id)
    status = worker.status(collection.name) if worker is not None else None
    return MemoryHealth(store.ok and embedder.ok, store, embedder, status, pending, failed)


def probe_embedder(embedder: Embedder, model_id: str) -> ComponentHealth:
    """Embed one short text with ``embedder`` (past any query cache); never raises: a failure
    is reported with its message."""
    try:
        vector = uncached(embedder).embed_query("health check")
        return ComponentHealth(True, f"{model_id} ({vector.shape[0]}-d)")
    except SemsearchError as exc:
        return ComponentHealth(False, exc.message)
    except Exception as exc:
        return ComponentHealth(False, f"{type(exc).__name__}: {exc}")


def pending_count(collection: Collection, where: Mapping[str, Any] | None) -> int:
    """Chunks without a vector (pending + failed) among the records matching ``where``."""
    ast = parse_filter(where, collection.schema)
    store = collection.store
    s = store.stats(collection.name, ast) if ast else store.stats(collection.name)
    return s.pending + s.failed


def backfill(collection: Collection, where: Mapping[str, Any] | None, batch: int) -> BackfillReport:
    """Embed every chunk without a vector among the records matching ``where``, ``batch`` at a
    time, until none is left or the embedder fails (then ``error`` says why)."""
    report = BackfillReport()
    while True:
        try:
            done = collection.embed_pending(batch, where=where)
        except EmbedderUnavailable as exc:
            report.error = exc.message
            break
        report.embedded += done
        if done == 0:
            break
    report.remaining = pending_count(collection, where)
    return report
