"""Round trips of the Milvus store's vector search (issue 23): as many as raw pymilvus needs.

The real Milvus Lite client's methods are wrapped to count calls. 600 records with seeded fake
8-d vectors; ``bucket = i % 6``, so ``bucket == 0`` matches 100 chunks (at most EXACT_MAX: ranked
exactly from one query) and ``bucket < 3`` matches 300 (more: filtered ANN).
"""

from __future__ import annotations

import collections
import hashlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from semsearch.filters import parse_filter
from semsearch.results import Chunk
from semsearch.schema import Schema
from semsearch.stores.base import ChunkWrite, CollectionInfo, RecordWrite
from semsearch.stores.milvus.state import EXACT_MAX
from semsearch.stores.milvus.store import MilvusStore

NAME, N = "trips", 600
SCHEMA = Schema.from_types({"bucket": "int"})


def _record(i: int) -> RecordWrite:
    text = f"record {i}"
    digest = hashlib.sha256(text.encode()).hexdigest()
    fields = {"bucket": i % 6}
    return RecordWrite(
        f"r{i:03d}", fields, fields, text, digest, [ChunkWrite(Chunk(text, 0, 0, 10), text, digest)]
    )


@pytest.fixture
def counted(tmp_path: Path) -> Iterator[tuple[MilvusStore, collections.Counter[str]]]:
    store = MilvusStore(f"milvus-lite://{tmp_path / 'trips.db'}")
    store.create_collection(CollectionInfo(NAME, SCHEMA.to_json(), "fake:8", 8))
    vectors = np.random.default_rng(3).normal(size=(N, 8)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    result = store.write_records(NAME, [_record(i) for i in range(N)])
    store.set_vectors(NAME, [p.chunk_id for p in result.pending], vectors)
    store.vector_search(NAME, vectors[0], 1, None)  # the first read after writes flushes
    calls: collections.Counter[str] = collections.Counter()
    client = store.client()
    for name in ("search", "query", "get", "flush", "query_iterator"):

        def wrapped(*a: Any, _real: Any = getattr(client, name), _n: str = name, **k: Any) -> Any:
            calls[_n] += 1
            return _real(*a, **k)

        setattr(client, name, wrapped)
    yield store, calls
    store.close()


def test_unfiltered_search_is_one_search_call_fake_vectors(counted: Any) -> None:
    store, calls = counted
    hits = store.vector_search(NAME, np.ones(8, dtype=np.float32) / 8**0.5, 10, None)
    assert len(hits) == 10
    assert dict(calls) == {"search": 1}  # no metadata read, no count


def test_a_small_filter_is_one_query_then_none_fake_vectors(counted: Any) -> None:
    store, calls = counted
    where = parse_filter({"bucket": 0}, SCHEMA)
    q = np.ones(8, dtype=np.float32) / 8**0.5
    first = store.vector_search(NAME, q, 10, where)
    assert dict(calls) == {"query": 1} and EXACT_MAX >= 100
    again = store.vector_search(NAME, q, 10, where)
    assert dict(calls) == {"query": 1}  # the match set is cached until the next write
    assert again == first and len(first) == 10


def test_a_large_filter_is_one_search_once_known_fake_vectors(counted: Any) -> None:
    store, calls = counted
    where = parse_filter({"bucket": {"$lt": 3}}, SCHEMA)
    q = np.ones(8, dtype=np.float32) / 8**0.5
    assert len(store.vector_search(NAME, q, 10, where)) == 10
    assert dict(calls) == {"query": 1, "search": 1}  # the probe found 300 > EXACT_MAX
    calls.clear()
    assert len(store.vector_search(NAME, q, 10, where)) == 10
    assert dict(calls) == {"search": 1}
