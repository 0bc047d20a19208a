"""Schema changes of the Milvus store: a collection's Milvus collections rebuilt with newly
declared fields as ``f_*`` columns (:func:`add_fields`), because Milvus Lite cannot alter a
schema: ``*_records`` copied row by row and swapped in by rename, the chunk part rebuilt under
a new name (:func:`semsearch.stores.milvus.migrate.rebuild`, which first brings a layout-1
collection to layout 2).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from semsearch.stores.milvus import layout as lay
from semsearch.stores.milvus import migrate
from semsearch.stores.milvus.conn import translated

if TYPE_CHECKING:
    from semsearch.stores.milvus.access import MilvusAccess

__all__ = ["add_fields"]


def add_fields(store: MilvusAccess, meta: dict[str, Any], schema_json: str) -> dict[str, Any]:
    """Rebuild a collection's Milvus collections with newly declared fields; returns the
    metadata (layout 2, its chunk part renamed).

    Milvus Lite cannot alter a schema, so each part is copied into a new collection whose
    extra ``f_*`` columns are null for the records already stored (as on SQLite, where a new
    field is filled when a record is next written).
    """
    fields = lay.declared_fields(schema_json)
    meta = migrate.current(store, meta["name"])
    meta = migrate.rebuild(store, meta, int(meta.get("dim") or 0), fields)
    client = store.client()
    for kind, name in [("records", lay.part_name(meta["name"], "records"))]:
        if not client.has_collection(name):
            continue
        tmp = name + "_tmp"
        with translated(f"rebuilding {kind}"):
            if client.has_collection(tmp):
                client.drop_collection(tmp)
        _copy(store, meta, kind, tmp, fields)
        with translated(f"rebuilding {kind}"):
            client.drop_collection(name)
            store._loaded.discard(name)
            client.rename_collection(tmp, name)
            store._loaded.discard(tmp)
    return meta


def _copy(
    store: MilvusAccess, meta: dict[str, Any], kind: str, tmp: str, fields: list[dict[str, Any]]
) -> None:
    client = store.client()
    schema = lay.records_schema(fields)
    params = lay.index_params(client, kind, meta.get("index", "HNSW"))
    old_cols = store.attr_columns(lay.declared_fields(meta["schema"]))
    base = ["pk", "record_id", "part", "nparts", "content_hash", "body", "_v"]
    expr = "part >= 0"
    new_cols = [c for c in store.attr_columns(fields) if c not in old_cols]
    with translated(f"rebuilding {kind}"):
        lay.create(client, tmp, schema, params)
        batch: list[dict[str, Any]] = []
        for row in store.scan(meta["name"], kind, expr, base + old_cols):
            batch.append({**row, **dict.fromkeys(new_cols)})
            if len(batch) == 500:
                client.insert(tmp, batch)
                batch = []
        if batch:
            client.insert(tmp, batch)
        client.flush(tmp)
