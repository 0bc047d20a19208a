"""The embedded default store: one SQLite file (``*.embed.db``) in WAL mode, or ``:memory:``.

The file is the source of truth: collections, records, chunks with their float16 vectors, one
FTS5 table per collection, and a change log. The in-memory vector matrix is a derived cache,
checked against the collection's change counter before every search. Opening a file that is
not a semsearch index raises NotAnIndex and leaves it byte-for-byte unchanged (it is inspected
read-only first); migrations run only when writing.

:class:`SQLiteStore` is the top of the SQLite side: it keeps the Store protocol's methods and
hands each to the module doing that job: its connections and transactions (connection.py), the
collections table (catalog.py), row writes (writes.py), plain reads (reads.py), the vector leg
(vectors.py over ann/) and the keyword leg (keyword_leg.py over bm25/).
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Mapping, Sequence
from functools import partial
from typing import Any

import numpy as np
from numpy.typing import NDArray

from semsearch.ann.cache import AnnIndex, AnnState
from semsearch.ann.horizon import changes_horizon
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
from semsearch.stores.sqlite import cache_files, catalog, new_records, reads, record_changes
from semsearch.stores.sqlite import changes as sqlite_changes
from semsearch.stores.sqlite import schema as ddl
from semsearch.stores.sqlite import vectors as sqlite_vectors
from semsearch.stores.sqlite import windows as sqlite_windows
from semsearch.stores.sqlite.connection import SQLiteConnections
from semsearch.stores.sqlite.keyword_leg import KeywordLeg
from semsearch.stores.sqlite.sql import batches
from semsearch.stores.sqlite.writes import delete_record_rows, write_record, write_vectors
from semsearch.stores.write_rules import checked_vectors

__all__ = ["SQLiteStore"]


class SQLiteStore(SQLiteConnections):
    """A semsearch index in one SQLite file.

    Writes go through one connection (one write transaction at a time, as SQLite allows) and
    reads through a second one, so in WAL mode a search never waits for a long write to finish:
    it reads the last committed snapshot (stores/sqlite/connection.py).

    Args:
        path: a file path (conventionally ``*.embed.db``) or ``":memory:"``. A missing file is
            created on the first write, never on a read.
    Raises:
        NotAnIndex: the file exists but is not a semsearch index (it is left unchanged).
        StoreCorrupted: the file was written by a newer semsearch.
    """

    def __init__(self, path: str) -> None:
        super().__init__(path)
        self._cache: sqlite_vectors.VectorCaches = {}  # derived vector caches (ann/cache.py)
        self._keywords = KeywordLeg(self)  # term counts and keyword sidecars (bm25/sidecar.py)
        # close() sets _closing under _grow_lock: a write's poke of a grower either comes first
        # (close() then finishes that grower) or is skipped, never a grower on a closed store
        self._grow_lock = threading.Lock()
        self._closing = False

    @property
    def keyword_sidecar(self) -> bool:
        """Rank record-level keyword queries from the keyword sidecar when it is current (off:
        FTS5 only, the same ranking; benchmarks compare the two)."""
        return self._keywords.use_sidecar

    @keyword_sidecar.setter
    def keyword_sidecar(self, on: bool) -> None:
        self._keywords.use_sidecar = on

    def close(self) -> None:
        """Finish the graphs being grown in the background (each is saved as its sidecar, so
        the next open searches at once; ann/grower.py) and the ``.kw`` files being rewritten
        (keyword_leg.py), then close the connections; afterwards reads and writes raise
        BackendUnavailable. A graph that would not be saved (``persist=False``) is dropped
        instead of finished."""
        with self._grow_lock:
            self._closing = True
        for index in list(self._cache.values()):
            index.close_growing()
        self._keywords.wait()
        super().close()

    def _forget(self, cid: int) -> None:
        """Let go of a dropped collection's derived caches and delete their files."""
        index = self._cache.pop(cid, None)
        if index is not None:
            index.stop_growing()
        self._keywords.forget(cid)
        if self.location != ":memory:":
            cache_files.remove_collection_files(self.location, cid)

    # -- collections --------------------------------------------------------------------------

    def get_collection(self, name: str) -> CollectionInfo | None:
        """The stored collection called ``name``, or None."""
        with self._read_lock:
            conn = self._read()
            if conn is None:
                return None
            read = lambda names: {name: catalog.get_collection(conn, name)}  # noqa: E731
            info = self._infos.get_many(self._file_version(), [name], read).get(name)
        return None if info is None else dataclasses.replace(info, options=dict(info.options))

    def list_collections(self) -> list[CollectionInfo]:
        """Every collection in the file, by name."""
        with self._read_lock:  # taken first: close() cannot close the connection under us
            conn = self._read()
            return [] if conn is None else catalog.list_collections(conn)

    def create_collection(self, info: CollectionInfo) -> None:
        """Create a collection with its FTS5 table and field indexes."""
        with self._write() as conn:
            catalog.create(conn, info)

    def update_collection(self, info: CollectionInfo) -> None:
        """Store a changed schema (added fields) or the dimension learnt from the first vectors."""
        with self._write(info.name) as conn:
            catalog.update(conn, self._collection_id(conn, info.name), info)

    def drop_collection(self, name: str) -> bool:
        """Delete a collection and everything in it. Returns False if it did not exist."""
        if self.get_collection(name) is None:  # (never creates the file)
            return False
        with self._write() as conn:
            cid = catalog.drop_rows(conn, name)
        if cid is None:  # another thread or process dropped it first
            return False
        self._forget(cid)
        return True

    def collection_version(self, name: str) -> int | None:
        """The collection's change counter (bumped by every write), or None if it does not exist."""
        rows = self._rows("SELECT version FROM collections WHERE name = ?", (name,))
        return int(rows[0][0]) if rows else None

    def replace_collection(
        self, target: str, source: str, expected_version: int | None = None
    ) -> bool:
        """In ONE transaction, drop ``target`` (if it exists) and rename ``source`` to ``target``.

        Readers see the old collection or the new one, never neither (``semsearch reembed``).
        With ``expected_version``, nothing changes and False is returned when ``target`` was
        written since (its change counter differs). Raises IndexNotFound if ``source`` is gone.
        """
        with self._write() as conn:
            source_id = self._collection_id(conn, source)
            done, old_id = catalog.rename_over(conn, source_id, target, expected_version)
        if old_id is not None:
            self._forget(old_id)
        return done

    # -- writes -------------------------------------------------------------------------------

    def record_hashes(self, collection: str, ids: Sequence[str]) -> dict[str, str]:
        """``{id: content_hash}`` for the ids that exist."""
        return reads.record_hashes(self._rows, collection, ids)

    def write_records(self, collection: str, records: Sequence[RecordWrite]) -> WriteResult:
        """Write records, chunks and FTS rows in one transaction, reusing vectors by hash."""
        result = WriteResult()
        with self._write(collection) as conn:
            cid = self._collection_id(conn, collection)
            old = sqlite_windows.hashes_of(conn, cid, [r.id for r in records])
            existing = new_records.existing_ids(conn, cid, [r.id for r in records])
            for new, run in new_records.split_new(records, existing):
                if new:  # a bulk load: set-based inserts, the same rows (new_records.py)
                    new_records.insert_new_records(conn, cid, run, result)
                else:
                    write_record(conn, cid, run[0], result)
            sqlite_windows.prune(conn, cid, old)
            behind = record_changes.maybe_prune(conn, cid, self._keywords.horizon)
        self._count_written(len(records))
        self._keywords.catch_up(collection, behind)  # when the .kw file held the prune back
        return result

    def set_vectors(
        self, collection: str, chunk_ids: Sequence[int], vectors: NDArray[np.float32]
    ) -> None:
        """Store float32[n, dim] unit vectors (kept as float16 blobs: vector_blobs.py);
        the first vectors fix the collection's dim.

        Raises:
            DimensionMismatch: the collection holds vectors of another dim, or ``vectors``
                is not one row per chunk id (nothing is written).
        """
        vectors = checked_vectors(collection, chunk_ids, vectors)
        if len(chunk_ids) == 0:
            return
        with self._write(collection) as conn:
            cid = self._collection_id(conn, collection)
            write_vectors(conn, cid, collection, chunk_ids, vectors)
            sqlite_changes.maybe_prune(conn, cid, partial(changes_horizon, conn, self.location))
            options = catalog.options_of(conn, cid)
        # the first graph grows in the background while the collection is written (ann/grower.py)
        with self._grow_lock:  # not after close() began (see __init__)
            if not self._closing:
                sqlite_vectors.cache_for(self, self._cache, cid).grow(self._in_read_txn, options)

    def set_windows(self, collection: str, windows: Mapping[int, WindowSet]) -> None:
        """Store chunks' sentence windows (see SentenceWindows); not a change of the index."""
        if windows:
            with self._write() as conn:
                sqlite_windows.write_windows(conn, self._collection_id(conn, collection), windows)

    def window_vectors(self, collection: str, chunk_ids: Sequence[int]) -> dict[int, WindowSet]:
        """``{chunk id: WindowSet}`` of the chunks with windows (see SentenceWindows)."""
        with self._read_lock:

            def read(keys: list[tuple[str, int]]) -> dict[tuple[str, int], WindowSet]:
                found = sqlite_windows.read_windows(self._rows, collection, [c for _, c in keys])
                return {(collection, c): w for c, w in found.items()}

            keys = [(collection, int(c)) for c in chunk_ids]
            found = self._windows.get_many(self._file_version(), keys, read)
        return {c: found[(collection, c)] for _, c in keys if (collection, c) in found}

    def mark_failed(self, collection: str, chunk_ids: Sequence[int], error: str) -> None:
        """Record that embedding these chunks failed (they stay keyword-searchable)."""
        with self._write(collection) as conn:
            conn.executemany(
                "UPDATE chunks SET status = 'failed', error = ? WHERE id = ?",
                [(error[:500], int(c)) for c in chunk_ids],
            )

    def delete_records(self, collection: str, ids: Sequence[str]) -> int:
        """Delete records with their chunks, vectors and FTS rows. Returns how many existed."""
        if not ids or self._read() is None:
            return 0
        with self._write(collection) as conn:
            cid = self._collection_id(conn, collection)
            old = sqlite_windows.hashes_of(conn, cid, ids)
            deleted = sum(delete_record_rows(conn, cid, batch) for batch in batches(list(ids)))
            sqlite_windows.prune(conn, cid, old)
            sqlite_changes.maybe_prune(conn, cid, partial(changes_horizon, conn, self.location))
            behind = record_changes.maybe_prune(conn, cid, self._keywords.horizon)
        self._keywords.catch_up(collection, behind)  # when the .kw file held the prune back
        return deleted

    def compact(self) -> tuple[int, int]:
        """Rewrite each keyword sidecar file behind the record change log (keyword_leg.py),
        prune the change logs as far as every reader allows, merge each FTS5 index into one
        segment (deleted rows leave tombstones that VACUUM cannot drop), then VACUUM the file
        and truncate its WAL (``semsearch compact``); last, delete cache files left for
        dropped collections and temporary files of killed writers (cache_files.py).

        Pruning is safe for other processes (stores/sqlite/changes.py). VACUUM rewrites the
        whole file: it needs free disk space about the file's size and holds the write lock
        while it runs; searches of other processes go on reading.

        Returns:
            (bytes before, bytes after), main file plus WAL.
        Raises:
            BackendUnavailable: the file cannot be written.
        """
        before = self.file_size()
        if self._read() is None:
            return before, before
        self._keywords.catch_up_files([c.name for c in self.list_collections()])
        with self._write() as conn:
            sqlite_changes.prune_all(conn, partial(changes_horizon, conn, self.location))
            record_changes.prune_all(conn, self._keywords.horizon)
            ddl.optimize_keyword_indexes(conn)
            live = {int(r[0]) for r in conn.execute("SELECT id FROM collections")}
            newest = ddl.last_collection_id(conn)
        self._vacuum()
        if self.location != ":memory:":  # cache files a dropped collection's builder rewrote
            cache_files.remove_orphans(self.location, live, newest)
            cache_files.remove_dead_temps(self.location)
        return before, self.file_size()

    # -- reads (stores/sqlite/reads.py) -------------------------------------------------------

    def pending_chunks(
        self, collection: str, limit: int, where: Filter | None = None
    ) -> list[PendingChunk]:
        """Up to ``limit`` chunks without a vector, pending before failed, oldest first within
        each; ``where`` limits them to chunks of matching records."""
        return reads.pending_chunks(self._rows, collection, limit, where)

    def get_records(self, collection: str, ids: Sequence[str]) -> list[Record]:
        """The records that exist among ``ids``, in the order asked."""
        return reads.get_records(self._rows, collection, ids)

    def record_fields(self, collection: str, ids: Sequence[str]) -> dict[str, dict[str, Any]]:
        """``{id: fields}`` for the ids that exist."""
        return {r.id: r.fields for r in self.get_records(collection, ids)}

    def chunk_vectors(
        self, collection: str, ids: Sequence[str]
    ) -> dict[str, list[NDArray[np.float32] | None]]:
        """Stored vectors per record, by chunk ordinal (None where a chunk is not embedded):
        float32[dim], the stored float16 values upcast exactly (float32 in older files)."""
        if not self.exists():
            return {}
        found: dict[str, list[NDArray[np.float32] | None]] = self._in_read_txn(
            lambda conn: reads.chunk_vectors(conn, collection, ids)
        )
        return found

    def get_chunks(self, collection: str, chunk_ids: Sequence[int]) -> dict[int, Chunk]:
        """``{chunk_id: Chunk}`` for the ids that exist."""
        return reads.get_chunks(self._rows, chunk_ids)

    def hit_rows(
        self, collection: str, chunk_ids: Sequence[int]
    ) -> dict[int, tuple[str, Chunk, dict[str, Any]]]:
        """``{chunk id: (record id, chunk, record fields)}`` for the chunks that exist, in one
        read (:class:`~semsearch.stores.read_capabilities.HitReads`)."""
        return reads.hit_rows(self._rows, collection, chunk_ids)

    def list_ids(self, collection: str) -> list[str]:
        """Every record id in the collection, sorted."""
        return reads.list_ids(self._rows, collection)

    def count(self, collection: str) -> int:
        """Number of records."""
        return reads.count(self._rows, collection)

    def stats(self, collection: str, where: Filter | None = None) -> StoreStats:
        """Record and chunk counts by embedding status, and the last write time; ``where``
        counts only matching records and their chunks."""
        return reads.stats(self._rows, collection, where)

    def find(
        self,
        collection: str,
        where: Filter | None,
        limit: int,
        offset: int,
        order_by: Sequence[tuple[str, bool]],
    ) -> list[Record]:
        """Records matching ``where``, ordered by ``order_by`` then id."""
        return reads.find(self._rows, collection, where, limit, offset, order_by)

    # -- queries ------------------------------------------------------------------------------

    def _matrix(
        self, collection: str, upkeep: bool = True
    ) -> tuple[int, AnnIndex, AnnState] | None:
        """The collection's vector cache, caught up with the file (see
        :func:`~semsearch.stores.sqlite.vectors.matrix`)."""
        return sqlite_vectors.matrix(self, self._cache, collection, upkeep)

    def vector_search(
        self,
        collection: str,
        vector: NDArray[np.float32],
        k: int,
        where: Filter | None,
        exact: bool = False,
    ) -> list[ScoredChunk]:
        """Top-k chunks by cosine similarity in [-1, 1], best first, ties by record id.

        An exact numpy scan below the collection's ANN threshold (or with ``exact=True``), an
        HNSW graph above it (ann/cache.py, stores/sqlite/vectors.py). The filter applies before
        ranking; selective filters scan the filtered chunks exactly, others are evaluated inside
        the graph, so min(k, matching chunks) rows come back either way.
        Raises:
            DimensionMismatch: the query's dimension differs from the collection's.
        """
        return sqlite_vectors.vector_search(self, self._cache, collection, vector, k, where, exact)

    def vector_search_records(
        self,
        collection: str,
        vector: NDArray[np.float32],
        limit: int,
        where: Filter | None,
        exact: bool = False,
    ) -> list[ScoredChunk]:
        """The candidate chunks of the best ``limit`` records (see
        :class:`~semsearch.stores.base.VectorRecords` and :meth:`vector_search`)."""
        return sqlite_vectors.vector_search_records(
            self, self._cache, collection, vector, limit, where, exact
        )

    def keyword_search(
        self, collection: str, text: str, k: int, where: Filter | None
    ) -> list[ScoredChunk]:
        """Top-k chunks by BM25 (negated FTS5 ``bm25()``: > 0, higher is better), ties by id.

        Any user text is safe (it is quoted, never parsed as FTS5 syntax); the collection's
        ``keyword_tokenizer`` option picks stemmed words or substrings (see keyword.py).
        """
        return self._keywords.search(collection, text, k, where)

    def keyword_search_scoped(
        self, collection: str, text: str, k: int, where: Filter | None
    ) -> list[ScoredChunk] | None:
        """BM25 with statistics inside ``where`` (see
        :class:`~semsearch.stores.keyword_capabilities.ScopedKeyword`), from the keyword sidecar; None while
        the sidecar is stale and rebuilding, for ``trigram`` collections and files of format 1.
        """
        return self._keywords.search_scoped(collection, text, k, where)

    def refresh_keyword_index(self, collection: str, wait: bool = True) -> None:
        """Build the collection's keyword sidecar now if writes left it stale (see
        :meth:`~semsearch.stores.sqlite.keyword_leg.KeywordLeg.refresh`); searches stay correct
        without it, on FTS5."""
        self._keywords.refresh(collection, wait)

    def keyword_chunks(
        self, collection: str, text: str, record_ids: Sequence[str]
    ) -> dict[str, int]:
        """``{record id: chunk id}``: each record's best chunk by chunk-level BM25 for ``text``
        (for the record-level hits search shows; see :class:`~semsearch.stores.keyword_capabilities.KeywordChunks`)."""
        return self._keywords.best_chunks(collection, text, record_ids)
