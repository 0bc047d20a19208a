"""The rows of a Milvus Lite write held back until their vectors arrive, so that each chunk
row is written once, with its vector (layout 2, :mod:`semsearch.stores.milvus.layout`).

``write_records`` builds a :class:`Batch`: its chunk rows (those with a reused vector have it),
among them the head rows that carry each record's body (layout 3), and the chunk ids it
replaces. On Milvus Lite, when some chunks wait for a vector, the batch stays in the process
(``LocationState.batches``); ``set_vectors`` and ``mark_failed`` fill or settle its rows, and
when every row has a vector or is failed the batch is written. Anything else that touches the
collection first (a read, another write, closing the store) writes it at once, its waiting rows
with the placeholder vector and status ``pending``. Order of the write: the other chunk rows
and body parts, then the head rows (the commit marker), then the replaced chunk rows and body
parts deleted, so a kill at any point leaves each record old or new (its old head lists its
old rows; rows of a head not written are orphans, swept by :mod:`semsearch.stores.milvus.lookup`):
a batch still in memory was never committed and the next upsert redoes it.

On a server (other processes read meanwhile) a batch is written at once.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from semsearch.stores.milvus import layout as lay
from semsearch.stores.milvus import mutate
from semsearch.stores.milvus.keyword_build import note_keywords
from semsearch.stores.milvus.keyword_columns import RecordKeyword
from semsearch.stores.milvus.records import note_written

if TYPE_CHECKING:
    from semsearch.stores.milvus.access import MilvusAccess

__all__ = ["Batch", "settle"]


@dataclass
class Batch:
    """One ``write_records`` call's rows: ``chunks`` (chunk id -> chunk-part row, ``vector``
    float list of length dim once known; body part rows included), ``heads`` (the head rows'
    ids, written after the others), ``stale`` (chunk ids to delete last) and ``tickets``."""

    chunks: dict[int, dict[str, Any]]
    heads: list[int]
    stale: list[int] = field(default_factory=list)
    #: head row id -> the ticket its chunk was handed out under (pending head chunks).
    tickets: dict[int, int] = field(default_factory=dict)
    #: record id -> its keyword terms, for the process's keyword index once committed.
    keywords: dict[str, RecordKeyword] = field(default_factory=dict)

    def holds(self, cid: int, ticket: int | None) -> bool:
        """True when row ``cid`` of this batch takes a vector or status handed out as
        ``ticket`` (None: its own id): a chunk, and for a head row, this version's chunk."""
        if self.chunks[cid]["status"] == lay.RECORD:
            return False
        return ticket is None or self.tickets.get(cid) == ticket

    def ready(self) -> bool:
        """True when every chunk row has its vector or is failed (nothing more will come)."""
        return all(
            "vector" in r or r["status"] in ("failed", lay.RECORD) for r in self.chunks.values()
        )


def settle(store: MilvusAccess, collection: str) -> None:
    """Write ``collection``'s held-back batch, if any (rows still waiting: placeholders)."""
    batch = store.state.batches.pop(collection, None)
    if batch is not None:
        write(store, collection, batch)


def write(store: MilvusAccess, collection: str, batch: Batch) -> None:
    """Write a batch: chunk and part rows, head rows (the commit marker), stale rows deleted."""
    dim = int(store.meta(collection).get("dim") or 0)
    for row in batch.chunks.values():
        if "vector" not in row and dim:
            row["vector"] = lay.placeholder(dim)
        elif "vector" in row and not dim:  # no vector column yet (cannot happen after migrate)
            del row["vector"]
            if row["status"] != lay.RECORD:
                row["status"] = "pending"
    heads = set(batch.heads)
    rows = [row for cid, row in batch.chunks.items() if cid not in heads]
    mutate.upsert(store, collection, "chunks", rows)
    head_rows = [batch.chunks[cid] for cid in batch.heads]
    try:
        mutate.upsert(store, collection, "chunks", head_rows)
    except BaseException:  # some rows may be stored (a read settles outside a write block)
        store.state.records.pop(collection, None)
        raise
    remember(store, collection, rows + head_rows)
    note_written(store, collection, head_rows)
    note_keywords(store, collection, dict(batch.keywords))
    mutate.delete_ids(store, collection, batch.stale)


def remember(store: MilvusAccess, collection: str, rows: list[dict[str, Any]]) -> None:
    """Add embedded rows to the process's ``content_hash -> chunk_id`` map (Lite)."""
    index = store.state.hash_index.get(collection)
    if index is None:
        return
    for row in rows:
        if row["status"] == "embedded":
            index[row["content_hash"]] = int(row["chunk_id"])
