"""Writes of the Milvus store: upsert records and chunks, store vectors and status, delete
(rows built by :mod:`semsearch.stores.milvus.rows`, written by
:mod:`semsearch.stores.milvus.batch` and :mod:`semsearch.stores.milvus.mutate`).

Every write first brings the collection to layout 4 (:func:`migrate.current`), then writes in
this order (Milvus has no transactions): the other chunk rows and body part rows, then each
record's head row, whose record hash marks the record as written, then the rows it replaces
deleted. If a write stops half-way, the record's old head row is still stored (or none), so the
next upsert of the same record redoes it.

A chunk row holds its vector: ``write_records`` hands its rows to a batch that, on Milvus Lite,
waits in the process for ``set_vectors`` (see :mod:`semsearch.stores.milvus.batch`), so each
chunk row is written once. ``set_vectors`` for chunks already written (a server, a
``reindex``, a batch written early) rewrites their whole rows with the vector and
``embedded`` (a head row keeps its body and record hash: the row is read whole first).

Head chunks: a record's ordinal-0 chunk lives in its head row, whose id is the same for every
version of the record, so its chunk goes out under its content-derived id (its ticket,
``LocationState.tickets``); ``set_vectors``, ``mark_failed``, ``set_windows`` and
``get_chunks`` map a ticket back to the head row and act only while that row still holds the
ticket's chunk (:func:`resolve`). A ticket is known in the process that handed it out
(``write_records``, ``pending_chunks``); another process's ticket finds no row and is skipped,
as a replaced chunk's id always was (the chunk stays pending).

Cost: each batch reads only its own rows, by primary key (:mod:`semsearch.stores.milvus.lookup`)
and, on Lite, writes one Milvus collection in one call (two when records have more than one
chunk or a long body) without flushing (see ``state.FLUSH_ROWS``), so the time to insert n
records grows linearly in n.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from semsearch.stores.base import RecordWrite, WriteResult
from semsearch.stores.milvus import batch as milvus_batch
from semsearch.stores.milvus import layout as lay
from semsearch.stores.milvus import lookup, migrate, mutate
from semsearch.stores.milvus import rows as milvus_rows
from semsearch.stores.milvus.keyword_build import note_keywords
from semsearch.stores.milvus.migrate import CHUNK_COLUMNS, HEAD_COLUMNS
from semsearch.stores.milvus.records import note_deleted, record_hashes

if TYPE_CHECKING:
    from semsearch.stores.milvus.access import MilvusAccess

__all__ = ["TICKETS_MAX", "delete_records", "resolve", "set_status", "set_vectors", "write_records"]

#: Tickets (``LocationState.tickets``) kept per collection: a vector for a ticket forgotten
#: since is not stored (its chunk stays pending, and ``pending_chunks`` hands it out again).
TICKETS_MAX = 200_000


def write_records(
    store: MilvusAccess, collection: str, records: Sequence[RecordWrite]
) -> WriteResult:
    """See :meth:`MilvusStore.write_records`."""
    result = WriteResult()
    milvus_batch.settle(store, collection)
    meta = migrate.current(store, collection)
    fields = lay.declared_fields(meta["schema"])
    milvus_rows.check_sizes(records)
    known = record_hashes(store, collection, [r.id for r in records])
    changed = [r for r in records if known.get(r.id) != r.content_hash]
    result.unchanged = len(records) - len(changed)
    if not changed:
        return result
    _begin(store, collection, meta)
    old = lookup.old_chunks(store, collection, changed, known)
    new_chunks = milvus_rows.new_chunks(changed)
    vectors, own = lookup.reusable(store, collection, new_chunks, old)
    handed: dict[int, int] = {}
    chunks = milvus_rows.chunk_rows(fields, new_chunks, vectors, own, result, handed)
    ids: dict[str, list[int]] = {r.id: [] for r in changed}
    for cid, r, _ in new_chunks:
        ids[r.id].append(cid)
    keywords = {}
    for r in changed:
        parts, keywords[r.id] = milvus_rows.head_rows(fields, r, ids[r.id], chunks)
        for part in parts:
            chunks[int(part["chunk_id"])] = part
    _hand_out(store, collection, handed)
    heads = [lay.head_id(r.id) for r in changed]
    batch = milvus_batch.Batch(chunks, heads, stale=list(set(old) - set(chunks)))
    batch.tickets = {cid: ticket for ticket, cid in handed.items()}
    batch.keywords = keywords
    if store.state.lite and not batch.ready():
        store.state.batches[collection] = batch  # written when set_vectors fills it
    else:
        milvus_batch.write(store, collection, batch)
    result.added = sum(1 for r in changed if r.id not in known)
    result.updated = len(changed) - result.added
    _touch(store, collection, meta)
    return result


def _hand_out(store: MilvusAccess, collection: str, handed: dict[int, int]) -> None:
    """Remember ``handed`` (ticket -> head row id) in ``LocationState.tickets``, forgetting
    the oldest beyond ``TICKETS_MAX`` (a vector for a forgotten ticket is not stored)."""
    tickets = store.state.tickets.setdefault(collection, {})
    tickets.update(handed)
    excess = len(tickets) - TICKETS_MAX
    if excess > 0:
        for old in list(itertools.islice(tickets, excess)):
            del tickets[old]


def _begin(store: MilvusAccess, collection: str, meta: dict[str, Any]) -> None:
    """On Milvus Lite, once per process and collection (again after a write that raised):
    sweep what a write that stopped half-way left (its mark is still set), then set the mark,
    which stays set until this process's last store closes (see
    :mod:`semsearch.stores.milvus.lookup`)."""
    state = store.state
    if not state.lite or collection in state.marked:
        return
    if meta.get(lay.WRITING):
        mutate.delete_ids(store, collection, lookup.stale_chunks(store, collection))
    if not meta.get(lay.WRITING):
        meta[lay.WRITING] = True
        store.put_meta(meta)
    state.marked.add(collection)


def _touch(store: MilvusAccess, collection: str, meta: dict[str, Any]) -> None:
    """Store the write time (to the second: one metadata write per second of writing, not per
    batch), on the stored metadata (``meta`` is the caller's copy, for its time only)."""
    now = lay.now()
    if meta.get("updated_at") != now:
        meta = store.meta(collection) | {"updated_at": now}
        store.put_meta(meta)


def set_vectors(
    store: MilvusAccess, collection: str, chunk_ids: Sequence[int], vectors: NDArray[np.float32]
) -> None:
    """See :meth:`MilvusStore.set_vectors`: the vectors of a held-back batch's chunks go into
    its rows (written when it is complete); other chunks' rows are rewritten whole."""
    if len(chunk_ids) == 0:
        return
    dim = int(vectors.shape[1])
    meta = migrate.current(store, collection, dim)
    batch = store.state.batches.get(collection)
    others: dict[int, list[float]] = {}
    expect: dict[int, int] = {}
    # a copy: a held-back row keeps a view of it until its batch is written
    owned = np.array(vectors, dtype=np.float32)
    for ticket, vec in zip(chunk_ids, owned, strict=True):
        cid = _physical(store, collection, int(ticket), expect)
        row = batch.chunks.get(cid) if batch is not None else None
        if row is not None:  # a float32 row: columns.py packs the column without lists
            if batch is not None and batch.holds(cid, expect.get(cid)):
                row.update(vector=vec, status="embedded", error="")
        else:
            others[cid] = vec.tolist()
    if batch is not None and batch.ready():
        milvus_batch.settle(store, collection)
    _rewrite(store, collection, meta, others, {"status": "embedded", "error": ""}, expect)
    _touch(store, collection, meta)


def _physical(store: MilvusAccess, collection: str, ticket: int, expect: dict[int, int]) -> int:
    """The chunk id of the row a handed-out id (``ticket``) names: itself, or for a head
    chunk its head row's id, noted in ``expect`` (head id -> ticket) to check its content."""
    cid = store.state.tickets.get(collection, {}).get(ticket, ticket)
    if cid != ticket:
        expect[cid] = ticket
    return cid


def _holds(row: dict[str, Any], ticket: int | None) -> bool:
    """True when ``row`` still holds the content ``ticket`` was handed out for (a head row
    is rewritten by each version of its record under the same id); True without a ticket.
    A row that is no chunk (status ``RECORD``) never takes a vector or a status."""
    if row["status"] == lay.RECORD:
        return False
    return ticket is None or milvus_rows.ticket_of(row) == ticket


def resolve(store: MilvusAccess, collection: str, ids: Sequence[int]) -> dict[int, int]:
    """``{handed-out id: chunk id of its row}`` of the ``ids`` whose row exists and, for a
    head chunk's ticket, still holds that chunk (see ``LocationState.tickets``)."""
    expect: dict[int, int] = {}
    physical = {int(t): _physical(store, collection, int(t), expect) for t in ids}
    if not expect:
        return physical
    cols = ["chunk_id", "record_id", "ordinal", "loc", "content_hash", "status"]
    rows = store.rows_by(collection, "chunks", "chunk_id", list(expect), cols)
    held = {int(r["chunk_id"]) for r in rows if _holds(r, expect[int(r["chunk_id"])])}
    return {t: c for t, c in physical.items() if c not in expect or c in held}


def _rewrite(
    store: MilvusAccess,
    collection: str,
    meta: dict[str, Any],
    vectors: dict[int, list[float]],
    change: dict[str, Any],
    expect: dict[int, int],
) -> None:
    """Rewrite stored chunk rows whole with ``change`` and, per chunk id in ``vectors``, its
    vector (a chunk replaced meanwhile is skipped, as is a head row whose content is no longer
    the one in ``expect``; rows keep their vector when not given, head rows their body)."""
    if not vectors:
        return
    dim = int(meta.get("dim") or 0)
    cols = CHUNK_COLUMNS + HEAD_COLUMNS + store.attr_columns(lay.declared_fields(meta["schema"]))
    rows = store.rows_by(
        collection, "chunks", "chunk_id", list(vectors), cols + ["vector"] * (dim > 0)
    )
    out = []
    for row in rows:
        if not _holds(row, expect.get(int(row["chunk_id"]))):
            continue
        vec = vectors[int(row["chunk_id"])]
        row = {**row, **change}
        if dim:
            row["vector"] = vec if vec else [float(x) for x in row["vector"]]
        out.append(row)
    mutate.upsert(store, collection, "chunks", out)
    milvus_batch.remember(store, collection, out)


def set_status(
    store: MilvusAccess, collection: str, chunk_ids: Sequence[int], status: str, error: str
) -> None:
    """Mark chunks ``failed`` (``status``) with ``error``: in a held-back batch's rows, or by
    rewriting their stored rows (keeping the placeholder vector)."""
    meta = migrate.current(store, collection)
    batch = store.state.batches.get(collection)
    others: dict[int, list[float]] = {}
    expect: dict[int, int] = {}
    for ticket in chunk_ids:
        c = _physical(store, collection, int(ticket), expect)
        row = batch.chunks.get(c) if batch is not None else None
        if row is not None:
            if batch is not None and batch.holds(c, expect.get(c)):
                row.update(status=status, error=error)
                row.pop("vector", None)
        else:
            others[c] = []
    if batch is not None and batch.ready():
        milvus_batch.settle(store, collection)
    if int(meta.get("dim") or 0):
        placeholder = lay.placeholder(int(meta["dim"]))
        others = {c: placeholder for c in others}
    _rewrite(store, collection, meta, others, {"status": status, "error": error}, expect)


def delete_records(store: MilvusAccess, collection: str, ids: Sequence[str]) -> int:
    """See :meth:`MilvusStore.delete_records`."""
    milvus_batch.settle(store, collection)
    existing = list(record_hashes(store, collection, ids))
    if not existing:
        return 0
    migrate.current(store, collection)
    mutate.delete_where(store, collection, ["chunks"], "record_id", {0: existing})
    note_deleted(store, collection, existing)
    note_keywords(store, collection, dict.fromkeys(existing))
    _touch(store, collection, store.meta(collection))
    return len(existing)
