"""Collections in layout 3, written as the previous version wrote them: one chunk part
``<prefix>_chunks_1`` with the record bodies on head rows, each chunk's snowball stems in
``terms`` analysed by Milvus' BM25 function into ``sparse`` (its keyword ranking), no ``folded``
and no ``kw``; metadata ``"layout": 3``. To test that the store searches them as before (with a
note), writes nothing on reads, and migrates them to layout 4 on the first write or ``compact``.

Rows are the current write path's rows (:mod:`semsearch.stores.milvus.rows`) turned back into
layout 3's columns, written through the store's client.
"""

from __future__ import annotations

import hashlib
from typing import Any

from semsearch.results import Chunk
from semsearch.schema import Schema
from semsearch.stores.base import ChunkWrite, RecordWrite, WriteResult
from semsearch.stores.milvus import layout as lay
from semsearch.stores.milvus import rows as milvus_rows
from semsearch.stores.milvus.store import MilvusStore
from semsearch.stores.milvus.terms import keyword_terms

SCHEMA = Schema.from_types({"kind": "str"})


def record(rid: str, texts: list[str], kind: str) -> RecordWrite:
    """A record whose chunks are ``texts`` (its text: them joined by a space)."""
    text = " ".join(texts)
    chunks, start = [], 0
    for n, piece in enumerate(texts):
        digest = hashlib.sha256(piece.encode()).hexdigest()
        chunks.append(ChunkWrite(Chunk(piece, n, start, start + len(piece)), piece, digest))
        start += len(piece) + 1
    digest = hashlib.sha256((text + kind).encode()).hexdigest()
    return RecordWrite(rid, {"kind": kind}, {"kind": kind}, text, digest, chunks)


def _old_row(row: dict[str, Any]) -> dict[str, Any]:
    """A layout-4 row as layout 3 stored it: ``terms`` in place of ``folded`` and ``kw``."""
    out = {k: v for k, v in row.items() if k not in ("folded", "kw")}
    out["terms"] = keyword_terms(row["text"])
    return out


def build(store: MilvusStore, name: str, records: list[RecordWrite], dim: int = 8) -> None:
    """Write collection ``name`` in layout 3 through ``store``'s client; chunk ``i`` of the
    whole collection gets the ``i``-th axis of a ``dim``-d identity matrix as its vector
    (wrapping around)."""
    client = store.client()
    fields = lay.declared_fields(SCHEMA.to_json())
    part = lay.chunk_part(name, 1)
    lay.create(client, part, lay.chunks_schema(fields, dim, layout=3),
               lay.index_params(client, "chunks", "HNSW", dim, layout=3))  # fmt: skip
    new = milvus_rows.new_chunks(records)
    vectors = {cid: [float(i % dim == j) for j in range(dim)] for i, (cid, _, _) in enumerate(new)}
    rows = milvus_rows.chunk_rows(fields, new, vectors, set(vectors), WriteResult(), {})
    ids: dict[str, list[int]] = {r.id: [] for r in records}
    for cid, r, _ in new:
        ids[r.id].append(cid)
    for r in records:
        parts, _ = milvus_rows.head_rows(fields, r, ids[r.id], rows)
        rows.update({int(p["chunk_id"]): p for p in parts})
    for row in rows.values():
        row.setdefault("vector", lay.placeholder(dim))
    client.insert(part, [_old_row(r) for r in rows.values()])
    client.flush(part)
    store.put_meta({"name": name, "schema": SCHEMA.to_json(), "model_id": "fake:8", "dim": dim,
                    "options": {}, "created_at": lay.now(), "updated_at": lay.now(),
                    "index": "HNSW", "layout": 3, "chunks": part,
                    "generation": 1})  # fmt: skip
