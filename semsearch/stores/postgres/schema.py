"""The PostgreSQL layout: numbered migrations and per-collection DDL.

Global tables (created by migration 1): ``semsearch_meta``, ``semsearch_collections`` and
``semsearch_migrations``. Each collection gets tables named from its integer id:

- ``semsearch_c<id>_records``: ``rid`` (bigserial), ``id`` (text, unique), ``fields`` (json:
  the text as written, as jsonb would turn 1e20 into an integer and -0.0 into 0; tables made
  before this version keep jsonb),
  ``text``, ``content_hash``, ``updated_at``, and one typed column ``f_<name>`` per declared
  field with a B-tree index (``list[str]`` fields are ``text[]`` with a GIN index);
- ``semsearch_c<id>_chunks``: chunk text, offsets, heading path (jsonb), ``content_hash``,
  ``embedding vector(dim)`` and ``status`` (pending/embedded/failed); an HNSW index
  (``vector_cosine_ops``) on ``embedding`` is built once the dimension is known (the first
  vectors fix it). Collections made before the BM25 tables also have ``tsv``, a generated
  ``tsvector`` column with a GIN index, until ``semsearch compact`` drops it;
- the BM25 tables of keyword search, ``semsearch_c<id>_kw_*``
  (:mod:`semsearch.stores.postgres.bm25_index`).

Migrations run only on write paths, each in its own transaction under an advisory lock, and are
recorded in ``semsearch_migrations``. Read paths never run DDL.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from semsearch.errors import BackendUnavailable, StoreCorrupted
from semsearch.schema import FieldType
from semsearch.stores.postgres.bm25_index import create_bm25_tables, drop_bm25_tables
from semsearch.stores.postgres.sql import COLUMN_TYPES, Tables, column
from semsearch.stores.postgres.windows import drop_window_table

__all__ = [
    "SCHEMA_VERSION",
    "add_field_columns",
    "create_collection_tables",
    "create_vector_index",
    "drop_collection_tables",
    "drop_old_keyword_index",
    "drop_vector_index",
    "migrate",
    "schema_version",
    "set_dimension",
]

_LOCK_KEY = 0x5E45E4  # advisory lock id that serialises semsearch migrations

_V1 = [
    "CREATE TABLE semsearch_meta (key text PRIMARY KEY, value text NOT NULL)",
    """CREATE TABLE semsearch_collections (
        id bigserial PRIMARY KEY,
        name text COLLATE "C" NOT NULL UNIQUE,
        schema text NOT NULL,
        model_id text NOT NULL,
        dim integer,
        options jsonb NOT NULL DEFAULT '{}',
        version bigint NOT NULL DEFAULT 0,
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz)""",
    "INSERT INTO semsearch_meta (key, value) VALUES ('format', 'semsearch')",
]

# 2: int8 sentence-window vectors (stores/window_blobs.py). Nothing is rewritten: blobs say
# their layout. The version stops an older semsearch, which reads float16 windows only.
_MIGRATIONS: list[tuple[int, list[str]]] = [(1, _V1), (2, [])]
SCHEMA_VERSION = _MIGRATIONS[-1][0]

_EXTENSION_HINT = (
    "install pgvector on the server (https://github.com/pgvector/pgvector#installation; managed "
    "services such as RDS, Cloud SQL, Azure and Supabase ship it), then run "
    "`CREATE EXTENSION vector;` in this database as a user allowed to create extensions"
)


def schema_version(conn: Any) -> int:
    """The applied schema version, 0 when semsearch has never written to this database."""
    row = conn.execute("SELECT to_regclass('semsearch_migrations') IS NOT NULL").fetchone()
    if not row[0]:
        return 0
    value = conn.execute("SELECT max(version) FROM semsearch_migrations").fetchone()[0]
    return int(value or 0)


def migrate(conn: Any) -> None:
    """Create the vector extension and apply pending migrations (write paths only).

    Raises:
        BackendUnavailable: pgvector is not installed, or the user may not create it.
        StoreCorrupted: the database was written by a newer semsearch.
    """
    import psycopg

    with conn.transaction():
        try:
            if not conn.execute("SELECT 1 FROM pg_extension WHERE extname = 'vector'").fetchone():
                conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
        except psycopg.Error as exc:
            raise BackendUnavailable(
                f"the pgvector extension is not available: {exc.diag.message_primary}",
                hint=_EXTENSION_HINT,
            ) from None
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (_LOCK_KEY,))
        conn.execute(
            "CREATE TABLE IF NOT EXISTS semsearch_migrations "
            "(version integer PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())"
        )
        current = schema_version(conn)
        if current > SCHEMA_VERSION:
            raise StoreCorrupted(
                f"this database uses semsearch format {current}; this semsearch reads up to "
                f"{SCHEMA_VERSION}",
                hint="upgrade semsearch (pip install -U semsearch)",
            )
    for version, statements in _MIGRATIONS:
        with conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (_LOCK_KEY,))
            if schema_version(conn) >= version:
                continue
            for statement in statements:
                conn.execute(statement)
            conn.execute("INSERT INTO semsearch_migrations (version) VALUES (%s)", (version,))


def create_collection_tables(
    conn: Any,
    t: Tables,
    fields: Sequence[tuple[str, FieldType]],
    dim: int | None,
    hnsw: dict[str, int],
) -> None:
    """Create a collection's records and chunks tables and their indexes (inside a transaction).

    With ``dim`` known, the vector column and HNSW index (``hnsw`` options) are made at once.
    """
    conn.execute(
        f"""CREATE TABLE {t.records} (
            rid bigserial PRIMARY KEY,
            id text COLLATE "C" NOT NULL UNIQUE,
            fields json NOT NULL,
            text text NOT NULL,
            content_hash text NOT NULL,
            updated_at timestamptz NOT NULL DEFAULT now())"""
    )
    conn.execute(
        f"""CREATE TABLE {t.chunks} (
            id bigserial PRIMARY KEY,
            record_rid bigint NOT NULL REFERENCES {t.records} (rid) ON DELETE CASCADE,
            ordinal integer NOT NULL,
            text text NOT NULL,
            char_start integer NOT NULL,
            char_end integer NOT NULL,
            heading_path jsonb NOT NULL DEFAULT '[]',
            line_start integer,
            line_end integer,
            content_hash text NOT NULL,
            embedding vector,
            status text NOT NULL DEFAULT 'pending'
                CHECK (status IN ('pending', 'embedded', 'failed')),
            error text)"""
    )
    conn.execute(f"CREATE INDEX {t.chunks}_record ON {t.chunks} (record_rid, ordinal)")
    conn.execute(
        f"CREATE INDEX {t.chunks}_hash ON {t.chunks} (content_hash) WHERE status = 'embedded'"
    )
    conn.execute(f"CREATE INDEX {t.chunks}_todo ON {t.chunks} (id) WHERE status <> 'embedded'")
    create_bm25_tables(conn, t)
    add_field_columns(conn, t, fields)
    if dim is not None:
        set_dimension(conn, t, dim, hnsw)


def add_field_columns(conn: Any, t: Tables, fields: Sequence[tuple[str, FieldType]]) -> None:
    """Add a typed column and an index for each declared field that has none yet."""
    for name, type_ in fields:
        col = column(name)
        conn.execute(
            f"ALTER TABLE {t.records} ADD COLUMN IF NOT EXISTS {col} {COLUMN_TYPES[type_]}"
        )
        method = "gin" if type_ == "list[str]" else "btree"
        conn.execute(
            f"CREATE INDEX IF NOT EXISTS {t.field_index(name)} ON {t.records} USING {method} ({col})"
        )


def set_dimension(conn: Any, t: Tables, dim: int, hnsw: dict[str, int]) -> None:
    """Fix the embedding column to ``vector(dim)`` and build the HNSW index (no vectors yet)."""
    conn.execute(f"ALTER TABLE {t.chunks} ALTER COLUMN embedding TYPE vector({int(dim)})")
    create_vector_index(conn, t, hnsw)


def create_vector_index(conn: Any, t: Tables, hnsw: dict[str, int]) -> None:
    """Build the HNSW index (cosine) with ``m`` and ``ef_construction`` (defaults 16 and 64).

    Defaults are pgvector's own (https://github.com/pgvector/pgvector#index-options).
    """
    m = int(hnsw.get("m", 16))
    ef = int(hnsw.get("ef_construction", 64))
    conn.execute(
        f"CREATE INDEX IF NOT EXISTS {t.hnsw} ON {t.chunks} USING hnsw "
        f"(embedding vector_cosine_ops) WITH (m = {m}, ef_construction = {ef})"
    )


def drop_vector_index(conn: Any, t: Tables) -> None:
    """Drop the HNSW index (searches scan exactly until it is rebuilt)."""
    conn.execute(f"DROP INDEX IF EXISTS {t.hnsw}")


def drop_old_keyword_index(conn: Any, t: Tables) -> bool:
    """Drop the ``tsv`` column (and with it its GIN index) that collections made before the
    BM25 tables ranked by; True when there was one. Locks the chunks table for a moment."""
    found = conn.execute(
        "SELECT 1 FROM pg_attribute WHERE attrelid = to_regclass(%s) AND attname = 'tsv' "
        "AND NOT attisdropped",
        (t.chunks,),
    ).fetchone()
    if found is not None:
        conn.execute(f"ALTER TABLE {t.chunks} DROP COLUMN tsv")
    return found is not None


def drop_collection_tables(conn: Any, t: Tables) -> None:
    """Drop a collection's tables (and with them every index on them)."""
    drop_window_table(conn, t)  # first: its trigger function hangs on the chunks table
    drop_bm25_tables(conn, t)
    conn.execute(f"DROP TABLE IF EXISTS {t.chunks}")
    conn.execute(f"DROP TABLE IF EXISTS {t.records}")
