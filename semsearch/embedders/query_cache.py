"""An LRU cache of query embeddings for long-running processes (``serve``, ``mcp``, memory).

People repeat queries: a web page re-runs the same search as the user pages or filters, an
agent asks again in other words only sometimes. :class:`QueryCache` keeps the last
``capacity`` query vectors keyed by ``(model_id, text)``, so a repeated query skips the model;
:func:`with_query_cache` wraps an Embedder so that its ``embed_query`` goes through one.
Document embedding is never cached (chunks are already skipped by content hash at write).

The plain library call does not cache: a script that searches once per process would only
pay the memory, and a cache hides an embedder outage for the queries it holds. Health checks
call the wrapped embedder (:func:`uncached`), never the cache.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from semsearch.embedders.base import Embedder

__all__ = [
    "DEFAULT_CAPACITY",
    "CacheStats",
    "CachedEmbedder",
    "QueryCache",
    "uncached",
    "with_query_cache",
]

#: Query vectors kept by default: 1024 x 384 float32 (all-MiniLM-L6-v2) is about 1.5 MB.
DEFAULT_CAPACITY = 1024


@dataclass(frozen=True)
class CacheStats:
    """A cache's counters since it was made.

    Attributes:
        hits, misses: lookups answered from the cache / by the model.
        entries: vectors held now (<= capacity).
        capacity: most vectors held; the least recently used goes first.
        hit_rate: hits / (hits + misses) in [0, 1]; 0.0 before the first lookup.
    """

    hits: int
    misses: int
    entries: int
    capacity: int
    hit_rate: float

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return asdict(self)


class QueryCache:
    """A thread-safe LRU of query vectors keyed by ``(model_id, text)``.

    Args:
        capacity: most vectors held, >= 1 (default :data:`DEFAULT_CAPACITY`).
    Raises:
        ValueError: capacity < 1.
    """

    def __init__(self, capacity: int = DEFAULT_CAPACITY) -> None:
        if capacity < 1:
            raise ValueError(f"capacity must be >= 1, got {capacity}")
        self.capacity = capacity
        self._vectors: OrderedDict[tuple[str, str], NDArray[np.float32]] = OrderedDict()
        self._hits = 0
        self._misses = 0
        self._lock = threading.Lock()

    def get(
        self, model_id: str, text: str, compute: Callable[[str], NDArray[np.float32]]
    ) -> NDArray[np.float32]:
        """The cached vector of ``text`` under ``model_id``, else ``compute(text)`` stored.

        Returns a copy (float32[dim]), so a caller cannot change what later lookups get. A
        ``compute`` that raises stores nothing. Two threads missing the same key at once both
        compute it (the model is not called under the lock).
        """
        key = (model_id, text)
        with self._lock:
            found = self._vectors.get(key)
            if found is not None:
                self._vectors.move_to_end(key)
                self._hits += 1
                return found.copy()
            self._misses += 1
        vector = np.array(compute(text), dtype=np.float32)
        with self._lock:
            self._vectors[key] = vector
            self._vectors.move_to_end(key)
            while len(self._vectors) > self.capacity:
                self._vectors.popitem(last=False)
        return vector.copy()

    def stats(self) -> CacheStats:
        """Hits, misses, entries, capacity and hit rate."""
        with self._lock:
            looked = self._hits + self._misses
            rate = self._hits / looked if looked else 0.0
            return CacheStats(self._hits, self._misses, len(self._vectors), self.capacity, rate)


class CachedEmbedder:
    """An Embedder whose ``embed_query`` goes through a :class:`QueryCache`.

    Everything else (``embed_documents``, ``token_spans``, ``model_id``, ``dim``,
    ``max_tokens`` and any other attribute, e.g. ``default_min_score``) is the wrapped
    embedder's, read through at each use.

    Args:
        inner: the embedder to wrap.
        cache: the cache, shared by every embedder of the process (keys carry the model id).
    """

    def __init__(self, inner: Embedder, cache: QueryCache) -> None:
        self.inner = inner
        self.cache = cache

    @property
    def model_id(self) -> str:
        """The wrapped embedder's model id."""
        return self.inner.model_id

    @property
    def dim(self) -> int:
        """The wrapped embedder's dimension."""
        return self.inner.dim

    @property
    def max_tokens(self) -> int:
        """The wrapped embedder's token window."""
        return self.inner.max_tokens

    def embed_documents(self, texts: Sequence[str]) -> NDArray[np.float32]:
        """The wrapped embedder's document vectors (never cached): float32[n, dim]."""
        return self.inner.embed_documents(texts)

    def embed_query(self, text: str) -> NDArray[np.float32]:
        """float32[dim], unit-normalised, from the cache when ``(model_id, text)`` is in it.

        Raises:
            EmbedderUnavailable: a miss and the wrapped embedder fails (nothing is cached).
        """
        return self.cache.get(self.inner.model_id, text, self.inner.embed_query)

    def token_spans(self, text: str) -> list[tuple[int, int]]:
        """The wrapped embedder's token offsets."""
        return self.inner.token_spans(text)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)  # only reached for attributes not defined here


def with_query_cache(embedder: Embedder, cache: QueryCache | None) -> Embedder:
    """``embedder`` wrapped in ``cache`` (as is when ``cache`` is None or it is wrapped)."""
    if cache is None or isinstance(embedder, CachedEmbedder):
        return embedder
    return CachedEmbedder(embedder, cache)


def uncached(embedder: Embedder) -> Embedder:
    """The embedder under a :class:`CachedEmbedder` (for health checks and warm-ups)."""
    return embedder.inner if isinstance(embedder, CachedEmbedder) else embedder
