"""Connections and table lookups of the PostgreSQL store, under its read and write methods.

:class:`PostgresAccess` holds the pool (:mod:`semsearch.stores.postgres.conn`) and gives the
methods above it three primitives: ``_write`` (one write transaction, migrating first if needed,
that bumps the collection's change counter), ``_on`` (a read query with ``{R}``/``{K}`` set to
a collection's records and chunks tables, [] when it does not exist) and the lookups of a
collection's tables. Read paths never run DDL (``_ready`` only checks the schema version).
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from typing import Any

from psycopg.errors import UndefinedTable

from semsearch.errors import StoreCorrupted
from semsearch.stores.postgres import schema as ddl
from semsearch.stores.postgres.conn import PgPool
from semsearch.stores.postgres.sql import Tables

__all__ = ["PostgresAccess"]


class PostgresAccess:
    """The pool and the query primitives under :class:`PostgresStore`.

    Args:
        url: a libpq URL or conninfo (see :class:`PostgresStore`).
        pool_size: most connections held open.
        timeout: seconds to wait for a connection.
    Raises:
        BackendUnavailable: psycopg is not installed, or the server refuses the connection or
            the credentials (the message never contains the password).
    """

    def __init__(self, url: str, *, pool_size: int = 4, timeout: float = 10.0) -> None:
        self._db = PgPool(url, pool_size, timeout)
        self.location = self._db.location
        self._migrated = False
        self._readable = False

    def _conn(self) -> AbstractContextManager[Any]:
        return self._db.connection()

    @contextmanager
    def _write(self, collection: str | None = None) -> Iterator[Any]:
        """One write transaction (migrating first if needed); bumps the change counter."""
        with self._conn() as conn:
            if not self._migrated:
                ddl.migrate(conn)
                self._db.register_vector(conn)
                self._migrated = True
            with conn.transaction():
                yield conn
                if collection is not None:
                    conn.execute(
                        "UPDATE semsearch_collections SET version = version + 1, "
                        "updated_at = now() WHERE name = %s",
                        (collection,),
                    )

    def _on(self, collection: str | None, sql: str, params: Sequence[Any] = ()) -> list[Any]:
        """Run a read query with ``{R}``/``{K}`` set to the collection's records/chunks tables.

        Returns [] when semsearch never wrote to this database or the collection does not exist.
        """
        with self._conn() as conn:
            if not self._ready(conn):
                return []
            if collection is not None:
                row = conn.execute(
                    "SELECT id FROM semsearch_collections WHERE name = %s", (collection,)
                ).fetchone()
                if row is None:
                    return []
                t = Tables(int(row[0]))
                sql = sql.format(R=t.records, K=t.chunks)
            try:
                rows: list[Any] = conn.execute(sql, params).fetchall()
            except UndefinedTable:  # dropped or swapped (reembed) since the lookup
                return []
            return rows

    def _ready(self, conn: Any) -> bool:
        """True once semsearch's tables exist (checked once, then cached); never runs DDL."""
        if self._migrated or self._readable:
            return True
        version = ddl.schema_version(conn)
        if version > ddl.SCHEMA_VERSION:
            raise StoreCorrupted(
                f"this database uses semsearch format {version}; this semsearch reads up to "
                f"{ddl.SCHEMA_VERSION}",
                hint="upgrade semsearch (pip install -U semsearch)",
            )
        self._readable = version > 0
        return self._readable

    def exists(self) -> bool:
        """True when the server is reachable and semsearch has written to this database."""
        with self._conn() as conn:
            return self._ready(conn)

    def close(self) -> None:
        """Close the pool; the store cannot be used afterwards."""
        self._db.close()

    def _tables(self, collection: str) -> tuple[Tables, int | None] | None:
        """(tables, dim) of ``collection``, or None when it does not exist (a read)."""
        sql = "SELECT id, dim FROM semsearch_collections WHERE name = %s"
        rows = self._on(None, sql, (collection,))
        return (Tables(int(rows[0][0])), rows[0][1]) if rows else None

    def _need_tables(self, conn: Any, collection: str) -> tuple[Tables, list[str], int | None]:
        """(tables, declared field names, dim) of ``collection``, its row locked for the
        write transaction ``conn`` is in; StoreCorrupted when it is gone."""
        row = conn.execute(
            "SELECT id, schema, dim FROM semsearch_collections WHERE name = %s FOR UPDATE",
            (collection,),
        ).fetchone()
        if row is None:
            raise StoreCorrupted(
                f"collection {collection!r} vanished", hint="reopen the collection"
            )
        fields = [f["name"] for f in json.loads(row[1])["fields"]]
        return Tables(int(row[0])), fields, row[2]
