"""The on-disk layout of a ``*.embed.db`` file: numbered migrations and per-collection DDL.

Migrations run only on a write path, each in its own transaction, and are recorded in
``semsearch_migrations``. docs/storage.md documents the layout for users.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from semsearch.errors import StoreCorrupted
from semsearch.stores.fts5_tokens import PORTER
from semsearch.stores.sqlite.record_changes import create_record_log
from semsearch.stores.sqlite.record_fts import create_record_fts, record_fts_table
from semsearch.stores.sqlite.vector_blobs import migrate_to_float16
from semsearch.stores.sqlite.vector_blocks import migrate_to_blocks
from semsearch.stores.sqlite.windows import create_window_table

__all__ = [
    "DEFAULT_KEYWORD_TOKENIZER",
    "FORMAT_NAME",
    "KEYWORD_TOKENIZERS",
    "SCHEMA_VERSION",
    "create_collection_objects",
    "drop_collection_objects",
    "fts_table",
    "is_semsearch_file",
    "keyword_tokenizer",
    "migrate",
    "next_collection_id",
    "now",
    "optimize_keyword_indexes",
    "schema_version",
]

FORMAT_NAME = "semsearch"

_V1 = """
CREATE TABLE semsearch_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE collections (
    id INTEGER PRIMARY KEY,
    name TEXT NOT NULL UNIQUE,
    schema TEXT NOT NULL,
    model_id TEXT NOT NULL,
    dim INTEGER,
    options TEXT NOT NULL DEFAULT '{}',
    version INTEGER NOT NULL DEFAULT 0,   -- change counter: bumped by every write
    created_at TEXT NOT NULL,
    updated_at TEXT
);
CREATE TABLE records (
    rowid INTEGER PRIMARY KEY,
    collection_id INTEGER NOT NULL REFERENCES collections(id),
    id TEXT NOT NULL,
    fields TEXT NOT NULL,                 -- JSON object
    attrs TEXT NOT NULL,                  -- JSON object: declared, type-checked field values
    text TEXT NOT NULL,
    content_hash TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    UNIQUE (collection_id, id)
);
CREATE TABLE chunks (
    id INTEGER PRIMARY KEY,
    collection_id INTEGER NOT NULL REFERENCES collections(id),
    record_rowid INTEGER NOT NULL REFERENCES records(rowid),
    ordinal INTEGER NOT NULL,
    text TEXT NOT NULL,
    char_start INTEGER NOT NULL,
    char_end INTEGER NOT NULL,
    heading_path TEXT NOT NULL DEFAULT '[]',   -- JSON list of headings
    line_start INTEGER,
    line_end INTEGER,
    content_hash TEXT NOT NULL,                -- sha256 of the embedded text
    vector BLOB,  -- unit-normalised, little-endian: float32[dim], float16[dim] from format 4
    status TEXT NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'embedded', 'failed')),
    error TEXT
);
CREATE INDEX chunks_by_record ON chunks (record_rowid, ordinal);
CREATE INDEX chunks_by_hash ON chunks (collection_id, content_hash);
CREATE INDEX chunks_by_status ON chunks (collection_id, status);
CREATE TABLE changes (                         -- vector change log, for derived caches
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    collection_id INTEGER NOT NULL,
    chunk_id INTEGER NOT NULL,
    op TEXT NOT NULL CHECK (op IN ('add', 'delete'))
);
"""


def _v2_record_fts(conn: sqlite3.Connection) -> None:
    """Format 2: a record-level FTS5 table per collection (stores/sqlite/record_fts.py)."""
    for cid, options in conn.execute("SELECT id, options FROM collections").fetchall():
        tokenize = KEYWORD_TOKENIZERS[keyword_tokenizer(json.loads(options))]
        create_record_fts(conn, int(cid), tokenize)


_MIGRATIONS: list[tuple[int, Callable[[sqlite3.Connection], None]]] = [
    (1, lambda conn: _executescript(conn, _V1)),
    (2, _v2_record_fts),
    (3, create_window_table),  # sentence windows: stores/sqlite/windows.py
    (4, create_record_log),  # the keyword sidecar's change log: stores/sqlite/record_changes.py
    (5, migrate_to_float16),  # float16 chunk vectors: stores/sqlite/vector_blobs.py
    (6, migrate_to_blocks),  # chunk vectors packed in blocks: stores/sqlite/vector_blocks.py
    # int8 sentence-window vectors (stores/window_blobs.py). Nothing is rewritten: blobs say
    # their layout. The version stops an older semsearch, which reads float16 windows only.
    (7, lambda conn: None),
]
SCHEMA_VERSION = _MIGRATIONS[-1][0]


def _executescript(conn: sqlite3.Connection, script: str) -> None:
    for statement in script.split(";"):
        if statement.strip():
            conn.execute(statement)


def now() -> str:
    """The time stamps the file stores (``updated_at``, migrations): UTC ISO 8601, seconds."""
    return datetime.now(UTC).isoformat(timespec="seconds")


def is_semsearch_file(conn: sqlite3.Connection) -> bool:
    """True when the connected database carries semsearch's meta table and format marker."""
    row = conn.execute(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'semsearch_meta'"
    ).fetchone()
    if row is None:
        return False
    fmt = conn.execute("SELECT value FROM semsearch_meta WHERE key = 'format'").fetchone()
    return fmt is not None and fmt[0] == FORMAT_NAME


