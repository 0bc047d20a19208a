"""Sentence windows in Milvus: a fourth Milvus collection per semsearch collection,
``<prefix>_windows``, one row per chunk content (see :class:`~semsearch.stores.base.SentenceWindows`).

Columns: ``content_hash`` (primary key: the chunks' sha256 of their embedded text, so chunks
that reuse a vector by hash reuse its windows), ``spans`` and ``vectors`` (the blobs of
:mod:`semsearch.stores.window_blobs`, base64 text: Milvus has no binary scalar type) and the
constant 2-d ``_v`` column Milvus requires. Milvus has no triggers, so writes and deletes of
records call :func:`prune` with the content hashes their old chunks had. A chunk whose windows
do not fit one VARCHAR (64 KiB; about 120 windows of 384 dimensions) keeps none and scores by its
chunk vector.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from semsearch.stores.base import WindowSet
from semsearch.stores.milvus import layout as lay
from semsearch.stores.milvus.conn import translated
from semsearch.stores.milvus.expr import literal
from semsearch.stores.window_blobs import pack_windows, unpack_windows

if TYPE_CHECKING:
    from semsearch.stores.milvus.access import MilvusAccess

__all__ = ["drop", "hashes_of", "prune", "read", "windows_name", "write"]


def windows_name(collection: str) -> str:
    """The Milvus collection of ``collection``'s windows (beside ``<prefix>_chunks``)."""
    return lay.names(collection)["chunks"].removesuffix("_chunks") + "_windows"


def _schema() -> Any:
    from pymilvus import DataType, MilvusClient

    s = MilvusClient.create_schema(auto_id=False, enable_dynamic_field=False)
    s.add_field("content_hash", DataType.VARCHAR, is_primary=True, max_length=128)
    s.add_field("spans", DataType.VARCHAR, max_length=lay.VARCHAR_MAX)
    s.add_field("vectors", DataType.VARCHAR, max_length=lay.VARCHAR_MAX)
    s.add_field("_v", DataType.FLOAT_VECTOR, dim=2)
    return s


def _client(store: MilvusAccess, collection: str, create: bool) -> tuple[Any, str] | None:
    """(client, name) of the loaded windows collection; created first when ``create``."""
    name = windows_name(collection)
    client = store._connect() if create else store._read_client()
    absent = store.state.absent
    if client is None or (not create and name in absent):
        return None
    if create and not client.has_collection(name):
        with translated(f"creating {name}"):
            params = lay.index_params(client, "meta")  # the dummy ``_v`` index alone
            lay.create(client, name, _schema(), params)
    if not store._load(client, name):
        if store.state.lite:  # every write asks (hashes_of, prune): one round trip each
            absent.add(name)
        return None
    absent.discard(name)
    if not store._writing and store.state.unflushed.get(name):  # reads see what was written
        store._flush(client, name)
    return client, name


def write(store: MilvusAccess, collection: str, windows: Mapping[int, WindowSet]) -> None:
    """Store each chunk's windows under its content hash (chunks gone meanwhile: skipped)."""
    ids = [int(c) for c in windows]
    rows = store.rows_by(collection, "chunks", "chunk_id", ids, ["chunk_id", "content_hash"])
    hashes = {int(r["chunk_id"]): str(r["content_hash"]) for r in rows}
    out = []
    for chunk_id, found in windows.items():
        spans, vectors = (base64.b64encode(b).decode() for b in pack_windows(found))
        if int(chunk_id) in hashes and max(len(spans), len(vectors)) <= lay.VARCHAR_MAX:
            out.append({"content_hash": hashes[int(chunk_id)], "spans": spans,
                        "vectors": vectors, "_v": lay.DUMMY_VECTOR})  # fmt: skip
    target = _client(store, collection, create=bool(out))
    if target is None or not out:
        return
    client, name = target
    with translated("writing windows"):
        for start in range(0, len(out), 100):
            client.upsert(name, out[start : start + 100])
    store.written(name, len(out))  # flushed in bulk, as the other parts (access.py)


def read(store: MilvusAccess, collection: str, chunk_ids: Sequence[int]) -> dict[int, WindowSet]:
    """``{chunk id: WindowSet}`` of the chunks that have windows."""
    target = _client(store, collection, create=False)
    if target is None or not chunk_ids:
        return {}
    client, name = target
    ids = [int(c) for c in chunk_ids]
    rows = store.rows_by(collection, "chunks", "chunk_id", ids, ["chunk_id", "content_hash"])
    by_hash: dict[str, list[int]] = {}
    for r in rows:
        by_hash.setdefault(str(r["content_hash"]), []).append(int(r["chunk_id"]))
    out: dict[int, WindowSet] = {}
    hashes = list(by_hash)
    for start in range(0, len(hashes), 200):
        batch = ", ".join(literal(h) for h in hashes[start : start + 200])
        with translated("reading windows"):
            found = client.query(
                name,
                filter=f"content_hash in [{batch}]",
                output_fields=["content_hash", "spans", "vectors"],
            )
        for row in found:
            unpacked = unpack_windows(
                base64.b64decode(row["spans"]), base64.b64decode(row["vectors"])
            )
            out.update(dict.fromkeys(by_hash[row["content_hash"]], unpacked))
    return out


def hashes_of(store: MilvusAccess, collection: str, record_ids: Sequence[str]) -> set[str]:
    """The content hashes of the records' chunks, when the collection has windows (else
    empty: nothing to prune)."""
    if _client(store, collection, create=False) is None:
        return set()
    rows = store.rows_by(collection, "chunks", "record_id", record_ids, ["content_hash"])
    return {str(r["content_hash"]) for r in rows if r["content_hash"]}  # "": no chunk (layout 3)


def prune(store: MilvusAccess, collection: str, hashes: set[str]) -> None:
    """Delete the windows of ``hashes`` that no chunk of the collection holds any more."""
    target = _client(store, collection, create=False)
    if target is None or not hashes:
        return
    rows = store.rows_by(collection, "chunks", "content_hash", sorted(hashes), ["content_hash"])
    gone = sorted(hashes - {str(r["content_hash"]) for r in rows})
    client, name = target
    with translated("deleting windows"):
        for start in range(0, len(gone), 200):
            client.delete(name, ids=gone[start : start + 200])
    store.written(name, len(gone))


def drop(store: MilvusAccess, collection: str) -> None:
    """Drop the windows collection (with its semsearch collection)."""
    client = store._connect()
    name = windows_name(collection)
    with translated(f"dropping {name}"):
        client.drop_collection(name)
    store._loaded.discard(name)
    store.state.unflushed.pop(name, None)
