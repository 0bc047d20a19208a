"""Collections in layout 2, written as the previous version wrote them (``<prefix>_records``
with one row per body part, the chunk part ``<prefix>_chunks_1`` with the vectors in its rows,
metadata with ``"layout": 2``), to test that the store reads them unchanged and that a write
migrates them to the current layout.

Rows are built here from the layout-2 column list (the record rows by
:func:`semsearch.stores.milvus.rows.record_rows`, which layout 3 no longer writes), through the
store's client.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any

from semsearch.results import Chunk
from semsearch.schema import Schema
from semsearch.stores.base import ChunkWrite, RecordWrite
from semsearch.stores.milvus import layout as lay
from semsearch.stores.milvus import rows as milvus_rows
from semsearch.stores.milvus.store import MilvusStore
from semsearch.stores.milvus.terms import keyword_terms

SCHEMA = Schema.from_types({"kind": "str"})


@dataclass(frozen=True)
class Item:
    """One record: id, its chunks' texts (joined by a space: its text), ``kind`` field, one
    vector per chunk (None: not embedded), whether embedding failed, undeclared fields."""

    rid: str
    texts: list[str]
    kind: str
    vectors: list[list[float] | None]
    failed: bool = False
    extra: dict[str, Any] = field(default_factory=dict)


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def record(it: Item) -> RecordWrite:
    """The record ``it`` describes, chunked one chunk per text (its content hash covers
    text and kind, not the undeclared fields)."""
    text = " ".join(it.texts)
    chunks, start = [], 0
    for n, piece in enumerate(it.texts):
        chunks.append(ChunkWrite(Chunk(piece, n, start, start + len(piece)), piece, _sha(piece)))
        start += len(piece) + 1
    fields = {"kind": it.kind, **it.extra}
    return RecordWrite(it.rid, fields, {"kind": it.kind}, text, _sha(text + it.kind), chunks)


def build(store: MilvusStore, name: str, items: list[Item], dim: int = 8) -> None:
    """Write collection ``name`` in layout 2 through ``store``'s client."""
    client = store.client()
    fields = lay.declared_fields(SCHEMA.to_json())
    records_name = lay.part_name(name, "records")
    chunks_name = lay.chunk_part(name, 1)
    lay.create(client, records_name, lay.records_schema(fields),
               lay.index_params(client, "records"))  # fmt: skip
    lay.create(client, chunks_name, lay.chunks_schema(fields, dim, layout=2),
               lay.index_params(client, "chunks", "HNSW", dim, layout=2))  # fmt: skip
    records, chunks = [], []
    for it in items:
        r = record(it)
        ids = []
        for c, vec in zip(r.chunks, it.vectors, strict=True):
            ch = c.chunk
            cid = lay.chunk_id(r.id, ch.ordinal, ch.char_start, ch.char_end, c.content_hash)
            ids.append(cid)
            status = "embedded" if vec is not None else ("failed" if it.failed else "pending")
            chunks.append({"chunk_id": cid, "record_id": r.id, "ordinal": ch.ordinal,
                           "text": ch.text, "terms": keyword_terms(ch.text),
                           "content_hash": c.content_hash, "status": status,
                           "error": "down" if it.failed else "",
                           "loc": lay.loc_json(ch.char_start, ch.char_end, (), None, None),
                           "vector": vec if vec is not None else lay.placeholder(dim),
                           "f_kind": it.kind})  # fmt: skip
        records += milvus_rows.record_rows(fields, r, ids)
    for part, rows in ((chunks_name, chunks), (records_name, records)):
        if rows:
            client.insert(part, rows)
        client.flush(part)
    store.put_meta({"name": name, "schema": SCHEMA.to_json(), "model_id": "fake:8", "dim": dim,
                    "options": {}, "created_at": lay.now(), "updated_at": lay.now(),
                    "index": "HNSW", "layout": 2, "chunks": chunks_name,
                    "generation": 1})  # fmt: skip
