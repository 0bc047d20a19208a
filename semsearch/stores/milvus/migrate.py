"""Bringing a collection's Milvus layout up to date, on the write path only.

A write (and ``semsearch compact``) first calls :func:`current`. It returns the metadata of a
layout-4 collection (:mod:`semsearch.stores.milvus.layout`) whose chunk part exists and, once
the dimension is known, has a ``vector`` column. When it is not so, :func:`rebuild` makes a
new chunk part:

1. a new Milvus collection ``<prefix>_chunks_<g+1>`` is created (a leftover of that name from
   an interrupted rebuild is dropped first) and filled from the current layout, record by
   record: from layouts 1 to 3, each record's stored body (``*_records``, or its head row
   and part rows) and the chunk rows it lists (layout 1's ``_chunks`` rows joined with their
   ``_vectors`` rows, or the chunk part's), the ordinal-0 chunk renamed to the head id and
   given the body (re-listing the chunk ids) and the record's keyword terms (``kw``, computed
   from its text and chunks as a write does), each chunk its ``folded`` text, a head row of
   status ``record`` for a record without chunks, part rows for a long body; from layout 4,
   the chunk part's rows as they are. A row without a vector gets the placeholder and keeps
   its status. Chunk rows no record lists (left by a write that stopped half-way) are not
   copied;
2. it is flushed, then the metadata row is rewritten to name it (``layout``, ``chunks``,
   ``generation``, ``dim``): **the commit point**;
3. the parts it replaces are dropped (the chunk part, and ``*_records`` before layout 3), and
   the process's keyword index of the collection is built again on its next keyword search.

A kill before step 2 leaves the old layout whole and named by the metadata (reads go on as
before); a kill after it leaves the new one. Either way the Milvus collections of the
collection's prefix that the metadata does not name are leftovers, which the first write of
the next process drops (:func:`_clean`) before it rebuilds again if need be. Reads never call
this module: a layout-1 or layout-2 collection is read as it is, and nothing is written to it
until a write (or a schema change) comes.

Known limit: the copy from layout 1 or 2 pages through ``*_records`` with a query iterator,
which (as ``list_ids`` and ``find`` there) fails past its first page of 1,000 records when a
page ends on a record id holding ``"``, ``\\`` or a newline (see ``MilvusAccess.scan``); the
migration then raises before its commit point and the collection stays as it was.
"""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING, Any

from semsearch.results import Chunk
from semsearch.stores.milvus import layout as lay
from semsearch.stores.milvus import rows as milvus_rows
from semsearch.stores.milvus.columns import write_rows
from semsearch.stores.milvus.conn import translated
from semsearch.stores.milvus.keyword_columns import encode, folded, record_keyword

if TYPE_CHECKING:
    from semsearch.stores.milvus.access import MilvusAccess

__all__ = ["CHUNK_COLUMNS", "HEAD_COLUMNS", "OLD_CHUNK_COLUMNS", "current", "rebuild"]

#: Columns of a layout-4 chunk row, besides the ``f_*`` and ``vector`` columns.
CHUNK_COLUMNS = [
    "chunk_id", "record_id", "ordinal", "text", "folded", "content_hash", "status", "error", "loc",
]  # fmt: skip
#: The record columns of a layout-4 chunk row.
HEAD_COLUMNS = ["body", "record_hash", "nparts", "kw"]
#: Columns of a chunk row before layout 4 (``terms`` in place of ``folded``).
OLD_CHUNK_COLUMNS = [("terms" if c == "folded" else c) for c in CHUNK_COLUMNS]
_PAGE = 1000


def current(store: MilvusAccess, collection: str, dim: int = 0) -> dict[str, Any]:
    """The metadata of ``collection`` after bringing it to layout 4, with a chunk part that
    has a float32[dim] ``vector`` column when the dim is known (stored, or ``dim`` > 0).

    Raises:
        IndexNotFound: no such collection. DimensionMismatch: ``dim`` differs from the stored.
    """
    meta = store.meta(collection)
    _clean(store, collection, meta)
    if dim:
        store.check_dim(collection, dim)
    want = int(meta.get("dim") or 0) or dim
    layout = int(meta.get("layout", 1))
    if layout >= lay.LAYOUT and meta.get("chunks") and (meta.get("dim") or not want):
        return meta
    return rebuild(store, meta, want)


def _in_use(meta: dict[str, Any]) -> set[str]:
    """The Milvus names of the record, chunk and vector parts ``meta`` names."""
    name = meta["name"]
    layout = int(meta.get("layout", 1))
    if layout < 2:
        return {lay.part_name(name, k) for k in ("records", "chunks", "vectors", "hashes")}
    used = {meta["chunks"]} if meta.get("chunks") else set()
    return used | {lay.part_name(name, "records")} if layout < 3 else used


def _clean(store: MilvusAccess, collection: str, meta: dict[str, Any]) -> None:
    """Once per process and collection: drop record/chunk/vector/hash parts of the
    collection's prefix that ``meta`` does not name (left by an interrupted rebuild)."""
    if collection in store.state.settled:
        return
    pattern = re.compile(
        re.escape(lay.prefix(collection)) + r"_(records|chunks(_\d+)?|vectors|hashes)"
    )
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
    if int(meta.get("layout", 1)) < lay.LAYOUT:
        _convert(store, meta, name, fields, dim)
    elif meta.get("chunks"):
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
    store.state.keyword.pop(collection, None)  # chunk ids and keyword columns may have moved
    return new


