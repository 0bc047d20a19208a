"""Schema changes of the Milvus store: a collection's Milvus collections rebuilt with newly
declared fields as ``f_*`` columns (:func:`add_fields`), because Milvus Lite cannot alter a
schema: the chunk part (layout 3: records included) rebuilt under a new name
(:func:`semsearch.stores.milvus.migrate.rebuild`, after
:func:`semsearch.stores.milvus.migrate.current` brought a layout-1 or layout-2 collection to
layout 3, which has no ``*_records``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from semsearch.stores.milvus import layout as lay
from semsearch.stores.milvus import migrate

if TYPE_CHECKING:
    from semsearch.stores.milvus.access import MilvusAccess

__all__ = ["add_fields"]


def add_fields(store: MilvusAccess, meta: dict[str, Any], schema_json: str) -> dict[str, Any]:
    """Rebuild a collection's chunk part with newly declared fields; returns the metadata
    (layout 3, its chunk part renamed).

    Milvus Lite cannot alter a schema, so the part is copied into a new collection whose extra
    ``f_*`` columns are null for the records already stored (as on SQLite, where a new field
    is filled when a record is next written).
    """
    fields = lay.declared_fields(schema_json)
    meta = migrate.current(store, meta["name"])
    return migrate.rebuild(store, meta, int(meta.get("dim") or 0), fields)
