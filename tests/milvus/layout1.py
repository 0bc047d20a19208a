"""Collections in layout 1, written as the previous version wrote them (``<prefix>_chunks``
without vectors, ``<prefix>_vectors``, ``<prefix>_hashes``, metadata without ``layout``), to
test that the store reads them unchanged and that a write migrates them.

Each record is one chunk. A chunk with a vector has a vector row and a hash row, and its chunk
row says ``pending`` (the previous ``set_vectors`` left it so); one without says ``pending`` or
``failed``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from semsearch.schema import Schema
from semsearch.stores.milvus import layout as lay
from semsearch.stores.milvus import rows as milvus_rows
from semsearch.stores.milvus.store import MilvusStore
from semsearch.stores.milvus.terms import keyword_terms
from tests.milvus.helpers import one_chunk_record

SCHEMA = Schema.from_types({"kind": "str"})


@dataclass(frozen=True)
class Item:
    """One record: id, text (its one chunk), ``kind`` field, vector (None: not embedded) and
    whether embedding it failed."""

    rid: str
    text: str
    kind: str
    vector: list[float] | None
    failed: bool = False


def build(store: MilvusStore, name: str, items: list[Item], dim: int = 8) -> None:
    """Write collection ``name`` in layout 1 through ``store``'s client."""
    client = store.client()
    fields = lay.declared_fields(SCHEMA.to_json())
    parts = lay.names(name)
    hashes = lay.part_name(name, "hashes")
    lay.create(client, parts["records"], lay.records_schema(fields),
               lay.index_params(client, "records"))  # fmt: skip
    lay.create(client, parts["chunks"], lay.chunks_schema(fields, layout=1),
               lay.index_params(client, "chunks", layout=1))  # fmt: skip
    lay.create(client, parts["vectors"], lay.vectors_schema(fields, dim),
               lay.index_params(client, "vectors"))  # fmt: skip
    lay.create(client, hashes, lay.hashes_schema(), lay.index_params(client, "hashes"))
    records, chunks, vectors, pointers = [], [], [], []
    for it in items:
        base = one_chunk_record(it.rid, it.text)
        r = type(base)(it.rid, {"kind": it.kind}, {"kind": it.kind}, it.text,
                       base.content_hash + it.kind, base.chunks)  # fmt: skip
        c = r.chunks[0]
        cid = lay.chunk_id(r.id, 0, 0, len(it.text), c.content_hash)
        records += milvus_rows.record_rows(fields, r, [cid])
        chunks.append({"chunk_id": cid, "record_id": r.id, "ordinal": 0, "text": it.text,
                       "terms": keyword_terms(it.text), "content_hash": c.content_hash,
                       "status": "failed" if it.failed else "pending",
                       "error": "down" if it.failed else "",
                       "loc": lay.loc_json(0, len(it.text), (), None, None), "f_kind": it.kind})  # fmt: skip
        if it.vector is not None:
            vectors.append({"chunk_id": cid, "record_id": r.id, "content_hash": c.content_hash,
                            "vector": it.vector, "f_kind": it.kind})  # fmt: skip
            pointers.append({"content_hash": c.content_hash, "chunk_id": cid,
                             "_v": lay.DUMMY_VECTOR})  # fmt: skip
    for part, rows in ((parts["chunks"], chunks), (parts["vectors"], vectors),
                       (hashes, pointers), (parts["records"], records)):  # fmt: skip
        if rows:
            client.insert(part, rows)
        client.flush(part)
    store.put_meta({"name": name, "schema": SCHEMA.to_json(), "model_id": "fake:8", "dim": dim,
                    "options": {}, "created_at": lay.now(), "updated_at": lay.now(),
                    "index": "HNSW"})  # fmt: skip


def snapshot(store: MilvusStore, name: str) -> dict[str, Any]:
    """What a read must not change: the Milvus collections of ``name`` with their row
    counts, and its stored metadata row."""
    client = store.client()
    counts = {}
    for part in sorted(client.list_collections()):
        if part.startswith(lay.prefix(name)) or part == lay.META:
            client.load_collection(part)
            got = client.query(part, filter="", output_fields=["count(*)"])
            counts[part] = got[0]["count(*)"]
    info = client.query(lay.META, filter=f'name == "{name}"', output_fields=["info"])
    return {"parts": counts, "meta": info[0]["info"]}