def _copy(
    store: MilvusAccess, meta: dict[str, Any], name: str, fields: list[dict[str, Any]], dim: int
) -> None:
    """Copy every row of a layout-4 chunk part into part ``name``, in pages."""
    collection = meta["name"]
    old_cols = store.attr_columns(lay.declared_fields(meta["schema"]))
    new_cols = [c for c in store.attr_columns(fields) if c not in old_cols]
    cols = CHUNK_COLUMNS + HEAD_COLUMNS + old_cols
    if meta.get("dim"):
        cols.append("vector")
    page: list[dict[str, Any]] = []
    for row in store.scan(collection, "chunks", "chunk_id >= 0", cols):
        page.append(row)
        if len(page) == _PAGE:
            _write_page(store, meta, name, page, new_cols, dim)
            page = []
    _write_page(store, meta, name, page, new_cols, dim)


def _convert(
    store: MilvusAccess, meta: dict[str, Any], name: str, fields: list[dict[str, Any]], dim: int
) -> None:
    """Fill part ``name`` (layout 4) from a collection of layout 1, 2 or 3, a page of records
    at a time: their bodies, their listed chunk rows, head and part rows, keyword columns."""
    collection = meta["name"]
    old_cols = store.attr_columns(lay.declared_fields(meta["schema"]))
    new_cols = [c for c in store.attr_columns(fields) if c not in old_cols]
    if int(meta.get("layout", 1)) < 3:
        heads = store.scan(
            collection, "records", "part == 0", ["record_id", "content_hash", *old_cols]
        )
    else:
        heads = (
            {**h, "content_hash": h["record_hash"]}
            for h in store.scan(
                collection, "chunks", lay.HEADS, ["record_id", "record_hash", *old_cols]
            )
        )
    page: list[dict[str, Any]] = []
    for head in heads:
        page.append(head)
        if len(page) == _PAGE:
            _write_page(
                store, meta, name, _records_page(store, meta, page, old_cols), new_cols, dim
            )
            page = []
    _write_page(store, meta, name, _records_page(store, meta, page, old_cols), new_cols, dim)


def _records_page(
    store: MilvusAccess, meta: dict[str, Any], heads: list[dict[str, Any]], old_cols: list[str]
) -> list[dict[str, Any]]:
    """The layout-4 rows of the records whose part-0 (``*_records``) or head rows are
    ``heads`` (each with ``record_id``, ``content_hash`` and the ``f_*`` columns)."""
    from semsearch.stores.milvus.records import record_docs

    collection = meta["name"]
    docs = record_docs(store, collection, [h["record_id"] for h in heads])
    cols = OLD_CHUNK_COLUMNS + old_cols
    if int(meta.get("layout", 1)) >= 2 and meta.get("dim"):
        cols.append("vector")
    listed = [int(c) for doc in docs.values() for c in doc.get("chunks", [])]
    legacy = [rid for rid, doc in docs.items() if "chunks" not in doc]
    rows = store.rows_by(collection, "chunks", "chunk_id", listed, cols)
    rows += store.rows_by(collection, "chunks", "record_id", legacy, cols)
    if int(meta.get("layout", 1)) < 2:
        _join_vectors(store, collection, rows)
    by_record: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        if row["record_id"] in docs:
            by_record.setdefault(row["record_id"], []).append(row)
    out: list[dict[str, Any]] = []
    for h in heads:
        rid = h["record_id"]
        if rid not in docs:  # a part missing: not readable before either
            continue
        attrs = {c: h.get(c) for c in old_cols}
        out += _record_rows(rid, h["content_hash"], docs[rid], attrs, by_record.get(rid, []))
    return out


def _record_rows(
    rid: str,
    record_hash: str,
    doc: dict[str, Any],
    attrs: dict[str, Any],
    old: list[dict[str, Any]],
) -> list[dict[str, Any]]:
    """One record's layout-4 rows from its body ``doc`` and its old chunk rows ``old``."""
    chunks: dict[int, dict[str, Any]] = {}
    pairs = []
    for row in sorted(old, key=lambda r: int(r["ordinal"])):
        cid = lay.head_id(rid) if int(row["ordinal"]) == 0 else int(row["chunk_id"])
        new = {k: v for k, v in row.items() if k != "terms"}
        chunks[cid] = {
            **new,
            "chunk_id": cid,
            "folded": folded(row["text"]),
            **milvus_rows.NOT_HEAD,
        }
        start, end = json.loads(row["loc"])[:2]
        pairs.append((cid, Chunk(row["text"], int(row["ordinal"]), start, end)))
    doc = {**doc, "chunks": list(chunks)}
    kw = encode(record_keyword(doc["fields"], doc["text"], pairs))
    parts = milvus_rows.body_rows(rid, record_hash, doc, attrs, chunks, kw)
    return [*chunks.values(), *parts]


def _join_vectors(store: MilvusAccess, collection: str, page: list[dict[str, Any]]) -> None:
    """Layout 1: a chunk is embedded when it has a vector row; put it in its chunk row."""
    ids = [int(r["chunk_id"]) for r in page]
    found = store.rows_by(collection, "vectors", "chunk_id", ids, ["chunk_id", "vector"])
    vectors = {int(v["chunk_id"]): v["vector"] for v in found}
    for r in page:
        vec = vectors.get(int(r["chunk_id"]))
        if vec is not None:
            r["vector"], r["status"], r["error"] = vec, "embedded", ""
        elif r["status"] == "embedded":  # cannot be: no vector, so not embedded
            r["status"] = "pending"


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
    rows = []
    for r in page:
        row = {**r, **dict.fromkeys(new_cols)}
        if not dim:
            row.pop("vector", None)
        elif "vector" in row and r["status"] == "embedded":
            row["vector"] = [float(x) for x in row["vector"]]
        else:
            row["vector"] = lay.placeholder(dim)
            if r["status"] not in ("failed", lay.RECORD):
                row["status"] = "pending"
        rows.append(row)
    client = store.client()
    with translated(f"copying chunks into {name}"):
        write_rows(client, name, rows, store.state.lite)
