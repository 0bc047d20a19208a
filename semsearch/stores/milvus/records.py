"""Reading records of the Milvus store: bodies rejoined from their parts, and content hashes.

Layout 3 (see :mod:`semsearch.stores.milvus.layout`): a record is its head row in the chunk
part (id :func:`~semsearch.stores.milvus.layout.head_id`), which carries the content hash that
marks the record as written and the body's first piece, plus a part row per further piece (ids
:func:`~semsearch.stores.milvus.layout.part_id`). Layout 2 (read as it is until a write
migrates it): one row of ``*_records`` per body part, part 0 carrying the content hash. Every
read here is a primary-key lookup, so Milvus Lite answers it without a filter pass and without
a flush.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from semsearch.results import Record
from semsearch.stores.milvus import layout as lay

if TYPE_CHECKING:
    from semsearch.stores.milvus.access import MilvusAccess

__all__ = [
    "get_records",
    "head_docs",
    "note_deleted",
    "note_written",
    "record_docs",
    "record_hashes",
]


def record_hashes(store: MilvusAccess, collection: str, ids: Sequence[str]) -> dict[str, str]:
    """``{id: content_hash}`` for the ids that exist (a primary-key lookup of part 0). On
    Milvus Lite, answered from memory for a collection this process created (it wrote every
    record in it: ``LocationState.records``), and for the same ids again with no write
    between (as when ingestion asks and then ``write_records`` asks)."""
    state = store.state
    if collection in state.records:
        store._settle(collection)  # a batch held back is written first, as a read would
        every = state.records.get(collection)
        if every is not None:
            return {i: h for i in ids if (h := every.get(i)) is not None}
    seen = state.hashes
    fresh = seen is not None and seen[:2] == (state.generation, collection)
    if seen is not None and fresh and all(i in seen[2] for i in ids):
        return {i: h for i in ids if (h := seen[2][i]) is not None}
    if store.layout(collection) >= 3:
        heads = [lay.head_id(i) for i in ids]
        rows = store.rows_by(collection, "chunks", "chunk_id", heads, ["record_id", "record_hash"])
        found = {r["record_id"]: r["record_hash"] for r in rows if r["record_hash"]}
    else:
        pks = [lay.record_pk(0, i) for i in ids]
        rows = store.rows_by(collection, "records", "pk", pks, ["record_id", "content_hash"])
        found = {r["record_id"]: r["content_hash"] for r in rows}
    if state.lite:
        state.hashes = (state.generation, collection, {i: found.get(i) for i in ids})
    return found


def record_docs(
    store: MilvusAccess, collection: str, ids: Sequence[str]
) -> dict[str, dict[str, Any]]:
    """``{id: body}`` of the records that exist: the JSON document ``{"fields", "text"}``
    (and ``"chunks"``, its chunk ids, when written by this version), rejoined from its
    parts; a record missing a part is left out."""
    if store.layout(collection) >= 3:
        return head_docs(store, collection, ids)
    cols = ["record_id", "part", "nparts", "body"]
    rows = store.rows_by(collection, "records", "pk", [lay.record_pk(0, i) for i in ids], cols)
    more = [lay.record_pk(p, r["record_id"]) for r in rows for p in range(1, r["nparts"])]
    rows += store.rows_by(collection, "records", "pk", more, cols)
    parts: dict[str, dict[int, str]] = {}
    for r in rows:
        parts.setdefault(r["record_id"], {})[r["part"]] = r["body"]
    return {
        rid: json.loads("".join(by_part[i] for i in sorted(by_part)))
        for rid, by_part in parts.items()
        if 0 in by_part and len(by_part) == max(by_part) + 1
    }


def head_docs(
    store: MilvusAccess,
    collection: str,
    ids: Sequence[str],
    part_ids: dict[str, list[int]] | None = None,
) -> dict[str, dict[str, Any]]:
    """:func:`record_docs` in layout 3: head rows, then the part rows they name (their ids
    per record go into ``part_ids`` when given)."""
    cols = ["chunk_id", "record_id", "record_hash", "nparts", "body"]
    heads = store.rows_by(collection, "chunks", "chunk_id", [lay.head_id(i) for i in ids], cols)
    heads = [h for h in heads if h["record_hash"]]
    want = {
        lay.part_id(n, h["record_id"], h["record_hash"]): (h["record_id"], n)
        for h in heads
        for n in range(1, int(h["nparts"]))
    }
    if part_ids is not None:
        for pid, (rid, _) in want.items():
            part_ids.setdefault(rid, []).append(pid)
    pieces: dict[str, dict[int, str]] = {h["record_id"]: {0: h["body"]} for h in heads}
    for row in store.rows_by(collection, "chunks", "chunk_id", list(want), ["chunk_id", "body"]):
        rid, n = want[int(row["chunk_id"])]
        pieces[rid][n] = row["body"]
    nparts = {h["record_id"]: int(h["nparts"]) for h in heads}
    return {
        rid: json.loads("".join(by_part[i] for i in range(nparts[rid])))
        for rid, by_part in pieces.items()
        if len(by_part) == nparts[rid]
    }


def get_records(store: MilvusAccess, collection: str, ids: Sequence[str]) -> list[Record]:
    """The records that exist among ``ids``, in the order asked."""
    docs = record_docs(store, collection, ids)
    return [Record(i, docs[i]["fields"], docs[i]["text"]) for i in dict.fromkeys(ids) if i in docs]


def note_written(store: MilvusAccess, collection: str, rows: Sequence[dict[str, Any]]) -> None:
    """Keep the process's map of every record's hash (if any) up to date: ``rows`` are head
    rows just written."""
    every = store.state.records.get(collection)
    if every is not None:
        every.update((r["record_id"], r["record_hash"]) for r in rows)


def note_deleted(store: MilvusAccess, collection: str, ids: Sequence[str]) -> None:
    """Drop the records ``ids``, just deleted, from the process's map of every record."""
    every = store.state.records.get(collection)
    if every is not None:
        for i in ids:
            every.pop(i, None)
