"""Writes of the Milvus store: upsert records and chunks, store vectors and status, delete
(the rows themselves are built by :mod:`semsearch.stores.milvus.rows`).

Order of every write (Milvus has no transactions): chunk rows, then vector rows, then stale
rows deleted (vectors before chunks, so no vector outlives its chunk), then the record row
whose content hash marks the record as written. If a write stops half-way, the record's old
hash is still stored (or none), so the next upsert of the same record redoes it.

A chunk is embedded when it has a vector row: ``set_vectors`` writes vector rows and leaves the
chunk rows as ``write_records`` wrote them (``pending``), except a ``failed`` chunk's, which it
sets ``embedded`` (a partial update in Milvus rewrites the whole row and its BM25 terms, and
cost as much as writing the chunk). See ``MilvusStore.stats`` and ``pending_chunks``.

Cost: each batch reads only its own rows, by primary key (:mod:`semsearch.stores.milvus.lookup`:
record rows, the chunks an update replaces, vectors to reuse by chunk id or content hash), and
writes in calls of up to ``ROWS_PER_CALL`` rows without flushing (a collection is flushed per
``state.FLUSH_ROWS`` rows and before the next read; a flush per batch made many small
segments that every later read visits), so the time to insert n records grows linearly in n.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from semsearch.stores.base import RecordWrite, WriteResult
from semsearch.stores.milvus import layout as lay
from semsearch.stores.milvus import lookup
from semsearch.stores.milvus import rows as milvus_rows
from semsearch.stores.milvus.columns import write_rows
from semsearch.stores.milvus.conn import translated
from semsearch.stores.milvus.expr import literal
from semsearch.stores.milvus.records import record_hashes
from semsearch.stores.milvus.rows import NewChunk

if TYPE_CHECKING:
    from semsearch.stores.milvus.access import MilvusAccess

__all__ = [
    "ROWS_PER_CALL",
    "delete_records",
    "set_status",
    "set_vectors",
    "write_records",
]


#: Rows per write/delete call: large calls, well inside gRPC's 64 MB message limit
#: (2,000 rows of 384 float32 plus text are a few MB).
ROWS_PER_CALL = 2000


def _fields(meta: dict[str, Any]) -> list[dict[str, Any]]:
    return lay.declared_fields(meta["schema"])


def write_records(
    store: MilvusAccess, collection: str, records: Sequence[RecordWrite]
) -> WriteResult:
    """See :meth:`MilvusStore.write_records`."""
    result = WriteResult()
    meta = store.meta(collection)
    fields = _fields(meta)
    milvus_rows.check_sizes(records)
    known = record_hashes(store, collection, [r.id for r in records])
    changed = [r for r in records if known.get(r.id) != r.content_hash]
    result.unchanged = len(records) - len(changed)
    if not changed:
        return result
    store.state.pending_rows.pop(collection, None)
    _begin(store, collection, meta)
    old = lookup.old_chunks(store, collection, changed, known)
    new_chunks = milvus_rows.new_chunks(changed)
    vectors, own = lookup.reusable(store, collection, new_chunks, old)
    chunk_rows, vector_rows, waiting = milvus_rows.chunk_rows(
        fields, new_chunks, vectors, own, result
    )
    stale = list(set(old) - {cid for cid, _, _ in new_chunks})
    _upsert(store, collection, "chunks", chunk_rows)
    _upsert(store, collection, "vectors", vector_rows)
    _upsert(store, collection, "hashes", lookup.hash_rows(vector_rows))
    _delete_ids(store, collection, ("vectors", "chunks"), stale)  # no vector without its chunk
    _write_record_rows(store, collection, fields, changed, new_chunks, known)
    result.added = sum(1 for r in changed if r.id not in known)
    result.updated = len(changed) - result.added
    if store.state.lite and waiting:  # set_vectors writes their vector rows without a read
        store.state.pending_rows[collection] = waiting
    _touch(store, collection, meta)
    return result


def _write_record_rows(
    store: MilvusAccess,
    collection: str,
    fields: list[dict[str, Any]],
    changed: list[RecordWrite],
    new_chunks: list[NewChunk],
    known: dict[str, str],
) -> None:
    """Write the changed records' rows, each listing its new chunks (last: the record row is
    the commit marker), then delete body parts left over from longer previous versions."""
    ids: dict[str, list[int]] = {r.id: [] for r in changed}
    for cid, r, _ in new_chunks:
        ids[r.id].append(cid)
    rows = [row for r in changed for row in milvus_rows.record_rows(fields, r, ids[r.id])]
    _upsert(store, collection, "records", rows)
    _trim_parts(store, collection, [row for row in rows if row["record_id"] in known])


def _begin(store: MilvusAccess, collection: str, meta: dict[str, Any]) -> None:
    """On Milvus Lite, once per process and collection (again after a write that raised):
    sweep what a write that stopped half-way left (its mark is still set), then set the mark,
    which stays set until this process's last store closes (see
    :mod:`semsearch.stores.milvus.lookup`)."""
    state = store.state
    if not state.lite or collection in state.marked:
        return
    if meta.get(lay.WRITING):
        stale = lookup.stale_chunks(store, collection)
        _delete_ids(store, collection, ("vectors", "chunks"), stale)
    if not meta.get(lay.WRITING):
        meta[lay.WRITING] = True
        store.put_meta(meta)
    state.marked.add(collection)


def _upsert(
    store: MilvusAccess,
    collection: str,
    kind: str,
    rows: list[dict[str, Any]],
    partial: bool = False,
) -> None:
    if not rows:
        return
    found = store._coll(collection, kind)
    if found is None:
        return
    client, name = found
    with translated(f"writing {kind}"):
        for start in range(0, len(rows), ROWS_PER_CALL):
            write_rows(client, name, rows[start : start + ROWS_PER_CALL], store.state.lite, partial)
    store.written(name, len(rows))


def _delete_ids(store: MilvusAccess, collection: str, kinds: Sequence[str], ids: list[int]) -> None:
    if not ids:
        return
    for kind in kinds:
        found = store._coll(collection, kind)
        if found is None:
            continue
        client, name = found
        with translated(f"deleting {kind}"):
            for start in range(0, len(ids), ROWS_PER_CALL):
                client.delete(name, ids=ids[start : start + ROWS_PER_CALL])
        store.written(name, len(ids))


def _trim_parts(store: MilvusAccess, collection: str, rows: list[dict[str, Any]]) -> None:
    """Delete body parts left over from a longer previous version of a record."""
    by_n: dict[int, list[str]] = {}
    for row in rows:
        if row["part"] == 0:
            by_n.setdefault(row["nparts"], []).append(row["record_id"])
    _delete_where(store, collection, ["records"], "record_id", by_n, "part >= {n}")


def _delete_where(
    store: MilvusAccess,
    collection: str,
    kinds: list[str],
    key: str,
    groups: dict[int, list[str]],
    extra: str = "",
) -> None:
    for kind in kinds:
        found = store._coll(collection, kind)
        if found is None:
            continue
        client, name = found
        with translated(f"deleting {kind}"):
            for n, values in groups.items():
                for start in range(0, len(values), ROWS_PER_CALL):
                    batch = ", ".join(literal(v) for v in values[start : start + ROWS_PER_CALL])
                    expr = f"{key} in [{batch}]" + (f" and {extra.format(n=n)}" if extra else "")
                    client.delete(name, filter=expr)
        store.written(name, sum(len(v) for v in groups.values()))


def _touch(
    store: MilvusAccess, collection: str, meta: dict[str, Any], changed: bool = False
) -> None:
    """Store the write time (to the second: one metadata write per second of writing, not per
    batch) and, when ``changed``, other changes the caller made to ``meta``."""
    now = lay.now()
    if changed or meta.get("updated_at") != now:
        meta["updated_at"] = now
        store.put_meta(meta)


def set_vectors(
    store: MilvusAccess, collection: str, chunk_ids: Sequence[int], vectors: NDArray[np.float32]
) -> None:
    """See :meth:`MilvusStore.set_vectors`."""
    if len(chunk_ids) == 0:
        return
    dim = int(vectors.shape[1])
    meta = store.meta(collection)
    fields = _fields(meta)
    new_part = store.check_dim(collection, dim) is None
    if new_part:
        store.create_part(collection, "vectors", fields, dim)
        meta["dim"] = dim
    rows = _chunk_rows(store, collection, fields, [int(c) for c in chunk_ids])
    out = []
    for cid, vec in zip(chunk_ids, np.asarray(vectors, dtype=np.float32), strict=True):
        row = rows.get(int(cid))
        if row is not None:  # the chunk was replaced meanwhile: its vector is not needed
            out.append({k: v for k, v in row.items() if k != "status"} | {"vector": vec.tolist()})
    _upsert(store, collection, "vectors", out)
    _upsert(store, collection, "hashes", lookup.hash_rows(out))
    # A chunk's vector row says it is embedded (see stats); only a failed chunk's stored
    # status must change (a partial update rewrites the whole chunk row and its BM25 terms).
    failed = [cid for cid, row in rows.items() if row["status"] == "failed"]
    set_status(store, collection, failed, "embedded", "")
    _touch(store, collection, meta, changed=new_part)


def _chunk_rows(
    store: MilvusAccess, collection: str, fields: list[dict[str, Any]], ids: list[int]
) -> dict[int, dict[str, Any]]:
    """``{chunk id: columns of its vector row, and its status}`` of the chunks that exist:
    those the last write left pending from the Lite cache (consumed), the others read."""
    cached = store.state.pending_rows.get(collection, {})
    rows = {cid: cached.pop(cid) for cid in ids if cid in cached}
    missing = [cid for cid in ids if cid not in rows]
    cols = ["chunk_id", "record_id", "content_hash", "status", *store.attr_columns(fields)]
    for r in store.rows_by(collection, "chunks", "chunk_id", missing, cols):
        rows[int(r["chunk_id"])] = r
    return rows


def set_status(
    store: MilvusAccess, collection: str, chunk_ids: Sequence[int], status: str, error: str
) -> None:
    """Set chunks' embedding status (partial update: text and BM25 rows stay as they are)."""
    cached = store.state.pending_rows.get(collection, {})
    for c in chunk_ids:  # no longer merely pending: set_vectors must read its status
        cached.pop(int(c), None)
    rows = [{"chunk_id": int(c), "status": status, "error": error} for c in chunk_ids]
    _upsert(store, collection, "chunks", rows, partial=True)


def delete_records(store: MilvusAccess, collection: str, ids: Sequence[str]) -> int:
    """See :meth:`MilvusStore.delete_records`."""
    existing = list(record_hashes(store, collection, ids))
    if not existing:
        return 0
    store.state.pending_rows.pop(collection, None)
    _delete_where(store, collection, ["vectors", "chunks", "records"], "record_id", {0: existing})
    _touch(store, collection, store.meta(collection))
    return len(existing)
