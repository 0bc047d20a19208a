"""The embedded default store: one SQLite file (``*.embed.db``) in WAL mode, or ``:memory:``.

The file is the source of truth: collections, records, chunks with their float16 vectors, one
FTS5 table per collection, and a change log. The in-memory vector matrix is a derived cache,
checked against the collection's change counter before every search. Opening a file that is
not a semsearch index raises NotAnIndex and leaves it byte-for-byte unchanged (it is inspected
read-only first); migrations run only when writing.
"""

from __future__ import annotations

import json
import os
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from functools import partial
from typing import Any

import numpy as np
from numpy.typing import NDArray

from semsearch.ann.cache import AnnIndex, AnnState
from semsearch.ann.horizon import changes_horizon
from semsearch.bm25.chunks import best_chunks_from_text
from semsearch.bm25.file import record_log_horizon
from semsearch.bm25.sidecar import (
    KeywordSidecar,
    forget_sidecar,
    refresh_sidecar,
    sidecar_rank,
)
from semsearch.errors import DimensionMismatch, IndexNotFound, StoreCorrupted
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
from semsearch.stores.sqlite import changes as sqlite_changes
from semsearch.stores.sqlite import file as sqlite_file
from semsearch.stores.sqlite import keyword as sqlite_keyword
from semsearch.stores.sqlite import record_changes
from semsearch.stores.sqlite import schema as ddl
from semsearch.stores.sqlite import vectors as sqlite_vectors
from semsearch.stores.sqlite import windows as sqlite_windows
from semsearch.stores.sqlite.record_fts import has_record_fts
from semsearch.stores.sqlite.sql import batches, compile_filter, marks, order_by_sql
from semsearch.stores.sqlite.vector_blobs import decode_vector, encode_vectors
from semsearch.stores.sqlite.writes import delete_record_rows, write_record

__all__ = ["SQLiteStore"]

#: Records written before the first automatic ANALYZE, and rows sampled per index by it.
ANALYZE_AFTER = 1000
ANALYZE_SAMPLE = 1000


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


