"""What a write of the Milvus store replaces and reuses, found by primary key.

Milvus Lite evaluates every filter other than ``<primary key> in [...]`` over all unflushed
rows of a collection, so a write that looked up its rows by ``record_id`` or ``content_hash``
cost time proportional to the collection, and filling a collection cost time quadratic in its
size (256 content hashes looked up per batch: 26 s in all for 40,000 rows, against 0.6 s by
primary key, measured). Here a write finds:

- the chunks an update replaces: from the chunk ids listed in the record's stored body (their
  vectors are reused by content hash for its new chunks);
- vectors of the same content in other records: on Milvus Lite through the process's
  ``content_hash -> chunk_id`` map (``LocationState.hash_index``, read by one scan of the
  embedded chunks on the process's first write that needs it, kept by its writes; Lite admits
  one process per folder), each hit checked by primary key; on a server by a filter on the
  indexed ``content_hash`` (other processes write there too).

Records written before the chunk list existed fall back to a filter on ``record_id``. In
layout 3 the stored body is in the record's head row (a primary-key lookup), and the rows an
update replaces include the old version's body part rows. A new record has no chunks to
replace, unless a write stopped half-way (after its other chunk rows, before its head row): on
Milvus Lite the first write of a process sets a ``writing`` mark in the collection's metadata
(:data:`semsearch.stores.milvus.layout.WRITING`), cleared when the process's last store closes;
a write that finds the mark left by a process that died, or that follows a write that raised,
first sweeps away chunk and part rows that no stored head row lists (:func:`stale_chunks`). On a server a
write looks a record's chunks up by ``record_id`` (servers index scalar fields).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from semsearch.stores.base import ChunkWrite, RecordWrite
from semsearch.stores.milvus import layout as lay
from semsearch.stores.milvus.records import head_docs, record_docs

if TYPE_CHECKING:
    from semsearch.stores.milvus.access import MilvusAccess

__all__ = ["old_chunks", "reusable", "stale_chunks"]

_FIELDS = ["chunk_id", "content_hash", "status"]


def _fields(store: MilvusAccess, collection: str) -> list[str]:
    """Columns read to reuse a chunk's vector (no ``vector`` before the dim is known)."""
    has_vectors = store.part_name(collection, "vectors") is not None
    return _FIELDS + ["vector"] * has_vectors


def old_chunks(
    store: MilvusAccess, collection: str, changed: Sequence[RecordWrite], known: dict[str, str]
) -> dict[int, dict[str, Any]]:
    """``{chunk_id: row (chunk_id, content_hash, status, vector once the dim is known)}`` of
    the chunks stored for the ``changed`` records (layout 3: their head rows and body part
    rows too, all of which a write replaces)."""
    fields = _fields(store, collection)
    if not store.state.lite:
        ids = [r.id for r in changed]
        return _by_id(store.rows_by(collection, "chunks", "record_id", ids, fields))
    parts: dict[str, list[int]] = {}
    stored = [r.id for r in changed if r.id in known]
    if store.layout(collection) >= 3:
        docs = head_docs(store, collection, stored, parts)
    else:
        docs = record_docs(store, collection, stored)
    listed: list[int] = []
    legacy: list[str] = []
    for r in changed:
        doc = docs.get(r.id)
        if doc is not None and "chunks" in doc:
            listed += doc["chunks"]
        elif r.id in known:
            legacy.append(r.id)
    rows = store.rows_by(collection, "chunks", "chunk_id", listed, fields)
    rows += store.rows_by(collection, "chunks", "record_id", legacy, fields)
    rows += [
        {"chunk_id": pid, "content_hash": "", "status": lay.RECORD}
        for ids in parts.values()
        for pid in ids
    ]
    return _by_id(rows)


def _by_id(rows: list[dict[str, Any]]) -> dict[int, dict[str, Any]]:
    return {int(r["chunk_id"]): r for r in rows}


def reusable(
    store: MilvusAccess,
    collection: str,
    new_chunks: Sequence[tuple[int, RecordWrite, ChunkWrite]],
    old: dict[int, dict[str, Any]],
) -> tuple[dict[int, list[float]], set[int]]:
    """Vectors (float lists) for new chunks by content hash: from the record's own old chunks
    first, then from any embedded chunk; and the ids of the chunks that kept their own
    (same chunk id: not counted as reused)."""
    if store.part_name(collection, "vectors") is None:
        return {}, set()
    found = {r["content_hash"]: r["vector"] for r in old.values() if r["status"] == "embedded"}
    own = {
        cid
        for cid, _, c in new_chunks
        if cid in old and old[cid]["content_hash"] == c.content_hash and c.content_hash in found
    }
    wanted = list(dict.fromkeys(c.content_hash for _, _, c in new_chunks))
    for r in _by_hash(store, collection, [h for h in wanted if h not in found]):
        found.setdefault(r["content_hash"], r["vector"])
    out = {}
    for cid, _, c in new_chunks:
        vec = found.get(c.content_hash)
        if vec is not None:
            out[cid] = [float(x) for x in vec]
    return out, own


def _by_hash(store: MilvusAccess, collection: str, hashes: list[str]) -> list[dict[str, Any]]:
    """Embedded chunk rows (chunk_id, content_hash, status, vector) holding these contents."""
    if not hashes:
        return []
    fields = _fields(store, collection)
    if not store.state.lite:
        extra = 'status == "embedded"'
        return store.rows_by(collection, "chunks", "content_hash", hashes, fields, extra)
    index = store.state.hash_index.get(collection)
    if index is None:
        expr = 'status == "embedded"'
        scan = store.scan(collection, "chunks", expr, ["chunk_id", "content_hash"])
        index = {r["content_hash"]: int(r["chunk_id"]) for r in scan}
        store.state.hash_index[collection] = index
    ids = [index[h] for h in hashes if h in index]
    rows = store.rows_by(collection, "chunks", "chunk_id", ids, fields)
    wanted = set(hashes)  # an entry may be out of date: its chunk gone or changed
    return [r for r in rows if r["content_hash"] in wanted and r["status"] == "embedded"]


def stale_chunks(store: MilvusAccess, collection: str) -> list[int]:
    """Chunk ids that no stored record lists: left by a write that stopped half-way.

    Reads every chunk's id and record id and the bodies of their records (a full scan, run
    only after such a write). In layout 3 a record's head row and body parts count as listed;
    a head row whose record hash is empty cannot be (every head row is written with one).
    Records written by earlier versions list no chunks; their chunks are kept.
    """
    rows = list(store.scan(collection, "chunks", "chunk_id >= 0", ["chunk_id", "record_id"]))
    parts: dict[str, list[int]] = {}
    rids = sorted({r["record_id"] for r in rows})
    if store.layout(collection) >= 3:
        docs = head_docs(store, collection, rids, parts)
    else:
        docs = record_docs(store, collection, rids)
    listed = {
        rid: {*doc["chunks"], lay.head_id(rid), *parts.get(rid, [])}
        for rid, doc in docs.items()
        if "chunks" in doc
    }
    return [
        int(r["chunk_id"])
        for r in rows
        if r["record_id"] not in docs
        or (r["record_id"] in listed and int(r["chunk_id"]) not in listed[r["record_id"]])
    ]
