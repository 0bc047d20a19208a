"""Opening and guarding a ``.embed.db`` file: read-only inspection, write errors, closed stores.

Opening a file that is not a semsearch index raises NotAnIndex and leaves it byte-for-byte
unchanged: it is inspected through a read-only connection before anything writes to it.
"""

from __future__ import annotations

import os
import sqlite3
import time
from collections.abc import Iterator
from contextlib import contextmanager
from urllib.parse import quote

from semsearch.errors import BackendUnavailable, NotAnIndex, StoreCorrupted
from semsearch.stores.sqlite import schema as ddl
from semsearch.stores.sqlite.sql import (
    CASEFOLD_FUNCTION,
    FNMATCH_FUNCTION,
    casefold_function,
    fnmatch_function,
)

__all__ = ["closed_error", "connect", "inspect_read_only", "unwritable", "use_wal"]


def connect(path: str, read: bool = False) -> sqlite3.Connection:
    """A connection in autocommit mode (transactions are explicit), shared across threads.

    ``synchronous = NORMAL`` is safe with WAL (a power cut can lose the last commits, never
    corrupt the file); the fnmatch function backs path scopes that GLOB cannot express, and
    the casefold function the substring scan of queries with non-ASCII cased letters.
    With ``read``, an index in a read-only folder (a read-only volume or image) is opened
    immutable when no writer is using it (see :func:`_read_only_media`).
    """
    target, uri = (_immutable_uri(path), True) if read and _read_only_media(path) else (path, False)
    conn = sqlite3.connect(
        target, isolation_level=None, check_same_thread=False, timeout=30, uri=uri
    )
    conn.execute("PRAGMA synchronous = NORMAL")
    conn.create_function(FNMATCH_FUNCTION, 2, fnmatch_function, deterministic=True)
    conn.create_function(CASEFOLD_FUNCTION, 1, casefold_function, deterministic=True)
    return conn


def use_wal(conn: sqlite3.Connection, wait: float = 30.0) -> None:
    """Put a new file in WAL mode (it stays so): readers keep reading while a write runs.

    Processes creating the same file at once (``semsearch serve --workers N``) can make the
    switch fail at once with "database is locked": SQLite does not wait when waiting could
    deadlock. It is retried for up to ``wait`` seconds, like the busy timeout.
    """
    deadline = time.monotonic() + wait
    while True:
        try:
            conn.execute("PRAGMA journal_mode = WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() > deadline:
                raise
            time.sleep(0.01)


def closed_error() -> BackendUnavailable:
    """The error every read and write raises after ``close()``."""
    return BackendUnavailable(
        "the index is closed", hint="reopen it with semsearch.connect(location)"
    )


@contextmanager
def unwritable(path: str) -> Iterator[None]:
    """Turn SQLite's "cannot open / readonly database" errors into BackendUnavailable."""
    try:
        yield
    except sqlite3.OperationalError as exc:
        text = str(exc)
        if "unable to open" not in text and "readonly" not in text:
            raise
        folder = os.path.dirname(path) or "."
        raise BackendUnavailable(
            f"cannot write the index {path}: {text}",
            hint=f"check that its folder exists ({folder}) and that {path} and that folder "
            "are writable",
        ) from exc


def inspect_read_only(path: str) -> None:
    """Refuse a file that is not a semsearch index without writing a byte to it."""
    if os.path.isdir(path):
        raise BackendUnavailable(
            f"{os.path.basename(path)} is a folder, not an index file",
            hint="give a file path ending in .embed.db",
        )
    try:
        ro = _immutable_uri(path) if _read_only_media(path) else f"file:{quote(path)}?mode=ro"
        conn = sqlite3.connect(ro, uri=True)
    except sqlite3.Error as exc:
        raise NotAnIndex(f"cannot open {path} as an index: {exc}", hint=_NOT_INDEX_HINT) from exc
    try:
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        if tables <= {"semsearch_migrations"}:
            return  # empty, or another process is creating the index right now
        if not ddl.is_semsearch_file(conn):
            raise NotAnIndex(f"{path} is not a semsearch index", hint=_NOT_INDEX_HINT)
        version = ddl.schema_version(conn)
    except sqlite3.DatabaseError as exc:
        raise NotAnIndex(f"{path} is not a semsearch index ({exc})", hint=_NOT_INDEX_HINT) from exc
    finally:
        conn.close()
    if version > ddl.SCHEMA_VERSION:
        raise StoreCorrupted(
            f"{path} uses index format {version}; this semsearch reads up to {ddl.SCHEMA_VERSION}",
            hint="upgrade semsearch (pip install -U semsearch)",
        )


def _read_only_media(path: str) -> bool:
    """True when ``path`` is in a folder this process cannot write and no writer has it open.

    SQLite reads a WAL-mode file only through its ``-shm`` file, which it cannot create there;
    such a file is opened ``immutable`` instead (no locks, no ``-shm``). Without a ``-shm``
    file no connection is using the index, and none can start writing in that folder.
    """
    folder = os.path.dirname(os.path.abspath(path))
    return (
        path != ":memory:"
        and os.path.isfile(path)
        and not os.path.exists(path + "-shm")
        and not os.access(folder, os.W_OK)
    )


def _immutable_uri(path: str) -> str:
    return f"file:{quote(os.path.abspath(path))}?mode=ro&immutable=1"


_NOT_INDEX_HINT = "the file was left untouched; choose another path ending in .embed.db"
