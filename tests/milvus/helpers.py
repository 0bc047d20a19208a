"""Helpers shared by the Milvus store tests: one-chunk records and a store of 8-d fake vectors."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from semsearch.results import Chunk
from semsearch.schema import Schema
from semsearch.stores.base import ChunkWrite, CollectionInfo, RecordWrite
from semsearch.stores.milvus.store import MilvusStore


def one_chunk_record(rid: str, text: str) -> RecordWrite:
    """A record of no fields whose text is one chunk; record and chunk hash = sha256(text)."""
    digest = hashlib.sha256(text.encode()).hexdigest()
    chunk = ChunkWrite(Chunk(text, 0, 0, len(text)), text, digest)
    return RecordWrite(rid, {}, {}, text, digest, [chunk])


@contextmanager
def fake8_store(folder: Path, name: str) -> Iterator[MilvusStore]:
    """A Milvus Lite store in ``folder`` with collection ``name`` (no fields, 8-d, model
    ``fake:8``), closed afterwards."""
    store = MilvusStore(f"milvus-lite://{folder / f'{name}.db'}")
    store.create_collection(CollectionInfo(name, Schema.from_types({}).to_json(), "fake:8", 8))
    try:
        yield store
    finally:
        store.close()