def schema_version(conn: sqlite3.Connection) -> int:
    """The file's applied schema version (0 for an empty database)."""
    row = conn.execute(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'semsearch_migrations'"
    ).fetchone()
    if row is None:
        return 0
    value = conn.execute("SELECT MAX(version) FROM semsearch_migrations").fetchone()[0]
    return int(value or 0)


def migrate(conn: sqlite3.Connection) -> None:
    """Apply every pending migration, each in its own transaction (write path only).

    Formats 5 (:func:`~semsearch.stores.sqlite.vector_blobs.migrate_to_float16`) and 6
    (:func:`~semsearch.stores.sqlite.vector_blocks.migrate_to_blocks`) commit their work in
    batches inside that transaction and are recorded after their last batch.
    """
    conn.execute(
        "CREATE TABLE IF NOT EXISTS semsearch_migrations "
        "(version INTEGER PRIMARY KEY, applied_at TEXT NOT NULL)"
    )
    current = schema_version(conn)
    for version, apply in _MIGRATIONS:
        if version <= current:
            continue
        conn.execute("BEGIN IMMEDIATE")
        try:
            if schema_version(conn) >= version:  # another process applied it meanwhile
                conn.execute("COMMIT")
                continue
            apply(conn)
            if version == 1:
                conn.execute(
                    "INSERT INTO semsearch_meta (key, value) VALUES ('format', ?), "
                    "('created_at', ?)",
                    (FORMAT_NAME, now()),
                )
            # OR IGNORE: a batched migration (5, 6) commits between batches, so another
            # writer may have finished it and recorded it meanwhile; its work is idempotent
            conn.execute(
                "INSERT OR IGNORE INTO semsearch_migrations (version, applied_at) VALUES (?, ?)",
                (version, now()),
            )
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise


def last_collection_id(conn: sqlite3.Connection) -> int:
    """The highest collection id this file has given (0 before the first)."""
    row = conn.execute(
        "SELECT max(COALESCE((SELECT CAST(value AS INTEGER) FROM semsearch_meta "
        "WHERE key = 'last_collection_id'), 0), COALESCE((SELECT MAX(id) FROM collections), 0))"
    ).fetchone()
    return int(row[0])


def next_collection_id(conn: sqlite3.Connection) -> int:
    """Inside a write transaction: an id no collection of this file has had, and record it.

    A dropped collection's id is never given again (SQLite would reuse the highest one), so
    caches keyed by id in any process (vectors, word counts) cannot mix an old collection's
    rows with a new one's. The high-water mark is kept in ``semsearch_meta``.
    """
    cid = last_collection_id(conn) + 1
    conn.execute(
        "INSERT INTO semsearch_meta (key, value) VALUES ('last_collection_id', ?) "
        "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
        (str(cid),),
    )
    return cid


