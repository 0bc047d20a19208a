"""PostgreSQL + pgvector store: ``semsearch.connect("postgresql://user:pass@host/db")``.

psycopg 3 with a connection pool (psycopg_pool) and the pgvector adapter. Each collection has a
records table (declared fields as typed, indexed columns), a chunks table (``vector(dim)``
with an HNSW cosine index) and the BM25 tables of its keyword search; see
:mod:`semsearch.stores.postgres.schema` and :mod:`semsearch.stores.postgres.bm25_index`.
Vector queries use pgvector's iterative index scans (``hnsw.iterative_scan = relaxed_order``,
pgvector >= 0.8), re-order by exact distance, and fall back to an exact scan for selective
filters or whenever the index returns too few rows, so a filter never returns fewer than
min(k, matches) rows. Keyword search ranks whole records by BM25, as the SQLite store does
(stores/postgres/keyword.py). Every batch of writes is one transaction: records, chunks and
the keyword statistics together.

Connection errors raise BackendUnavailable; the password never appears in messages. Pooled
connections are checked before use, so the store survives a server restart between queries.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from semsearch.errors import InvalidQuery, InvalidRecord
from semsearch.filters import Filter
from semsearch.stores.base import (
    CollectionInfo,
    RecordWrite,
    ScoredChunk,
    WindowSet,
    WriteResult,
)
from semsearch.stores.postgres import schema as ddl
from semsearch.stores.postgres import windows as pg_windows
from semsearch.stores.postgres.bm25_index import (
    IndexRow,
    ensure_bm25,
    index_records,
    unindex_records,
)
from semsearch.stores.postgres.keyword import PostgresKeyword
from semsearch.stores.postgres.search import vector_scan
from semsearch.stores.postgres.sql import Tables, ef_search_for
from semsearch.stores.postgres.writes import write_batch
from semsearch.stores.query_rules import best_first, check_query_dim
from semsearch.stores.write_rules import check_vectors_dim, checked_vectors

__all__ = ["PostgresStore"]


class PostgresStore(PostgresKeyword):
    """A semsearch index in a PostgreSQL database with the pgvector extension.

    Args:
        url: a libpq URL or conninfo, e.g. ``postgresql://user:pass@host:5432/db?sslmode=require``.
        hnsw_m, hnsw_ef_construction: HNSW build parameters (pgvector's defaults 16 and 64).
        ef_search: minimum ``hnsw.ef_search`` per query (raised to k when k is larger; <= 1000).
        exact_below: filters matching fewer records than this are answered by an exact scan.
        pool_size: most connections held open (default 4).
        timeout: seconds to wait for a connection (default 10).
    Raises:
        BackendUnavailable: psycopg is not installed, or the server refuses the connection or the
            credentials (the message never contains the password).
    """

    def __init__(
        self,
        url: str,
        *,
        hnsw_m: int = 16,
        hnsw_ef_construction: int = 64,
        ef_search: int = 40,
        exact_below: int = 5000,
        pool_size: int = 4,
        timeout: float = 10.0,
    ) -> None:
        super().__init__(url, pool_size=pool_size, timeout=timeout)
        self.hnsw = {"m": hnsw_m, "ef_construction": hnsw_ef_construction}
        self.ef_search = ef_search
        self.exact_below = exact_below

    # -- collections --------------------------------------------------------------------------

    def get_collection(self, name: str) -> CollectionInfo | None:
        """The stored collection called ``name``, or None."""
        return next(iter(self._collections("WHERE name = %s", (name,))), None)

    def list_collections(self) -> list[CollectionInfo]:
        """Every collection in the database, by name."""
        return self._collections("ORDER BY name")

    def _collections(self, tail: str, params: Sequence[Any] = ()) -> list[CollectionInfo]:
        sql = "SELECT name, schema, model_id, dim, options, created_at FROM semsearch_collections "
        rows = self._on(None, sql + tail, params)
        return [
            CollectionInfo(r[0], r[1], r[2], r[3], dict(r[4]), r[5].isoformat() if r[5] else None)
            for r in rows
        ]

    def create_collection(self, info: CollectionInfo) -> None:
        """Create a collection with its tables, field indexes and keyword index.

        Raises:
            InvalidQuery: a keyword tokenizer other than ``porter`` was asked for (keyword
                search here ranks FTS5's ``porter`` terms; ``trigram`` substring matching has
                no equivalent).
        """
        tokenizer = info.options.get("keyword_tokenizer", "porter")
        if tokenizer != "porter":
            raise InvalidQuery(
                f"the PostgreSQL backend has no {tokenizer!r} keyword tokenizer",
                hint="use the default (porter) on PostgreSQL, or the SQLite store for trigram "
                "search",
            )
        fields = [(f["name"], f["type"]) for f in json.loads(info.schema_json)["fields"]]
        with self._write() as conn:
            cid = conn.execute(
                "INSERT INTO semsearch_collections (name, schema, model_id, dim, options) "
                "VALUES (%s, %s, %s, %s, %s::jsonb) RETURNING id",
                (info.name, info.schema_json, info.model_id, info.dim, json.dumps(info.options)),
            ).fetchone()[0]
            ddl.create_collection_tables(conn, Tables(int(cid)), fields, info.dim, self.hnsw)

    def update_collection(self, info: CollectionInfo) -> None:
        """Store a changed schema (added fields get columns) or the dimension."""
        fields = [(f["name"], f["type"]) for f in json.loads(info.schema_json)["fields"]]
        with self._write(info.name) as conn:
            t, _, dim = self._need_tables(conn, info.name)
            conn.execute(
                "UPDATE semsearch_collections SET schema = %s, dim = %s, options = %s::jsonb "
                "WHERE name = %s",
                (info.schema_json, info.dim, json.dumps(info.options), info.name),
            )
            ddl.add_field_columns(conn, t, fields)
            if dim is None and info.dim is not None:
                ddl.set_dimension(conn, t, info.dim, self.hnsw)

    def drop_collection(self, name: str) -> bool:
        """Delete a collection and everything in it. Returns False if it did not exist."""
        if self.get_collection(name) is None:
            return False
        with self._write() as conn:
            t, _, _ = self._need_tables(conn, name)
            ddl.drop_collection_tables(conn, t)
            conn.execute("DELETE FROM semsearch_collections WHERE name = %s", (name,))
        return True

    def replace_collection(
        self, target: str, source: str, expected_version: int | None = None
    ) -> bool:
        """In ONE transaction, drop ``target`` (if it exists) and rename ``source`` to ``target``.

        Tables are named by collection id, so the rename is one row update. With
        ``expected_version``, nothing changes and False is returned when ``target`` was
        written since (its change counter differs). Raises StoreCorrupted if ``source`` is gone.
        """
        with self._write() as conn:
            self._need_tables(conn, source)
            old = conn.execute(
                "SELECT id, version FROM semsearch_collections WHERE name = %s FOR UPDATE",
                (target,),
            ).fetchone()
            if expected_version is not None and (old is None or int(old[1]) != expected_version):
                return False
            if old is not None:
                ddl.drop_collection_tables(conn, Tables(int(old[0])))
                conn.execute("DELETE FROM semsearch_collections WHERE id = %s", (old[0],))
            conn.execute(
                "UPDATE semsearch_collections SET name = %s, version = version + 1, "
                "updated_at = now() WHERE name = %s",
                (target, source),
            )
        return True

    def rebuild_vector_index(self, collection: str, *, drop_only: bool = False) -> None:
        """Drop and rebuild a collection's HNSW index (e.g. after a bulk load, or new m), then
        refresh the planner's statistics (ANALYZE).

        ``drop_only=True`` drops it and leaves searches to exact scans until the next call;
        loading many vectors without the index and building it once is several times faster.
        """
        with self._write(collection) as conn:
            t, _, dim = self._need_tables(conn, collection)
            ddl.drop_vector_index(conn, t)
            if not drop_only and dim is not None:
                ddl.create_vector_index(conn, t, self.hnsw)
                conn.execute(f"ANALYZE {t.records}, {t.chunks}")  # fresh planner statistics

    def compact(self) -> tuple[int, int]:
        """``semsearch compact``: give every collection written by an earlier version its BM25
        tables (one transaction each: a crash leaves that collection as it was), drop the
        ``tsv`` column they ranked by, then VACUUM (ANALYZE) every collection's tables, so
        freed space is reused and the planner knows the tables. Safe while others search.

        Returns:
            (bytes before, bytes after) of semsearch's tables, indexes included.
        """
        before = self._size()
        for info in self.list_collections():
            with self._write() as conn:
                found = self._locked_tables(conn, info.name)
                if found is not None:
                    ensure_bm25(conn, found, self._count)
            with self._write() as conn:
                found = self._locked_tables(conn, info.name)
                if found is not None:
                    ddl.drop_old_keyword_index(conn, found)
            if found is not None:
                with self._conn() as conn:
                    for table in (found.records, found.chunks, found.kw_terms, found.kw_df):
                        conn.execute(f"VACUUM (ANALYZE) {table}")
        return before, self._size()

    def _locked_tables(self, conn: Any, collection: str) -> Tables | None:
        """``collection``'s tables with its row locked (as a write does), None when it is gone."""
        row = conn.execute(
            "SELECT id FROM semsearch_collections WHERE name = %s FOR UPDATE", (collection,)
        ).fetchone()
        return None if row is None else Tables(int(row[0]))

    def _size(self) -> int:
        """Bytes of semsearch's tables (with their indexes and TOAST) on the search path."""
        rows = self._on(
            None,
            "SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0) FROM pg_class c "
            "WHERE c.relkind = 'r' AND c.relname LIKE 'semsearch\\_%%' "
            "AND pg_table_is_visible(c.oid)",
        )
        return int(rows[0][0]) if rows else 0

    # -- writes -------------------------------------------------------------------------------

    def write_records(self, collection: str, records: Sequence[RecordWrite]) -> WriteResult:
        """Write records, chunks and keyword rows in one transaction, reusing vectors by hash."""
        import psycopg

        result = WriteResult()
        try:
            with self._write(collection) as conn:
                t, fields, _ = self._need_tables(conn, collection)
                ensure_bm25(conn, t, self._count)  # an older collection's first write
                with conn.cursor() as cur:
                    try:
                        changed = write_batch(cur, t, fields, records, result)
                        rows = [
                            IndexRow(rid, r.fields, r.text, [c.chunk.text for c in r.chunks])
                            for rid, r in changed
                        ]
                        index_records(cur, t, self._count(rows), [rid for rid, _ in changed])
                    except psycopg.errors.ProgramLimitExceeded as exc:  # an OperationalError
                        raise InvalidRecord(  # raised here, it is not taken for a lost server
                            "PostgreSQL refused a record of this batch: "
                            f"{str(exc).strip().splitlines()[0]}",
                            hint="a record id, declared str field or list[str] item is too long "
                            "for a PostgreSQL index (a btree entry holds at most 2,704 bytes); "
                            "shorten it; nothing was written",
                        ) from None
        except psycopg.DataError as exc:  # e.g. a NUL character, which text columns refuse
            raise InvalidRecord(
                f"PostgreSQL refused a record of this batch: {exc}",
                hint="remove NUL (\\x00) characters from texts and fields; nothing was written",
            ) from None
        return result

    def set_vectors(
        self, collection: str, chunk_ids: Sequence[int], vectors: NDArray[np.float32]
    ) -> None:
        """Store float32[n, dim] unit vectors; the first vectors fix the dimension.

        Raises:
            DimensionMismatch: ``vectors`` has another dimension than the collection, or is
                not one row per chunk id (nothing is written).
        """
        vectors = checked_vectors(collection, chunk_ids, vectors)
        if len(chunk_ids) == 0:
            return
        dim = int(vectors.shape[1])
        with self._write(collection) as conn:
            t, _, stored = self._need_tables(conn, collection)
            check_vectors_dim(collection, stored, dim)
            if stored is None:
                conn.execute(
                    "UPDATE semsearch_collections SET dim = %s WHERE name = %s", (dim, collection)
                )
                ddl.set_dimension(conn, t, dim, self.hnsw)
            rows = np.ascontiguousarray(vectors, dtype=np.float32)
            with conn.cursor() as cur:
                cur.executemany(
                    f"UPDATE {t.chunks} SET embedding = %s, status = 'embedded', error = NULL "
                    "WHERE id = %s",
                    [(rows[i], int(c)) for i, c in enumerate(chunk_ids)],
                )

    def set_windows(self, collection: str, windows: Mapping[int, WindowSet]) -> None:
        """Store chunks' sentence windows (see SentenceWindows); not a change of the index."""
        if windows:
            with self._write() as conn:
                pg_windows.write_windows(conn, self._need_tables(conn, collection)[0], windows)

    def window_vectors(self, collection: str, chunk_ids: Sequence[int]) -> dict[int, WindowSet]:
        """``{chunk id: WindowSet}`` of the chunks with windows (see SentenceWindows)."""
        found = self._tables(collection)
        ids = [int(c) for c in chunk_ids]
        if found is None or not ids:
            return {}
        return pg_windows.unpack_rows(self._on(None, pg_windows.read_sql(found[0]), (ids,)))

    def mark_failed(self, collection: str, chunk_ids: Sequence[int], error: str) -> None:
        """Record that embedding these chunks failed (they stay keyword-searchable)."""
        with self._write(collection) as conn:
            t, _, _ = self._need_tables(conn, collection)
            conn.execute(
                f"UPDATE {t.chunks} SET status = 'failed', error = %s WHERE id = ANY(%s)",
                (error[:500], [int(c) for c in chunk_ids]),
            )

    def delete_records(self, collection: str, ids: Sequence[str]) -> int:
        """Delete records with their chunks (cascade). Returns how many existed."""
        if not ids or self._tables(collection) is None:
            return 0
        with self._write(collection) as conn:
            t, _, _ = self._need_tables(conn, collection)
            ensure_bm25(conn, t, self._count)  # an older collection's first write
            rids = conn.execute(
                f"DELETE FROM {t.records} WHERE id = ANY(%s) RETURNING rid", (list(ids),)
            ).fetchall()
            with conn.cursor() as cur:
                unindex_records(cur, t, [int(r[0]) for r in rids])
            return len(rids)

    # -- queries ------------------------------------------------------------------------------

    def vector_search(
        self,
        collection: str,
        vector: NDArray[np.float32],
        k: int,
        where: Filter | None,
        exact: bool = False,
    ) -> list[ScoredChunk]:
        """Top-k chunks by cosine similarity in [-1, 1], best first, ties by record id.

        Uses the HNSW index with iterative scans; answers exactly when ``exact`` is set, when
        the filter matches fewer than ``exact_below`` records, or when the index returned fewer
        than min(k, matching chunks) rows.

        Raises:
            DimensionMismatch: ``vector`` has another dimension than the collection's vectors.
        """
        found = self._tables(collection)
        if found is None or found[1] is None or k <= 0:
            return []
        t, dim = found
        check_query_dim(collection, dim, vector)
        with self._conn() as conn:
            rows = vector_scan(
                conn, t, np.ascontiguousarray(vector, dtype=np.float32), k, where,
                ef=ef_search_for(k, self.ef_search), exact=exact, exact_below=self.exact_below,
            )  # fmt: skip
        return best_first(rows)