class SQLiteStore:
    """A semsearch index in one SQLite file.

    Writes go through one connection (one write transaction at a time, as SQLite allows) and
    reads through a second one, so in WAL mode a search never waits for a long write to finish:
    it reads the last committed snapshot. Each connection has its own lock; an in-memory store
    has a single connection and lock.

    Args:
        path: a file path (conventionally ``*.embed.db``) or ``":memory:"``. A missing file is
            created on the first write, never on a read.
    Raises:
        NotAnIndex: the file exists but is not a semsearch index (it is left unchanged).
        StoreCorrupted: the file was written by a newer semsearch.
    """

    def __init__(self, path: str) -> None:
        self.location = path
        self._lock = threading.RLock()  # the writer connection
        self._read_lock = threading.RLock()  # the reader connection
        self._cache: dict[int, AnnIndex] = {}  # derived vector caches (ann/cache.py)
        self._term_counts: dict[int, sqlite_keyword.TermCounts] = {}  # per collection id
        self._keyword_sidecars: dict[int, KeywordSidecar] = {}  # bm25/sidecar.py
        #: Rank record-level keyword queries from the keyword sidecar when it is current (off:
        #: FTS5 only, the same ranking; benchmarks compare the two).
        self.keyword_sidecar = True
        self._conn: sqlite3.Connection | None = None  # writes
        self._reader: sqlite3.Connection | None = None  # reads
        self._closed = False
        self._written = 0  # records written by this store object, and when it last analyzed
        self._analyzed_at = 0
        if path == ":memory:":  # one database per connection: reads share the writer's
            self._conn = self._reader = self._connect(path)
            self._read_lock = self._lock
            ddl.migrate(self._conn)
        elif os.path.exists(path) and os.path.getsize(path) > 0:
            sqlite_file.inspect_read_only(path)
            self._reader = self._connect(path, read=True)

    # -- connection ---------------------------------------------------------------------------

    @staticmethod
    def _connect(path: str, read: bool = False) -> sqlite3.Connection:
        return sqlite_file.connect(path, read)

    def exists(self) -> bool:
        """True when the file exists (or the store is in memory)."""
        if self._reader is None and not self._closed:
            self._open_if_created()
        return self._reader is not None

    def close(self) -> None:
        """Close the connections; afterwards reads and writes raise BackendUnavailable."""
        with self._lock, self._read_lock:
            self._closed = True
            for conn in {id(c): c for c in (self._conn, self._reader) if c is not None}.values():
                conn.close()
            self._conn = self._reader = None

    def _read(self) -> sqlite3.Connection | None:
        """The connection, or None when the file does not exist yet (reads find nothing).

        A file that another process created after this store was opened is opened here, on
        the first read that finds it (e.g. the workers of ``semsearch serve --workers N``).
        """
        if self._closed:
            raise sqlite_file.closed_error()
        if self._reader is None:
            self._open_if_created()
        return self._reader

    def _open_if_created(self) -> None:
        with self._read_lock:
            path = self.location
            if self._closed:  # a read racing close(): never open a connection nobody closes
                return
            if self._reader is None and os.path.exists(path) and os.path.getsize(path) > 0:
                sqlite_file.inspect_read_only(path)
                self._reader = self._connect(path, read=True)

    @contextmanager
    def _write(self, collection: str | None = None) -> Iterator[sqlite3.Connection]:
        """One write transaction; creates and migrates the file on first use.

        Raises:
            BackendUnavailable: the file cannot be created or written (missing folder, read-only).
        """
        with self._lock, sqlite_file.unwritable(self.location):
            if self._closed:  # never reopen (and so create) the file after close()
                raise sqlite_file.closed_error()
            if self._conn is None:
                path = self.location
                new_file = not (os.path.exists(path) and os.path.getsize(path) > 0)
                self._conn = self._connect(path)
                if new_file:
                    sqlite_file.use_wal(self._conn)
            ddl.migrate(self._conn)
            conn = self._conn
            conn.execute("BEGIN IMMEDIATE")
            try:
                yield conn
                if collection is not None:
                    conn.execute(
                        "UPDATE collections SET version = version + 1, updated_at = ? "
                        "WHERE name = ?",
                        (_now(), collection),
                    )
                conn.execute("COMMIT")
            except BaseException:
                conn.execute("ROLLBACK")
                raise

    def _collection_id(self, conn: sqlite3.Connection, name: str) -> int:
        """The collection's id, read inside a write transaction.

        Raises:
            IndexNotFound: another thread or process dropped it after the caller checked.
        """
        row = conn.execute("SELECT id FROM collections WHERE name = ?", (name,)).fetchone()
        if row is None:
            raise IndexNotFound(
                f"collection {name!r} was dropped (by another thread or process) while writing",
                hint="open it again with db.collection(name) and repeat the write",
            )
        return int(row[0])

    # -- collections --------------------------------------------------------------------------

    def get_collection(self, name: str) -> CollectionInfo | None:
        """The stored collection called ``name``, or None."""
        return next((c for c in self.list_collections() if c.name == name), None)

    def list_collections(self) -> list[CollectionInfo]:
        """Every collection in the file, by name."""
        with self._read_lock:  # taken first: close() cannot close the connection under us
            conn = self._read()
            if conn is None or ddl.schema_version(conn) == 0:
                return []
            rows = conn.execute(
                "SELECT name, schema, model_id, dim, options, created_at FROM collections "
                "ORDER BY name"
            ).fetchall()
        return [CollectionInfo(r[0], r[1], r[2], r[3], json.loads(r[4]), r[5]) for r in rows]

    def create_collection(self, info: CollectionInfo) -> None:
        """Create a collection with its FTS5 table and field indexes."""
        fields = [f["name"] for f in json.loads(info.schema_json)["fields"]]
        with self._write() as conn:
            cid = ddl.next_collection_id(conn)
            cur = conn.execute(
                "INSERT INTO collections (id, name, schema, model_id, dim, options, created_at) "
                "VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (name) DO NOTHING",
                (
                    cid,
                    info.name,
                    info.schema_json,
                    info.model_id,
                    info.dim,
                    json.dumps(info.options),
                    # microseconds: derived caches tell two collections apart by this stamp
                    datetime.now(UTC).isoformat(timespec="microseconds"),
                ),
            )
            if cur.rowcount == 1:  # else another process created it first: keep theirs
                ddl.create_collection_objects(conn, cid, fields)

    def update_collection(self, info: CollectionInfo) -> None:
        """Store a changed schema (added fields) or the dimension learnt from the first vectors."""
        fields = [f["name"] for f in json.loads(info.schema_json)["fields"]]
        with self._write(info.name) as conn:
            conn.execute(
                "UPDATE collections SET schema = ?, dim = ?, options = ? WHERE name = ?",
                (info.schema_json, info.dim, json.dumps(info.options), info.name),
            )
            ddl.create_collection_objects(conn, self._collection_id(conn, info.name), fields)

    def drop_collection(self, name: str) -> bool:
        """Delete a collection and everything in it. Returns False if it did not exist."""
        if self.get_collection(name) is None:  # (never creates the file)
            return False
        with self._write() as conn:
            cid = self._drop_rows(conn, name)
        if cid is None:  # another thread or process dropped it first
            return False
        self._cache.pop(cid, None)
        forget_sidecar(self, cid)
        return True

    def _drop_rows(self, conn: sqlite3.Connection, name: str) -> int | None:
        """Inside a write transaction: delete a collection's rows and objects; returns its id,
        or None when it does not exist (read in this transaction: another connection may have
        dropped or re-created it since the caller looked)."""
        row = conn.execute("SELECT id, schema FROM collections WHERE name = ?", (name,)).fetchone()
        if row is None:
            return None
        cid, fields = int(row[0]), [f["name"] for f in json.loads(row[1])["fields"]]
        ddl.drop_collection_objects(conn, cid, fields)
        for table in ("changes", sqlite_windows.TABLE, "chunks", "records"):
            conn.execute(f"DELETE FROM {table} WHERE collection_id = ?", (cid,))
        conn.execute("DELETE FROM collections WHERE id = ?", (cid,))
        return cid

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
            if expected_version is not None:
                row = conn.execute("SELECT version FROM collections WHERE name = ?", (target,))
                found = row.fetchone()
                if found is None or int(found[0]) != expected_version:
                    return False
            old_id = self._drop_rows(conn, target)
            conn.execute(
                "UPDATE collections SET name = ?, version = version + 1, updated_at = ? "
                "WHERE id = ?",
                (target, _now(), source_id),
            )
        if old_id is not None:
            self._cache.pop(old_id, None)
            forget_sidecar(self, old_id)
        return True

    # -- writes -------------------------------------------------------------------------------

    def record_hashes(self, collection: str, ids: Sequence[str]) -> dict[str, str]:
        """``{id: content_hash}`` for the ids that exist."""
        out: dict[str, str] = {}
        for batch in batches(list(ids)):
            rows = self._rows(
                "SELECT r.id, r.content_hash FROM records r JOIN collections c "
                f"ON c.id = r.collection_id WHERE c.name = ? AND r.id IN ({marks(batch)})",
                (collection, *batch),
            )
            out.update({r[0]: r[1] for r in rows})
        return out

    def write_records(self, collection: str, records: Sequence[RecordWrite]) -> WriteResult:
        """Write records, chunks and FTS rows in one transaction, reusing vectors by hash."""
        result = WriteResult()
        with self._write(collection) as conn:
            cid = self._collection_id(conn, collection)
            old = sqlite_windows.hashes_of(conn, cid, [r.id for r in records])
            for record in records:
                write_record(conn, cid, record, result)
            sqlite_windows.prune(conn, cid, old)
            record_changes.maybe_prune(conn, cid, partial(record_log_horizon, self.location))
        self._written += len(records)
        if self._written >= max(ANALYZE_AFTER, 2 * self._analyzed_at):
            self.analyze()
        return result

    def analyze(self) -> None:
        """Refresh the query planner's statistics (sampled: ``PRAGMA analysis_limit``).

        Without statistics SQLite may walk a whole collection in the order of an ORDER BY field
        instead of using the filter's field index: a filtered ``find`` on 100k records then
        costs a full scan. Runs automatically after the first ``ANALYZE_AFTER`` records written
        by this store, and again each time that count doubles.
        """
        with self._lock:
            if self._conn is None:
                return
            self._conn.execute(f"PRAGMA analysis_limit = {ANALYZE_SAMPLE}")
            self._conn.execute("ANALYZE")
            self._analyzed_at = self._written
        self._reopen_reader()

    def _reopen_reader(self) -> None:
        """Replace the reader connection so that it loads the new planner statistics.

        A connection reads them when it opens; ``ANALYZE sqlite_schema`` would reload them but
        takes the write lock, so it would wait (holding every search) for another writer.
        """
        with self._read_lock:
            old = self._reader
            if old is None or old is self._conn or self._closed:
                return
            self._reader = self._connect(self.location, read=True)
            old.close()

    def set_vectors(
        self, collection: str, chunk_ids: Sequence[int], vectors: NDArray[np.float32]
    ) -> None:
        """Store float32[n, dim] unit vectors (kept as float16 blobs: sqlite_vector_blobs.py);
        the first vectors fix the collection's dim."""
        if len(chunk_ids) == 0:
            return
        dim = int(vectors.shape[1])
        with self._write(collection) as conn:
            cid = self._collection_id(conn, collection)
            stored = conn.execute("SELECT dim FROM collections WHERE id = ?", (cid,))
            stored_dim = stored.fetchone()[0]
            if stored_dim is None:
                conn.execute("UPDATE collections SET dim = ? WHERE name = ?", (dim, collection))
            elif stored_dim != dim:
                raise DimensionMismatch(
                    f"collection {collection!r} holds {stored_dim}-d vectors; got {dim}-d",
                    hint="use the model the collection was built with",
                )
            blobs = encode_vectors(vectors)  # float16 (format 5: sqlite_vector_blobs.py)
            conn.executemany(
                "UPDATE chunks SET vector = ?, status = 'embedded', error = NULL "
                "WHERE id = ? AND collection_id = ?",
                [(blob, int(c), cid) for blob, c in zip(blobs, chunk_ids, strict=True)],
            )
            conn.executemany(
                "INSERT INTO changes (collection_id, chunk_id, op) VALUES (?, ?, 'add')",
                [(cid, int(c)) for c in chunk_ids],
            )
            sqlite_changes.maybe_prune(conn, cid, partial(changes_horizon, conn, self.location))

    def set_windows(self, collection: str, windows: Mapping[int, WindowSet]) -> None:
        """Store chunks' sentence windows (see SentenceWindows); not a change of the index."""
        if windows:
            with self._write() as conn:
                sqlite_windows.write_windows(conn, self._collection_id(conn, collection), windows)

    def window_vectors(self, collection: str, chunk_ids: Sequence[int]) -> dict[int, WindowSet]:
        """``{chunk id: WindowSet}`` of the chunks with windows (see SentenceWindows)."""
        with self._read_lock:
            return sqlite_windows.read_windows(self._rows, collection, chunk_ids)

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
            record_changes.maybe_prune(conn, cid, partial(record_log_horizon, self.location))
            return deleted

    def compact(self) -> tuple[int, int]:
        """Prune the change log as far as every reader allows, merge each FTS5 index into one
        segment (deleted rows leave tombstones that VACUUM cannot drop), then VACUUM the file
        and truncate its WAL (``semsearch compact``).

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
        with self._write() as conn:
            sqlite_changes.prune_all(conn, partial(changes_horizon, conn, self.location))
            record_changes.prune_all(conn, partial(record_log_horizon, self.location))
            ddl.optimize_keyword_indexes(conn)
        with self._lock, sqlite_file.unwritable(self.location):
            writer = self._conn
            if writer is not None and self.location != ":memory:":
                writer.execute("VACUUM")
                writer.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        return before, self.file_size()

    # -- reads --------------------------------------------------------------------------------

    def _rows(self, sql: str, params: Sequence[Any]) -> list[Any]:
        with self._read_lock:  # taken first: close() cannot close the connection under us
            conn = self._read()
            return [] if conn is None else conn.execute(sql, params).fetchall()

    def pending_chunks(
        self, collection: str, limit: int, where: Filter | None = None
    ) -> list[PendingChunk]:
        """Up to ``limit`` chunks without a vector, pending before failed, oldest first within
        each; ``where`` limits them to chunks of matching records."""
        from semsearch.chunking import embedding_text

        filter_sql, params = compile_filter(where) if where is not None else ("1", [])
        rows = self._rows(
            "SELECT k.id, k.text, k.heading_path, r.id FROM chunks k JOIN collections c "
            "ON c.id = k.collection_id JOIN records r ON r.rowid = k.record_rowid "
            f"WHERE c.name = ? AND k.status IN ('pending', 'failed') AND ({filter_sql}) "
            "ORDER BY k.status = 'failed', k.id LIMIT ?",  # IN: the status index applies
            (collection, *params, limit),
        )
        return [
            PendingChunk(r[0], embedding_text(r[1], tuple(json.loads(r[2]))), r[3]) for r in rows
        ]

    def get_records(self, collection: str, ids: Sequence[str]) -> list[Record]:
        """The records that exist among ``ids``, in the order asked."""
        found: dict[str, Record] = {}
        for batch in batches(list(ids)):
            rows = self._rows(
                "SELECT r.id, r.fields, r.text FROM records r JOIN collections c "
                f"ON c.id = r.collection_id WHERE c.name = ? AND r.id IN ({marks(batch)})",
                (collection, *batch),
            )
            found.update({r[0]: Record(r[0], json.loads(r[1]), r[2]) for r in rows})
        return [found[i] for i in ids if i in found]

    def record_fields(self, collection: str, ids: Sequence[str]) -> dict[str, dict[str, Any]]:
        """``{id: fields}`` for the ids that exist."""
        return {r.id: r.fields for r in self.get_records(collection, ids)}

    def chunk_vectors(
        self, collection: str, ids: Sequence[str]
    ) -> dict[str, list[NDArray[np.float32] | None]]:
        """Stored vectors per record, by chunk ordinal (None where a chunk is not embedded):
        float32[dim], the stored float16 values upcast exactly (float32 in older files)."""
        out: dict[str, list[NDArray[np.float32] | None]] = {}
        for batch in batches(list(ids)):
            rows = self._rows(
                "SELECT r.id, CASE WHEN k.status = 'embedded' THEN k.vector END, c.dim "
                "FROM chunks k JOIN records r ON r.rowid = k.record_rowid JOIN collections c ON c.id = r.collection_id WHERE c.name = ? "
                f"AND r.id IN ({marks(batch)}) ORDER BY r.id, k.ordinal",
                (collection, *batch),
            )
            for rid, blob, dim in rows:
                vector = None if blob is None else decode_vector(blob, int(dim))
                out.setdefault(rid, []).append(vector)
        return out

    def get_chunks(self, collection: str, chunk_ids: Sequence[int]) -> dict[int, Chunk]:
        """``{chunk_id: Chunk}`` for the ids that exist."""
        out: dict[int, Chunk] = {}
        for batch in batches([int(c) for c in chunk_ids]):
            rows = self._rows(
                "SELECT id, text, ordinal, char_start, char_end, heading_path, line_start, "
                f"line_end FROM chunks WHERE id IN ({marks(batch)})",
                batch,
            )
            for r in rows:
                out[r[0]] = Chunk(r[1], r[2], r[3], r[4], tuple(json.loads(r[5])), r[6], r[7])
        return out

    def list_ids(self, collection: str) -> list[str]:
        """Every record id in the collection, sorted."""
        rows = self._rows(
            "SELECT r.id FROM records r JOIN collections c ON c.id = r.collection_id "
            "WHERE c.name = ? ORDER BY r.id",
            (collection,),
        )
        return [r[0] for r in rows]

    def count(self, collection: str) -> int:
        """Number of records."""
        rows = self._rows(
            "SELECT COUNT(*) FROM records r JOIN collections c ON c.id = r.collection_id "
            "WHERE c.name = ?",
            (collection,),
        )
        return int(rows[0][0]) if rows else 0

    def stats(self, collection: str, where: Filter | None = None) -> StoreStats:
        """Record and chunk counts by embedding status, and the last write time; ``where``
        counts only matching records and their chunks."""
        filter_sql, params = compile_filter(where) if where is not None else ("1", [])
        rows = self._rows(
            "SELECT k.status, COUNT(*) FROM chunks k JOIN collections c ON c.id = k.collection_id "
            "JOIN records r ON r.rowid = k.record_rowid "
            f"WHERE c.name = ? AND ({filter_sql}) GROUP BY k.status",
            (collection, *params),
        )
        by_status = {r[0]: int(r[1]) for r in rows}
        updated = self._rows("SELECT updated_at FROM collections WHERE name = ?", (collection,))
        records = self._rows(
            "SELECT COUNT(*) FROM records r JOIN collections c ON c.id = r.collection_id "
            f"WHERE c.name = ? AND ({filter_sql})",
            (collection, *params),
        )
        return StoreStats(
            records=int(records[0][0]) if records else 0,
            chunks=sum(by_status.values()),
            embedded=by_status.get("embedded", 0),
            pending=by_status.get("pending", 0),
            failed=by_status.get("failed", 0),
            last_updated=updated[0][0] if updated else None,
        )

    def file_size(self) -> int:
        """Bytes on disk (main file + WAL), 0 in memory."""
        if self.location == ":memory:":
            return 0
        return sum(
            os.path.getsize(p) for p in (self.location, self.location + "-wal") if os.path.exists(p)
        )

    # -- queries ------------------------------------------------------------------------------

    def _matrix(
        self, collection: str, upkeep: bool = True
    ) -> tuple[int, AnnIndex, AnnState] | None:
        """The collection's vector cache, caught up with the file (see ann/cache.py).

        ``upkeep=False`` (exact searches) skips building or merging the HNSW graph. The name is
        looked up again when its collection is gone by the time the cache reads it: a swap
        (:meth:`replace_collection`) gave the name to another collection meanwhile.
        """
        for attempt in range(40):  # a swap in between each look-up and read: look again
            rows = self._rows("SELECT id FROM collections WHERE name = ?", (collection,))
            if not rows:
                if attempt >= 2:
                    return None
                time.sleep(0.002 * (attempt + 1))  # a swap's commit may be landing: look again
                continue
            cid = int(rows[0][0])
            index = self._cache.get(cid)
            if index is None:
                fetch = partial(sqlite_vectors.stored_vectors, self)
                index = self._cache.setdefault(cid, AnnIndex(self.location, cid, fetch))
            state = index.refresh(self._in_read_txn, upkeep)
            if state is not None:
                return cid, index, state
            # swapped again before the read (reembed in a loop, a loaded machine): back off a
            # little so the swaps cannot win every race
            time.sleep(0.001 * min(attempt, 10))
        return None

    def _in_read_txn(self, fn: Callable[[sqlite3.Connection], Any]) -> Any:
        """Run ``fn(conn)`` inside one read transaction: a consistent snapshot of the file."""
        with self._read_lock:
            conn = self._read()
            if conn is None:
                raise StoreCorrupted("the index file vanished", hint="reopen the index")
            conn.execute("BEGIN")
            try:
                return fn(conn)
            finally:
                conn.execute("COMMIT")

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
        return sqlite_vectors.vector_search(self, collection, vector, k, where, exact)

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
        return sqlite_vectors.vector_search_records(self, collection, vector, limit, where, exact)

    def keyword_search(
        self, collection: str, text: str, k: int, where: Filter | None
    ) -> list[ScoredChunk]:
        """Top-k chunks by BM25 (negated FTS5 ``bm25()``: > 0, higher is better), ties by id.

        Any user text is safe (it is quoted, never parsed as FTS5 syntax); the collection's
        ``keyword_tokenizer`` option picks stemmed words or substrings (see sqlite_keyword.py).
        """
        if self._read() is None:
            return []
        found: list[ScoredChunk] = self._in_read_txn(
            lambda _: self._keyword_search(collection, text, k, where)
        )
        return found

    def refresh_keyword_index(self, collection: str, wait: bool = True) -> None:
        """Build the collection's keyword sidecar now if writes left it stale (see
        :func:`~semsearch.bm25.sidecar.refresh_sidecar`); searches stay correct
        without it, on FTS5."""
        refresh_sidecar(self, collection, wait)

    def keyword_chunks(
        self, collection: str, text: str, record_ids: Sequence[str]
    ) -> dict[str, int]:
        """``{record id: chunk id}``: each record's best chunk by chunk-level BM25 for ``text``
        (for the record-level hits search shows; see :class:`~semsearch.stores.base.KeywordChunks`)."""
        if self._read() is None:
            return {}

        def best(_: sqlite3.Connection) -> dict[str, int]:
            found = self._keyword_setup(collection)
            if found is None:
                return {}
            cid, tokenizer, counts = found
            sidecar = self._keyword_sidecars.get(cid) if self.keyword_sidecar else None
            snap = sidecar.current(self._rows) if sidecar is not None else None
            if sidecar is not None and snap is not None:  # no FTS5 scoring query
                return best_chunks_from_text(
                    self._rows, cid, sidecar.tokenizer, snap.live, text, record_ids, counts
                )
            return sqlite_keyword.best_chunks(self._rows, cid, tokenizer, text, record_ids, counts)

        chunks: dict[str, int] = self._in_read_txn(best)
        return chunks

    def _keyword_setup(self, collection: str) -> tuple[int, str, sqlite_keyword.TermCounts] | None:
        """(collection id, keyword tokenizer, the snapshot's term counts), or None when gone."""
        rows = self._rows(
            "SELECT id, options, version, created_at FROM collections WHERE name = ?",
            (collection,),
        )
        if not rows:
            return None
        cid, options, *stamp = rows[0]
        counts = self._term_counts.get(cid)
        if counts is None or counts.key != (cid, *stamp):
            counts = self._term_counts[cid] = sqlite_keyword.TermCounts((cid, *stamp))
        return int(cid), ddl.keyword_tokenizer(json.loads(options)), counts

    def _keyword_search(
        self, collection: str, text: str, k: int, where: Filter | None
    ) -> list[ScoredChunk]:
        found = self._keyword_setup(collection)
        if found is None:
            return []
        cid, tokenizer, counts = found
        # files of format 1 keep ranking chunks until a write migrates them (never on a read)
        unit: sqlite_keyword.Unit = "record" if has_record_fts(self._rows, cid) else "chunk"
        use = unit == "record" and self.keyword_sidecar
        fast = sidecar_rank(self, cid, counts.key[2], tokenizer) if use else None
        return sqlite_keyword.keyword_search(
            self._rows, int(cid), tokenizer, text, k, where, counts, unit, fast
        )

    def find(
        self,
        collection: str,
        where: Filter | None,
        limit: int,
        offset: int,
        order_by: Sequence[tuple[str, bool]],
    ) -> list[Record]:
        """Records matching ``where``, ordered by ``order_by`` then id."""
        filter_sql, params = compile_filter(where) if where is not None else ("1", [])
        rows = self._rows(
            "SELECT r.id, r.fields, r.text FROM records r JOIN collections c "
            f"ON c.id = r.collection_id WHERE c.name = ? AND ({filter_sql}) "
            f"{order_by_sql(order_by)} LIMIT ? OFFSET ?",
            (collection, *params, limit, offset),
        )
        return [Record(r[0], json.loads(r[1]), r[2]) for r in rows]
