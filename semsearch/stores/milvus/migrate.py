"""Bringing a collection's Milvus layout up to date, on the write path only.

A write first calls :func:`current`. It returns the metadata of a layout-2 collection
(:mod:`semsearch.stores.milvus.layout`) whose chunk part exists and, once the dimension is
known, has a ``vector`` column. When it is not so, :func:`rebuild` makes a new chunk part:

1. a new Milvus collection ``<prefix>_chunks_<g+1>`` is created (a leftover of that name from
   an interrupted rebuild is dropped first) and filled from the current layout: layout 1's
   ``_chunks`` rows joined with their ``_vectors`` rows, or the current chunk part's rows; a
   row without a vector gets the placeholder and keeps ``pending``/``failed``;
2. it is flushed, then the metadata row is rewritten to name it (``layout``, ``chunks``,
   ``generation``, ``dim``): **the commit point**;
3. the parts it replaces are dropped.

A kill before step 2 leaves the old layout whole and named by the metadata (reads go on as
before); a kill after it leaves the new one. Either way the Milvus collections of the
collection's prefix that the metadata does not name are leftovers, which the first write of
the next process drops (:func:`_clean`) before it rebuilds again if need be. Reads never call
this module: a layout-1 collection is read as it is, and nothing is written to it until a
write (or a schema change) comes.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from semsearch.stores.milvus import layout as lay
from semsearch.stores.milvus.columns import write_rows
from semsearch.stores.milvus.conn import translated

if TYPE_CHECKING:
    from semsearch.stores.milvus.access import MilvusAccess

__all__ = ["current", "rebuild"]

#: Columns of a chunk row in every layout, besides the ``f_*`` and ``vector`` columns.
CHUNK_COLUMNS = [
    "chunk_id", "record_id", "ordinal", "text", "terms", "content_hash", "status", "error", "loc",
]  # fmt: skip
_PAGE = 1000


def current(store: MilvusAccess, collection: str, dim: int = 0) -> dict[str, Any]:
    """The metadata of ``collection`` after bringing it to layout 2, with a chunk part that
    has a float32[dim] ``vector`` column when the dim is known (stored, or ``dim`` > 0).

    Raises:
        IndexNotFound: no such collection. DimensionMismatch: ``dim`` differs from the stored.
    """
    meta = store.meta(collection)
    _clean(store, collection, meta)
    if dim:
        store.check_dim(collection, dim)
    want = int(meta.get("dim") or 0) or dim
    if int(meta.get("layout", 1)) >= 2 and meta.get("chunks") and (meta.get("dim") or not want):
        return meta
    return rebuild(store, meta, want)


def _in_use(meta: dict[str, Any]) -> set[str]:
    """The Milvus names of the chunk and vector parts ``meta`` names."""
    name = meta["name"]
    if int(meta.get("layout", 1)) < 2:
        return {lay.part_name(name, k) for k in ("chunks", "vectors", "hashes")}
    return {meta["chunks"]} if meta.get("chunks") else set()


def _clean(store: MilvusAccess, collection: str, meta: dict[str, Any]) -> None:
    """Once per process and collection: drop chunk/vector/hash parts of the collection's
    prefix that ``meta`` does not name (left by an interrupted rebuild)."""
    if collection in store.state.settled:
        return
    pattern = re.compile(re.escape(lay.prefix(collection)) + r"_(chunks(_\d+)?|vectors|hashes)")
    keep = _in_use(meta)
    client = store.client()
    with translated("listing collections"):
        found = [n for n in client.list_collections() if pattern.fullmatch(n)]
    _drop(store, [n for n in found if n not in keep])
    store.state.settled.add(collection)


def _drop(store: MilvusAccess, names: list[str] | set[str]) -> None:
    client = store.client()
    for name in sorted(names):
        with translated(f"dropping {name}"):
            if client.has_collection(name):
                client.drop_collection(name)
        store._loaded.discard(name)
        store.state.unflushed.pop(name, None)


def rebuild(
    store: MilvusAccess, meta: dict[str, Any], dim: int, fields: list[dict[str, Any]] | None = None
) -> dict[str, Any]:
    """Make a new chunk part (float32[dim] vectors when ``dim``; the declared ``fields``,
    default the stored ones), fill it from the current layout, name it in the metadata (the
    commit point), drop what it replaces; returns the new metadata."""
    collection = meta["name"]
    fields = fields if fields is not None else lay.declared_fields(meta["schema"])
    generation = int(meta.get("generation", 1)) + 1
    name = lay.chunk_part(collection, generation)
    _drop(store, [name])
    store.create_part(collection, "chunks", fields, dim, name=name, index=meta.get("index"))
    if meta.get("chunks") or int(meta.get("layout", 1)) < 2:
        _copy(store, meta, name, fields, dim)
    client = store.client()
    with translated(f"flushing {name}"):
        client.flush(name)
    store.state.unflushed.pop(name, None)
    old = _in_use(meta)
    new = {**meta, "layout": lay.LAYOUT, "chunks": name, "generation": generation}
    new["dim"] = dim or None
    store.put_meta(new)  # the commit point
    _drop(store, old)
    store.state.hash_index.pop(collection, None)
    return new


def _copy(
    store: MilvusAccess, meta: dict[str, Any], name: str, fields: list[dict[str, Any]], dim: int
) -> None:
    """Copy every chunk row of the current layout into part ``name``, in pages."""
    collection = meta["name"]
    old_cols = store.attr_columns(lay.declared_fields(meta["schema"]))
    new_cols = [c for c in store.attr_columns(fields) if c not in old_cols]
    layout = int(meta.get("layout", 1))
    cols = CHUNK_COLUMNS + old_cols
    if layout >= 2 and meta.get("dim"):
        cols.append("vector")
    page: list[dict[str, Any]] = []
    for row in store.scan(collection, "chunks", "chunk_id >= 0", cols):
        page.append(row)
        if len(page) == _PAGE:
            _write_page(store, meta, name, page, new_cols, dim)
            page = []
    _write_page(store, meta, name, page, new_cols, dim)


def _write_page(
    store: MilvusAccess,
    meta: dict[str, Any],
    name: str,
    page: list[dict[str, Any]],
    new_cols: list[str],
    dim: int,
) -> None:
    if not page:
        return
    if int(meta.get("layout", 1)) < 2:  # layout 1: a chunk is embedded when it has a vector row
        ids = [int(r["chunk_id"]) for r in page]
        found = store.rows_by(meta["name"], "vectors", "chunk_id", ids, ["chunk_id", "vector"])
        vectors = {int(v["chunk_id"]): v["vector"] for v in found}
        for r in page:
            vec = vectors.get(int(r["chunk_id"]))
            if vec is not None:
                r["vector"], r["status"], r["error"] = vec, "embedded", ""
            elif r["status"] == "embedded":  # cannot be: no vector, so not embedded
                r["status"] = "pending"
    rows = []
    for r in page:
        row = {**r, **dict.fromkeys(new_cols)}
        if not dim:
            row.pop("vector", None)
        elif "vector" in row and r["status"] == "embedded":
            row["vector"] = [float(x) for x in row["vector"]]
        else:
            row["vector"] = lay.placeholder(dim)
            row["status"] = "failed" if r["status"] == "failed" else "pending"
        rows.append(row)
    client = store.client()
    with translated(f"copying chunks into {name}"):
        write_rows(client, name, rows, store.state.lite)
