"""What a write of the Milvus store replaces and reuses, found by primary key.

Milvus Lite evaluates every filter other than ``<primary key> in [...]`` over all rows of a
collection in Python, so a write that looked up its rows by ``record_id`` or ``content_hash``
cost time proportional to the collection, and filling a collection cost time quadratic in its
size. Here a write finds:

- the chunks an update replaces: from the chunk ids listed in the record's stored body;
- the vectors it can reuse: its kept chunks' own vectors by chunk id, and other vectors of the
  same content through ``*_hashes`` (content hash -> chunk id).

Collections written by earlier versions (no chunk list, no ``*_hashes``) fall back to the
filters. A new record has no chunks to replace, unless a write stopped half-way: on Milvus Lite
the first write of a process sets a ``writing`` mark in the collection's metadata
(:data:`semsearch.stores.milvus.layout.WRITING`), cleared when the process's last store closes;
a write that finds the mark left by a process that died, or that follows a write that raised,
first sweeps away chunks that no stored record lists (:func:`stale_chunks`). On a server, where
other processes write at the same time, a write still looks a record's chunks up by
``record_id`` (servers index scalar fields).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from semsearch.stores.base import ChunkWrite, RecordWrite
from semsearch.stores.milvus import layout as lay
from semsearch.stores.milvus.records import record_docs

if TYPE_CHECKING:
    from semsearch.stores.milvus.access import MilvusAccess

__all__ = ["hash_rows", "old_chunks", "reusable", "stale_chunks"]


def old_chunks(
    store: MilvusAccess, collection: str, changed: Sequence[RecordWrite], known: dict[str, str]
) -> dict[int, str]:
    """``{chunk_id: status}`` of the chunks stored for the ``changed`` records."""
    fields = ["chunk_id", "status"]
    if not store.state.lite:
        ids = [r.id for r in changed]
        return _status(store.rows_by(collection, "chunks", "record_id", ids, fields))
    docs = record_docs(store, collection, [r.id for r in changed if r.id in known])
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
    return _status(rows)


def _status(rows: list[dict[str, Any]]) -> dict[int, str]:
    return {int(r["chunk_id"]): r["status"] for r in rows}


def reusable(
    store: MilvusAccess,
    collection: str,
    new_chunks: Sequence[tuple[int, RecordWrite, ChunkWrite]],
    old: dict[int, str],
) -> tuple[dict[int, list[float]], set[int]]:
    """Vectors for new chunks: the chunk's own (kept) vector, or any vector with its hash;
    and the ids of the chunks that kept their own. A kept chunk of any stored status may have
    its vector (``set_vectors`` leaves ``pending`` as it is)."""
    kept = [cid for cid, _, _ in new_chunks if cid in old]
    fields = ["chunk_id", "content_hash", "vector"]
    by_id = {
        int(r["chunk_id"]): r["vector"]
        for r in store.rows_by(collection, "vectors", "chunk_id", kept, fields)
    }
    hashes = list(dict.fromkeys(c.content_hash for cid, _, c in new_chunks if cid not in by_id))
    by_hash = {r["content_hash"]: r["vector"] for r in _by_hash(store, collection, hashes)}
    out = {}
    for cid, _, c in new_chunks:
        vec = by_id.get(cid) or by_hash.get(c.content_hash)
        if vec is not None:
            out[cid] = list(vec)
    return out, set(by_id)


def _by_hash(store: MilvusAccess, collection: str, hashes: list[str]) -> list[dict[str, Any]]:
    """Vector rows (chunk_id, content_hash, vector) holding these contents, one per hash."""
    fields = ["chunk_id", "content_hash", "vector"]
    if not hashes:
        return []
    if store._coll(collection, "hashes") is None:  # written by an earlier version
        return store.rows_by(collection, "vectors", "content_hash", hashes, fields)
    pointers = store.rows_by(collection, "hashes", "content_hash", hashes, fields[:2])
    ids = [int(p["chunk_id"]) for p in pointers]
    rows = store.rows_by(collection, "vectors", "chunk_id", ids, fields)
    wanted = set(hashes)
    return [r for r in rows if r["content_hash"] in wanted]  # a pointer may be out of date


def hash_rows(vector_rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``*_hashes`` rows pointing each written vector's content hash at its chunk."""
    rows = {
        r["content_hash"]: {"content_hash": r["content_hash"], "chunk_id": int(r["chunk_id"]),
                            "_v": lay.DUMMY_VECTOR}
        for r in vector_rows
    }  # fmt: skip
    return list(rows.values())


def stale_chunks(store: MilvusAccess, collection: str) -> list[int]:
    """Chunk ids that no stored record lists: left by a write that stopped half-way.

    Reads every chunk's id and record id and the bodies of their records (a full scan, run
    only after such a write). Records written by earlier versions list no chunks; their
    chunks are kept.
    """
    rows = list(store.scan(collection, "chunks", "chunk_id >= 0", ["chunk_id", "record_id"]))
    docs = record_docs(store, collection, sorted({r["record_id"] for r in rows}))
    listed = {rid: set(doc["chunks"]) for rid, doc in docs.items() if "chunks" in doc}
    return [
        int(r["chunk_id"])
        for r in rows
        if r["record_id"] not in docs
        or (r["record_id"] in listed and int(r["chunk_id"]) not in listed[r["record_id"]])
    ]
