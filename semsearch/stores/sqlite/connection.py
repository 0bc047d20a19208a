"""The two connections of one SQLite store, their locks, and the transactions run on them.

Writes go through one connection (one write transaction at a time, as SQLite allows) and reads
through a second one, so in WAL mode a search never waits for a long write to finish: it reads
the last committed snapshot. Each connection has its own lock; an in-memory store has a single
connection and lock. :class:`SQLiteConnections` is the base of
:class:`~semsearch.stores.sqlite.store.SQLiteStore`; the query modules below the store (its
vector and keyword legs) take it, never the store class.
"""

from __future__ import annotations

import os
import sqlite3
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from semsearch.errors import IndexNotFound, StoreCorrupted
from semsearch.stores.base import CollectionInfo, WindowSet
from semsearch.stores.sqlite import file as sqlite_file
from semsearch.stores.sqlite import schema as ddl
from semsearch.stores.sqlite.changes import data_version
from semsearch.stores.sqlite.read_cache import ReadCache

__all__ = ["ANALYZE_AFTER", "ANALYZE_SAMPLE", "WINDOWS_CACHED", "SQLiteConnections"]

#: Records written before the first automatic ANALYZE, and rows sampled per index by it.
ANALYZE_AFTER = 1000
ANALYZE_SAMPLE = 1000
#: Chunks whose sentence windows a reader keeps between commits (about 8 KB each at 384-d):
#: a semantic search rescores the windows of up to 50 records' chunks.
WINDOWS_CACHED = 2048


class SQLiteConnections:
    """The writer and reader connections of one SQLite file (see the module docstring).

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
        self._conn: sqlite3.Connection | None = None  # writes
        self._reader: sqlite3.Connection | None = None  # reads
        self._closed = False
        self._written = 0  # records written by this store object, and when it last analyzed
        self._analyzed_at = 0
        #: collections by name, sentence windows by (collection, chunk id) and record ids by
        #: rowid, kept between commits
        self._infos: ReadCache[str, CollectionInfo | None] = ReadCache(64)
        self._windows: ReadCache[tuple[str, int], WindowSet] = ReadCache(WINDOWS_CACHED)
        self._names: ReadCache[int, str] = ReadCache(8192)  # record ids by rowid
        if path == ":memory:":  # one database per connection: reads share the writer's
            self._conn = self._reader = self._connect(path)
            self._read_lock = self._lock
            ddl.migrate(self._conn)
        elif os.path.exists(path) and os.path.getsize(path) > 0:
            sqlite_file.inspect_read_only(path)
            self._reader = self._connect(path, read=True)

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
        """One write transaction; creates and migrates the file on first use. With
        ``collection``, its change counter is bumped in the same transaction.

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
                        (ddl.now(), collection),
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

    def _rows(self, sql: str, params: Sequence[Any]) -> list[Any]:
        """Run one SELECT on the reader connection; no rows when the file does not exist yet.
        (A :data:`~semsearch.stores.sqlite.sql.Rows`.)"""
        with self._read_lock:  # taken first: close() cannot close the connection under us
            conn = self._read()
            return [] if conn is None else conn.execute(sql, params).fetchall()

    def _file_version(self) -> tuple[sqlite3.Connection, int] | None:
        """(reader connection, its :func:`~semsearch.stores.sqlite.changes.data_version`):
        equal to a pair read earlier (the same connection object, the same number) exactly when
        no connection has committed to the file since. None in memory (the reader is the
        writer, whose own commits do not count) or before the file exists."""
        with self._read_lock:
            conn = self._read()
            if conn is None or conn is self._conn:
                return None
            return conn, data_version(conn)

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

    def _count_written(self, records: int) -> None:
        """Count records written by this store; analyze after :data:`ANALYZE_AFTER` of them,
        and again each time the count doubles."""
        self._written += records
        if self._written >= max(ANALYZE_AFTER, 2 * self._analyzed_at):
            self.analyze()

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

    def _vacuum(self) -> None:
        """VACUUM the file and truncate its WAL (nothing in memory). It rewrites the whole
        file: it needs free disk space about the file's size and holds the write lock while it
        runs; searches of other processes go on reading.

        Raises:
            BackendUnavailable: the file cannot be written.
        """
        with self._lock, sqlite_file.unwritable(self.location):
            writer = self._conn
            if writer is not None and self.location != ":memory:":
                writer.execute("VACUUM")
                writer.execute("PRAGMA wal_checkpoint(TRUNCATE)")

    def file_size(self) -> int:
        """Bytes on disk (main file + WAL), 0 in memory."""
        if self.location == ":memory:":
            return 0
        return sum(
            os.path.getsize(p) for p in (self.location, self.location + "-wal") if os.path.exists(p)
        )
