"""Read paths of the PostgreSQL store: records, chunks, counts and structured find.

Built on one primitive of :class:`~semsearch.stores.postgres.access.PostgresAccess`,
``_on(collection, sql, params)``, which runs a read query with ``{R}``/``{K}`` replaced by the
collection's records and chunks tables (and returns [] when the collection does not exist).
Read paths never run DDL.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from semsearch.chunking import embedding_text
from semsearch.filters import Filter
from semsearch.results import Chunk, Record
from semsearch.stores.base import PendingChunk, StoreStats
from semsearch.stores.postgres.access import PostgresAccess
from semsearch.stores.postgres.sql import order_by_sql, where_sql

__all__ = ["PostgresReads"]


class PostgresReads(PostgresAccess):
    """The Store protocol's read methods over :meth:`PostgresAccess._on`."""

    def collection_version(self, name: str) -> int | None:
        """The collection's change counter (bumped by every write), or None if it does not exist."""
        rows = self._on(None, "SELECT version FROM semsearch_collections WHERE name = %s", (name,))
        return int(rows[0][0]) if rows else None

    def record_hashes(self, collection: str, ids: Sequence[str]) -> dict[str, str]:
        """``{id: content_hash}`` for the ids that exist."""
        sql = "SELECT id, content_hash FROM {R} WHERE id = ANY(%s)"
        return {r[0]: r[1] for r in self._on(collection, sql, (list(ids),))} if ids else {}

    # -- reads --------------------------------------------------------------------------------

    def pending_chunks(
        self, collection: str, limit: int, where: Filter | None = None
    ) -> list[PendingChunk]:
        """Up to ``limit`` chunks without a vector, pending before failed, oldest first within
        each; ``where`` limits them to chunks of matching records."""
        sql, params = where_sql(where)
        rows = self._on(
            collection,
            "SELECT k.id, k.text, k.heading_path, r.id FROM {K} k JOIN {R} r "
            f"ON r.rid = k.record_rid WHERE k.status <> 'embedded' AND ({sql}) "
            "ORDER BY k.status = 'failed', k.id LIMIT %s",
            (*params, limit),
        )
        return [PendingChunk(int(r[0]), embedding_text(r[1], tuple(r[2])), r[3]) for r in rows]

    def get_records(self, collection: str, ids: Sequence[str]) -> list[Record]:
        """The records that exist among ``ids``, in the order asked."""
        sql = "SELECT id, fields, text FROM {R} WHERE id = ANY(%s)"
        rows = self._on(collection, sql, (list(ids),)) if ids else []
        by_id = {r[0]: Record(r[0], r[1], r[2]) for r in rows}
        return [by_id[i] for i in ids if i in by_id]

    def record_fields(self, collection: str, ids: Sequence[str]) -> dict[str, dict[str, Any]]:
        """``{id: fields}`` for the ids that exist."""
        return {r.id: r.fields for r in self.get_records(collection, ids)}

    def get_chunks(self, collection: str, chunk_ids: Sequence[int]) -> dict[int, Chunk]:
        """``{chunk_id: Chunk}`` for the ids that exist in this collection."""
        sql = f"SELECT {_CHUNK_COLUMNS} FROM {{K}} k WHERE k.id = ANY(%s)"
        rows = self._on(collection, sql, ([int(c) for c in chunk_ids],)) if chunk_ids else []
        return {int(r[0]): _chunk(r) for r in rows}

    def hit_rows(
        self, collection: str, chunk_ids: Sequence[int]
    ) -> dict[int, tuple[str, Chunk, dict[str, Any]]]:
        """``{chunk id: (record id, chunk, record fields)}`` for the chunks that exist, in one
        statement (:class:`~semsearch.stores.read_capabilities.HitReads`)."""
        sql = (
            f"SELECT {_CHUNK_COLUMNS}, r.id, r.fields FROM {{K}} k JOIN {{R}} r "
            "ON r.rid = k.record_rid WHERE k.id = ANY(%s)"
        )
        rows = self._on(collection, sql, ([int(c) for c in chunk_ids],)) if chunk_ids else []
        return {int(r[0]): (r[8], _chunk(r), r[9]) for r in rows}

    def list_ids(self, collection: str) -> list[str]:
        """Every record id in the collection, sorted (code-point order)."""
        return [r[0] for r in self._on(collection, "SELECT id FROM {R} ORDER BY id")]

    def count(self, collection: str) -> int:
        """Number of records."""
        rows = self._on(collection, "SELECT count(*) FROM {R}")
        return int(rows[0][0]) if rows else 0

    def stats(self, collection: str, where: Filter | None = None) -> StoreStats:
        """Record and chunk counts by embedding status, and the last write time (ISO 8601);
        ``where`` counts only matching records and their chunks."""
        sql, params = where_sql(where)
        rows = self._on(
            collection,
            "SELECT k.status, count(*) FROM {K} k JOIN {R} r ON r.rid = k.record_rid "
            f"WHERE ({sql}) GROUP BY k.status",
            params,
        )
        by_status = {r[0]: int(r[1]) for r in rows}
        records = self._on(collection, f"SELECT count(*) FROM {{R}} r WHERE ({sql})", params)
        sql = "SELECT updated_at FROM semsearch_collections WHERE name = %s"
        when = self._on(None, sql, (collection,))
        return StoreStats.from_status_counts(
            int(records[0][0]) if records else 0,
            by_status,
            when[0][0].isoformat(timespec="seconds") if when and when[0][0] else None,
        )

    def chunk_vectors(
        self, collection: str, ids: Sequence[str]
    ) -> dict[str, list[NDArray[np.float32] | None]]:
        """Stored vectors per record, by chunk ordinal (None where a chunk is not embedded)."""
        sql = (
            "SELECT r.id, CASE WHEN k.status = 'embedded' THEN k.embedding END FROM {K} k "
            "JOIN {R} r ON r.rid = k.record_rid WHERE r.id = ANY(%s) ORDER BY r.id, k.ordinal"
        )
        out: dict[str, list[NDArray[np.float32] | None]] = {}
        for rid, vector in self._on(collection, sql, (list(ids),)) if ids else []:
            out.setdefault(rid, []).append(
                None if vector is None else np.asarray(_plain(vector), np.float32)
            )
        return out

    def find(
        self,
        collection: str,
        where: Filter | None,
        limit: int,
        offset: int,
        order_by: Sequence[tuple[str, bool]],
    ) -> list[Record]:
        """Records matching ``where``, ordered by ``order_by`` then id."""
        sql, params = where_sql(where)
        rows = self._on(
            collection,
            f"SELECT r.id, r.fields, r.text FROM {{R}} r WHERE ({sql}) "
            f"{order_by_sql(order_by)} LIMIT %s OFFSET %s",
            (*params, limit, offset),
        )
        return [Record(r[0], r[1], r[2]) for r in rows]


#: A chunk's columns as :func:`_chunk` reads them (chunks table aliased ``k``).
_CHUNK_COLUMNS = (
    "k.id, k.text, k.ordinal, k.char_start, k.char_end, k.heading_path, k.line_start, k.line_end"
)


def _chunk(row: Sequence[Any]) -> Chunk:
    """A :class:`Chunk` from a row starting with :data:`_CHUNK_COLUMNS`."""
    return Chunk(row[1], row[2], row[3], row[4], tuple(row[5]), row[6], row[7])


def _plain(vector: Any) -> Any:
    """A pgvector ``Vector`` (psycopg with the pgvector adapter) as a numpy array; text and
    lists as they are."""
    to_numpy = getattr(vector, "to_numpy", None)
    return to_numpy() if callable(to_numpy) else vector