def fts_table(collection_id: int) -> str:
    """Name of a collection's FTS5 table (ids are integers, so the name is safe to inline)."""
    return f"fts_{int(collection_id)}"


# porter over unicode61 with diacritics removed: English stemming, accent-insensitive.
FTS_TOKENIZER = PORTER

#: The keyword tokenizers a collection may choose, by the name kept in
#: ``CollectionInfo.options["keyword_tokenizer"]``, and their FTS5 ``tokenize=`` argument.
#: ``porter`` (the default) stems English words; ``trigram`` indexes every 3-character window,
#: so any substring of 3+ characters matches: use it for Chinese, Japanese or Korean text,
#: which has no spaces between words (SQLite >= 3.34).
KEYWORD_TOKENIZERS = {"porter": FTS_TOKENIZER, "trigram": "trigram"}
DEFAULT_KEYWORD_TOKENIZER = "porter"


def keyword_tokenizer(options: dict[str, Any]) -> str:
    """The keyword tokenizer named by a collection's options (default ``porter``).

    Raises:
        StoreCorrupted: the stored name is not one this version knows.
    """
    name = str(options.get("keyword_tokenizer") or DEFAULT_KEYWORD_TOKENIZER)
    if name not in KEYWORD_TOKENIZERS:
        raise StoreCorrupted(
            f"unknown keyword tokenizer {name!r} in the collection's options",
            hint=f"this semsearch knows: {', '.join(KEYWORD_TOKENIZERS)}; upgrade semsearch",
        )
    return name


def create_collection_objects(
    conn: sqlite3.Connection, collection_id: int, fields: list[str]
) -> None:
    """Create a collection's FTS5 tables (chunks and records) and one index per declared field.

    The FTS5 tokenizer comes from the collection row's ``options`` (see
    :data:`KEYWORD_TOKENIZERS`); it is fixed when the table is first created.
    """
    table = fts_table(collection_id)
    row = conn.execute("SELECT options FROM collections WHERE id = ?", (collection_id,)).fetchone()
    tokenize = KEYWORD_TOKENIZERS[keyword_tokenizer(json.loads(row[0]) if row else {})]
    conn.execute(
        f"CREATE VIRTUAL TABLE IF NOT EXISTS {table} USING fts5("
        f"text, content='chunks', content_rowid='id', tokenize='{tokenize}')"
    )
    create_record_fts(conn, collection_id, tokenize)
    for name in fields:
        conn.execute(
            f"CREATE INDEX IF NOT EXISTS attr_{int(collection_id)}_{name} ON records "
            f"(collection_id, json_extract(attrs, '$.{name}'))"
        )


def optimize_keyword_indexes(conn: sqlite3.Connection) -> None:
    """Inside a write transaction: FTS5 ``optimize`` on every collection's keyword tables, which
    merges their segments and drops the tombstones of deleted rows (``semsearch compact``)."""
    for (cid,) in conn.execute("SELECT id FROM collections").fetchall():
        tables = [fts_table(cid), record_fts_table(cid)]
        for table in tables:
            exists = conn.execute(
                "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (table,)
            ).fetchone()
            if exists:
                conn.execute(f"INSERT INTO {table} ({table}) VALUES ('optimize')")


def drop_collection_objects(
    conn: sqlite3.Connection, collection_id: int, fields: list[str]
) -> None:
    """Drop what :func:`create_collection_objects` made."""
    conn.execute(f"DROP TABLE IF EXISTS {fts_table(collection_id)}")
    conn.execute(f"DROP TABLE IF EXISTS {record_fts_table(collection_id)}")
    for name in fields:
        conn.execute(f"DROP INDEX IF EXISTS attr_{int(collection_id)}_{name}")
