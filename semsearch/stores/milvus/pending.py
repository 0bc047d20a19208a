"""Which chunks of a Milvus collection wait for a vector, and how many.

Layouts 2 and 3 (:mod:`semsearch.stores.milvus.layout`): a chunk row's ``status`` is exact
(its vector is in the same row), so the counts and the pending chunks are filters on it (rows of
status ``record``, layout 3's head rows of records without chunks and body parts, are no
chunks). A head row's chunk is handed out under its ticket (see
:mod:`semsearch.stores.milvus.writes`).

Layout 1 (read as it is until the first write migrates it): a chunk is embedded when it has a row in ``*_vectors``: ``set_vectors`` writes vector rows and
leaves the chunk rows as the record write stored them (``pending``, or ``embedded`` when a
vector was reused), because a Milvus upsert rewrites the whole row, BM25 terms included, and
setting ``status`` per vector cost as much as writing the chunk again. Only a ``failed`` chunk's
status is rewritten when it gets a vector. So:

- embedded = vector rows, failed = chunks with ``status == "failed"``, pending = the other
  chunks (three counts; every vector row belongs to a stored chunk, as writes delete vectors
  before their chunks);
- the pending chunks themselves are the chunks not failed whose vector a primary-key lookup
  does not find. Collections written by earlier versions (which set ``embedded`` per vector)
  agree with both rules.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from semsearch.chunking import embedding_text
from semsearch.filters import Filter
from semsearch.stores.base import PendingChunk
from semsearch.stores.milvus.conn import translated
from semsearch.stores.milvus.expr import compile_filter
from semsearch.stores.milvus.layout import MAX_TOPK
from semsearch.stores.milvus.rows import ticket_of

if TYPE_CHECKING:
    from semsearch.stores.milvus.access import MilvusAccess

__all__ = ["pending_chunks", "status_counts"]


def status_counts(store: MilvusAccess, collection: str, extra: str) -> tuple[int, int, int]:
    """(chunks, embedded, failed) of records matching ``extra`` (``" and <expr>"`` or ``""``);
    vector rows carry the filter columns, so the same expression counts them."""
    chunks = store.count_where(collection, "chunks", f'status != "record"{extra}')
    if store.layout(collection) >= 2:
        embedded = store.count_where(collection, "chunks", f'status == "embedded"{extra}')
    else:
        embedded = store.count_where(collection, "vectors", f"chunk_id >= 0{extra}")
    failed = store.count_where(collection, "chunks", f'status == "failed"{extra}')
    return chunks, min(embedded, chunks - failed), failed


def pending_chunks(
    store: MilvusAccess, collection: str, limit: int, where: Filter | None
) -> list[PendingChunk]:
    """See :meth:`MilvusStore.pending_chunks`: the counts first (nothing more when none is
    pending), then the ids of chunks not failed, less those with a vector."""
    extra = f" and {compile_filter(where)}" if where is not None else ""
    found = store._coll(collection, "chunks")
    if found is None or limit <= 0:
        return []
    chunks, embedded, failed = status_counts(store, collection, extra)
    ids = _unembedded(store, found, collection, extra, min(limit, chunks - embedded - failed))
    out = _pending_rows(store, collection, ids)
    if len(ids) < limit and failed:
        expr = f'status == "failed"{extra}'
        failing = _chunk_ids(found, expr, min(limit - len(ids), MAX_TOPK))
        out += _pending_rows(store, collection, failing)
    return out


def _chunk_ids(found: tuple[Any, str], expr: str, limit: int) -> list[int]:
    """Ids of up to ``limit`` chunks matching ``expr``, in Milvus' order (one query)."""
    client, name = found
    with translated("reading pending chunks"):
        rows = client.query(name, filter=expr, output_fields=["chunk_id"], limit=limit)
    return [int(r["chunk_id"]) for r in rows]


def _unembedded(
    store: MilvusAccess, found: tuple[Any, str], collection: str, extra: str, wanted: int
) -> list[int]:
    """Ids of up to ``wanted`` chunks not failed and without a vector: the first in Milvus'
    order, sorted by id."""
    if wanted <= 0:
        return []
    if store.layout(collection) >= 2:
        return sorted(_chunk_ids(found, f'status == "pending"{extra}', min(wanted, MAX_TOPK)))
    expr = f'status != "failed"{extra}'
    ids = _chunk_ids(found, expr, MAX_TOPK)
    if len(ids) == MAX_TOPK:  # more than one query returns: the rest in primary-key order
        first = set(ids)
        rest = (int(r["chunk_id"]) for r in store.scan(collection, "chunks", expr, ["chunk_id"]))
        ids += [c for c in rest if c not in first]
    have = store.rows_by(collection, "vectors", "chunk_id", ids, ["chunk_id"])
    done = {int(r["chunk_id"]) for r in have}
    return sorted([c for c in ids if c not in done][:wanted])


def _pending_rows(store: MilvusAccess, collection: str, ids: list[int]) -> list[PendingChunk]:
    """PendingChunks of ``ids`` sorted by the id handed out (a head row's chunk goes out
    under its ticket: ``LocationState.tickets``), their embedding text rebuilt."""
    cols = ["chunk_id", "text", "loc", "record_id", "ordinal", "content_hash"]
    rows = {
        int(r["chunk_id"]): r for r in store.rows_by(collection, "chunks", "chunk_id", ids, cols)
    }
    handed = {c: c for c in ids}
    if store.layout(collection) >= 3:  # a head row's chunk is handed out under its ticket
        tickets = store.state.tickets.setdefault(collection, {})
        for c, row in rows.items():
            if int(row["ordinal"]) == 0:
                handed[c] = ticket_of(row)
                tickets[handed[c]] = c
    out = [
        PendingChunk(
            handed[c],
            embedding_text(rows[c]["text"], tuple(json.loads(rows[c]["loc"])[2])),
            rows[c]["record_id"],
        )
        for c in ids
        if c in rows
    ]
    return sorted(out, key=lambda p: p.chunk_id)
