"""Shared helpers for the contract suite."""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

import semsearch
from semsearch.collection import Collection
from semsearch.embedders.fake import FakeEmbedder
from tests.contract.spells import RECORDS, SCHEMA


def as_stored(backend: str | Any, vectors: NDArray[np.float32]) -> NDArray[np.float32]:
    """``vectors`` at the precision the backend stores them: float16 values (upcast) on SQLite
    (format 5, docs/storage.md), unchanged (float32) on PostgreSQL and Milvus.

    Args:
        backend: the backend's name (``StoreUnderTest.backend``) or a store object.
    """
    from semsearch.stores.sqlite.store import SQLiteStore

    if backend == "sqlite" or isinstance(backend, SQLiteStore):
        return vectors.astype(np.float16).astype(np.float32)
    return vectors


def spells(database: semsearch.Database, embedder: FakeEmbedder | None = None) -> Collection:
    """The spells collection on ``database`` with the fake embedder, filled with RECORDS."""
    coll = database.collection("spells", schema=SCHEMA, embedder=embedder or FakeEmbedder(32))
    coll.upsert(RECORDS)
    return coll


def vector_leg(store: object) -> str:
    """The store method a semantic search calls: ``vector_search_records`` on a store that
    names only the records it keeps (VectorRecords), else ``vector_search``."""
    from semsearch.stores.base import VectorRecords

    return "vector_search_records" if isinstance(store, VectorRecords) else "vector_search"
