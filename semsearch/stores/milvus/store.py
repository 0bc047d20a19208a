"""The Milvus store: Milvus Lite (a local data folder) or any Milvus server, through pymilvus.

``connect("milvus-lite:///path/notes.db")`` opens Milvus Lite in-process (one process per
folder); ``connect("http://host:19530")`` (optionally ``user:pass@`` or ``?token=``, ``?db=``)
opens a Milvus server or cluster. The layout (one Milvus collection per semsearch collection:
chunks with their vectors, each record's body in its head row, plus ``semsearch_meta``) is
documented in
:mod:`semsearch.stores.milvus.layout`
and docs/milvus.md. Vector search uses Milvus' index (COSINE); keyword search ranks records by
semsearch's BM25 from each record's terms (:mod:`semsearch.stores.milvus.keyword`), as the
SQLite store does; hybrid fusion happens above the store, in :mod:`semsearch.search`.

Milvus has no transactions: each write upserts chunk rows (with their vectors) first and each
record's head row last (its record hash is the commit marker, so a re-run repairs a half-done
write). Writes are
not flushed: inserted rows are searchable at once and Milvus persists them itself (a flush per
batch would seal a small segment each time, and searches slow down with many segments).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import Any

import numpy as np
from numpy.typing import NDArray

from semsearch.errors import InvalidQuery
from semsearch.filters import Filter
from semsearch.results import Chunk, Record
from semsearch.stores.base import (
    CollectionInfo,
    PendingChunk,
    RecordWrite,
    ScoredChunk,
    StoreStats,
    WindowSet,
    WriteResult,
)
from semsearch.stores.milvus import batch as milvus_batch
from semsearch.stores.milvus import layout as lay
from semsearch.stores.milvus import migrate as milvus_migrate
from semsearch.stores.milvus import pending as milvus_pending
from semsearch.stores.milvus import query as milvus_query
from semsearch.stores.milvus import rebuild as milvus_rebuild
from semsearch.stores.milvus import records as milvus_records
from semsearch.stores.milvus import windows as milvus_windows
from semsearch.stores.milvus import writes as milvus_writes
from semsearch.stores.milvus.conn import translated
from semsearch.stores.milvus.expr import compile_filter, literal
from semsearch.stores.milvus.keyword import KeywordMethods
from semsearch.stores.milvus.keyword_build import drop_stamps
from semsearch.stores.milvus.keyword_index import KeywordIndex
from semsearch.stores.write_rules import checked_vectors

__all__ = ["MilvusStore"]


class MilvusStore(KeywordMethods):
    """A semsearch store in Milvus.

    Args:
        location: ``milvus-lite:///path.db`` or ``http(s)://[user:pass@]host:port``, with
            optional ``?token=``, ``?db=`` and ``?index=HNSW|IVF_FLAT|AUTOINDEX|FLAT`` (the
            vector index of new collections; default HNSW).
        index: overrides ``?index=``.
    Raises:
        BackendUnavailable: bad location, pymilvus/milvus-lite missing, server unreachable,
            or the Lite folder is open in another process.
        StoreCorrupted / NotAnIndex: the Lite path is unreadable or not a Milvus Lite folder.
    """

    def _settle(self, collection: str) -> None:
        """Write the batch a write holds back (see :mod:`semsearch.stores.milvus.batch`)."""
        if collection in self.state.batches:
            with self.writing():
                milvus_batch.settle(self, collection)

    def exists(self) -> bool:
        """True when the store holds a semsearch index (the ``semsearch_meta`` collection)."""
        client = self._read_client()
        if client is None:
            return False
        with translated("listing collections"):
            return bool(client.has_collection(lay.META))

    @staticmethod
    def _to_info(meta: dict[str, Any]) -> CollectionInfo:
        return CollectionInfo(
            meta["name"], meta["schema"], meta["model_id"], meta.get("dim"),
            meta.get("options", {}), meta.get("created_at"),
        )  # fmt: skip

    def get_collection(self, name: str) -> CollectionInfo | None:
        """The stored collection called ``name``, or None (cached: see :meth:`meta_cached`)."""
        meta = self.meta_cached(name)
        return self._to_info(meta) if meta is not None else None

    def list_collections(self) -> list[CollectionInfo]:
        """Every semsearch collection in the store, by name."""
        return sorted((self._to_info(m) for m in self._meta_rows()), key=lambda i: i.name)

    def create_collection(self, info: CollectionInfo) -> None:
        """Create the Milvus collection (layout 4: a chunk part, with a vector column if
        ``info.dim`` is known) and the meta row.

        Raises:
            InvalidQuery: a keyword tokenizer other than ``porter`` was asked for (Milvus' BM25
                here indexes Porter stems; FTS5's ``trigram`` substring matching has no
                equivalent).
        """
        tokenizer = info.options.get("keyword_tokenizer", "porter")
        if tokenizer != "porter":
            raise InvalidQuery(
                f"the Milvus backend has no {tokenizer!r} keyword tokenizer",
                hint="use the default (porter) on Milvus, or the SQLite store for trigram search",
            )
        fields = lay.declared_fields(info.schema_json)
        chunks = lay.chunk_part(info.name, 1)
        created = self.create_part(info.name, "chunks", fields, info.dim or 0, name=chunks)
        if created and self.state.lite:
            self.state.records[info.name] = {}  # every record it will hold is written here
        if created:  # empty: its keyword index is complete (kept by this process's writes)
            self.state.keyword[info.name] = KeywordIndex()
        self.state.tickets.pop(info.name, None)
        self.state.settled.discard(info.name)
        now = lay.now()
        self.put_meta(
            {
                "name": info.name,
                "schema": info.schema_json,
                "model_id": info.model_id,
                "dim": info.dim,
                "options": info.options,
                # microseconds: tells a collection created again within a second apart
                "created_at": datetime.now(UTC).isoformat(timespec="microseconds"),
                "updated_at": now,
                "index": self.target.index,
                "layout": lay.LAYOUT,
                "chunks": chunks,
                "generation": 1,
            }
        )

    def update_collection(self, info: CollectionInfo) -> None:
        """Store a changed schema (added fields, by rebuilding the Milvus collections) or dim."""
        milvus_batch.settle(self, info.name)
        meta = self.meta(info.name)
        if info.schema_json != meta["schema"]:
            self.state.wrote()
            self.state.records.pop(info.name, None)  # a rebuild stopped half-way loses rows
            meta = milvus_rebuild.add_fields(self, meta, info.schema_json)
        if info.dim and not meta.get("dim"):  # the chunk part gets its vector column
            meta = milvus_migrate.current(self, info.name, info.dim)
        meta.update(schema=info.schema_json, dim=info.dim or meta.get("dim"), options=info.options)
        self.put_meta(meta)

    def drop_collection(self, name: str) -> bool:
        """Drop a collection's Milvus collections and its meta row. False if it did not exist."""
        if self.get_collection(name) is None:
            return False
        client = self._connect()
        with self._lock, translated(f"dropping {name}"):
            self.state.batches.pop(name, None)  # nothing held back is written
            parts = re.compile(
                re.escape(lay.prefix(name)) + r"_(records|chunks(_\d+)?|vectors|hashes)"
            )
            for part in client.list_collections():
                if parts.fullmatch(part):
                    client.drop_collection(part)
                self._loaded.discard(part)
                self.state.unflushed.pop(part, None)
            milvus_windows.drop(self, name)
            client.delete(lay.META, filter=f"name == {literal(name)}")
            drop_stamps(client, name)
            self.forget_meta(name)
            self.state.forget(name)
        return True

    def record_hashes(self, collection: str, ids: Sequence[str]) -> dict[str, str]:
        """``{id: content_hash}`` for the ids that exist (see
        :func:`semsearch.stores.milvus.records.record_hashes`)."""
        return milvus_records.record_hashes(self, collection, ids)

    @contextmanager
    def _pruning_windows(self, collection: str, ids: Sequence[str]) -> Iterator[None]:
        """A block of writes to records ``ids`` (see :meth:`writing`); when it ends without an
        error, the windows of the content their old chunks held and no chunk holds any more
        are deleted."""
        with self.writing():
            old = milvus_windows.hashes_of(self, collection, ids)
            yield
            milvus_windows.prune(self, collection, old)

    def write_records(self, collection: str, records: Sequence[RecordWrite]) -> WriteResult:
        """Upsert records and their chunks, reusing vectors by content hash (milvus_writes)."""
        ids = [r.id for r in records]
        if self.state.lite:  # answered from memory after ingestion's own ask: only stored
            known = self.record_hashes(collection, ids)  # records have windows to prune
            ids = [r.id for r in records if r.id in known and known[r.id] != r.content_hash]
        with self._pruning_windows(collection, ids):
            return milvus_writes.write_records(self, collection, records)

    def set_vectors(
        self, collection: str, chunk_ids: Sequence[int], vectors: NDArray[np.float32]
    ) -> None:
        """Store float32[n, dim] unit vectors; the first vectors fix the collection's dim.

        Raises:
            DimensionMismatch: another dimension than the collection's, or not one row per
                chunk id, before anything changes (rows held back stay held, so the caller can
                still mark the chunks failed).
        """
        vectors = checked_vectors(collection, chunk_ids, vectors)
        if len(chunk_ids):
            self.check_dim(collection, int(vectors.shape[1]))
        with self.writing():
            milvus_writes.set_vectors(self, collection, chunk_ids, vectors)

    def mark_failed(self, collection: str, chunk_ids: Sequence[int], error: str) -> None:
        """Record that embedding these chunks failed (they stay keyword-searchable)."""
        with self.writing():
            milvus_writes.set_status(self, collection, chunk_ids, "failed", error[:1000])

    def delete_records(self, collection: str, ids: Sequence[str]) -> int:
        """Delete records with their chunks and vectors. Returns how many existed."""
        with self._pruning_windows(collection, ids):
            return milvus_writes.delete_records(self, collection, ids)

    def set_windows(self, collection: str, windows: Mapping[int, WindowSet]) -> None:
        """Store chunks' sentence windows (see SentenceWindows and stores/milvus/windows.py);
        ``windows`` are keyed by the chunk ids ``write_records`` handed out."""
        with self.writing():
            rows = milvus_writes.resolve(self, collection, list(windows))
            milvus_windows.write(
                self, collection, {rows[t]: w for t, w in windows.items() if t in rows}
            )

    def window_vectors(self, collection: str, chunk_ids: Sequence[int]) -> dict[int, WindowSet]:
        """``{chunk id: WindowSet}`` of the chunks with windows (see SentenceWindows): ids
        searches return or ``write_records`` handed out."""
        if self.layout(collection) < 3:
            return milvus_windows.read(self, collection, chunk_ids)
        rows = milvus_writes.resolve(self, collection, chunk_ids)
        handed = {c: t for t, c in rows.items()}
        found = milvus_windows.read(self, collection, list(handed))
        return {handed[c]: w for c, w in found.items()}

    def pending_chunks(
        self, collection: str, limit: int, where: Filter | None = None
    ) -> list[PendingChunk]:
        """Up to ``limit`` chunks without a vector, of records matching ``where`` (None:
        all): pending before failed; within each, the first in Milvus' order (insertion order
        on Milvus Lite: the oldest; chunk ids are hashes), sorted by chunk id. See
        :mod:`semsearch.stores.milvus.pending`."""
        return milvus_pending.pending_chunks(self, collection, limit, where)

    def get_records(self, collection: str, ids: Sequence[str]) -> list[Record]:
        """The records that exist among ``ids``, in the order asked."""
        return milvus_records.get_records(self, collection, ids)

    def record_docs(self, collection: str, ids: Sequence[str]) -> dict[str, dict[str, Any]]:
        """``{id: body}`` of the records that exist (see
        :func:`semsearch.stores.milvus.records.record_docs`)."""
        return milvus_records.record_docs(self, collection, ids)

    def record_fields(self, collection: str, ids: Sequence[str]) -> dict[str, dict[str, Any]]:
        """``{id: fields}`` for the ids that exist."""
        return {r.id: r.fields for r in self.get_records(collection, ids)}

    def get_chunks(self, collection: str, chunk_ids: Sequence[int]) -> dict[int, Chunk]:
        """``{chunk_id: Chunk}`` for the ids that exist: those searches return, and those
        ``write_records`` and ``pending_chunks`` handed out (see ``LocationState.tickets``)."""
        ids = (
            milvus_writes.resolve(self, collection, chunk_ids)
            if self.layout(collection) >= 3
            else {int(c): int(c) for c in chunk_ids}
        )
        handed = {c: t for t, c in ids.items()}
        rows = self.rows_by(
            collection,
            "chunks",
            "chunk_id",
            list(handed),
            ["chunk_id", "text", "ordinal", "loc", "status"],
        )
        out = {}
        for r in rows:
            if r["status"] == lay.RECORD:
                continue
            start, end, heading, line_start, line_end = json.loads(r["loc"])
            out[handed[int(r["chunk_id"])]] = Chunk(
                r["text"], r["ordinal"], start, end, tuple(heading), line_start, line_end
            )
        return out

    def list_ids(self, collection: str) -> list[str]:
        """Every record id in the collection, sorted."""
        kind, expr = self._records_expr(collection)
        return sorted(r["record_id"] for r in self.scan(collection, kind, expr, ["record_id"]))

    def _records_expr(self, collection: str) -> tuple[str, str]:
        """(part, expression) of one row per record: layout 3's head rows (ordinal 0 with a
        record hash), layout 2's part-0 rows of ``*_records``."""
        if self.layout(collection) >= 3:
            return "chunks", 'ordinal == 0 and record_hash != ""'
        return "records", "part == 0"

    def count(self, collection: str) -> int:
        """Number of records."""
        return self.count_where(collection, *self._records_expr(collection))

    def stats(self, collection: str, where: Filter | None = None) -> StoreStats:
        """Record and chunk counts by embedding status (of records matching ``where``), and the
        last write time."""
        extra = f" and {compile_filter(where)}" if where is not None else ""
        chunks, embedded, failed = milvus_pending.status_counts(self, collection, extra)
        rows = self._meta_rows([collection])
        kind, expr = self._records_expr(collection)
        return StoreStats(
            records=self.count_where(collection, kind, f"{expr}{extra}"),
            chunks=chunks,
            embedded=embedded,
            pending=chunks - embedded - failed,
            failed=failed,
            last_updated=rows[0].get("updated_at") if rows else None,
        )

    def chunk_vectors(
        self, collection: str, ids: Sequence[str]
    ) -> dict[str, list[NDArray[np.float32] | None]]:
        """``{record_id: [float32[dim] vector, or None if not embedded, per chunk by ordinal]}``."""
        chunks = self.rows_by(
            collection, "chunks", "record_id", ids, ["chunk_id", "record_id", "ordinal"],
            f'status != "{lay.RECORD}"' if self.layout(collection) >= 3 else "",
        )  # fmt: skip
        vecs = {
            r["chunk_id"]: np.asarray(r["vector"], dtype=np.float32)
            for r in self.rows_by(
                collection,
                "vectors",
                "record_id",
                ids,
                ["chunk_id", "vector"],
                self.vector_filter(collection),
            )
        }
        out: dict[str, list[NDArray[np.float32] | None]] = {}
        for r in sorted(chunks, key=lambda r: (r["record_id"], r["ordinal"])):
            out.setdefault(r["record_id"], []).append(vecs.get(r["chunk_id"]))
        return out

    def compact(self) -> tuple[int, int]:
        """Bring every collection to the current layout (layout 4: its keyword columns; see
        :mod:`semsearch.stores.milvus.migrate`), as its first write would, and flush. Milvus
        compacts its own segments. Returns (bytes before, bytes after) of a Milvus Lite
        folder; (0, 0) on a server."""
        before = self.file_size()
        for info in self.list_collections():
            with self.writing():
                milvus_batch.settle(self, info.name)
                milvus_migrate.current(self, info.name)
        self.flush()
        return before, self.file_size()

    def file_size(self) -> int:
        """Bytes on disk of a Milvus Lite folder (0 for a server)."""
        path = self.target.lite_path
        if path is None or not os.path.isdir(path):
            return 0
        return sum(
            os.path.getsize(os.path.join(d, f)) for d, _, files in os.walk(path) for f in files
        )

    def vector_search(
        self,
        collection: str,
        vector: NDArray[np.float32],
        k: int,
        where: Filter | None,
        exact: bool = False,
    ) -> list[ScoredChunk]:
        """Top-k chunks by cosine similarity in [-1, 1], best first, ties by record id.

        Filters that match at most :data:`~semsearch.stores.milvus.state.EXACT_MAX` chunks,
        ``exact=True``, ``k`` above Milvus' topk limit, and any ANN answer shorter than ``k``
        are answered by an exact scan of the matching vectors, so a search returns
        min(k, matches) hits. Round trips: one
        ANN search, or one query for a small match set (none when Milvus Lite has it cached);
        see :func:`semsearch.stores.milvus.query.vector_search`.
        """
        return milvus_query.vector_search(self, collection, vector, k, where, exact)

    def find(
        self,
        collection: str,
        where: Filter | None,
        limit: int,
        offset: int,
        order_by: Sequence[tuple[str, bool]],
    ) -> list[Record]:
        """Records matching ``where``, ordered by ``order_by`` then id (sorted client-side)."""
        return milvus_query.find(self, collection, where, limit, offset, order_by)
