"""Vector queries for the PostgreSQL store: HNSW with iterative scans, exact scans, counts.

pgvector (https://github.com/pgvector/pgvector#iterative-index-scans) applies a ``WHERE`` filter
after the HNSW index scan, so a filtered query at the default ``hnsw.ef_search`` can return far
fewer rows than asked. With ``hnsw.iterative_scan = relaxed_order`` (pgvector >= 0.8) the scan
continues until enough rows pass the filter (bounded by ``hnsw.max_scan_tuples``); rows may then
come slightly out of order, so they are materialised and re-ordered by exact distance, as the
pgvector README recommends. Callers fall back to :func:`exact_scan` when that is not enough.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

from semsearch.filters import Filter
from semsearch.stores.base import ScoredChunk
from semsearch.stores.postgres.sql import TS_CONFIG, Tables, where_sql
from semsearch.stores.query_rules import ScanRow, paged, scanned

__all__ = [
    "ann_scan",
    "ann_sql",
    "count_matches",
    "count_records",
    "exact_scan",
    "keyword_scan",
    "set_ann_options",
    "substring_scan",
    "vector_scan",
]


def vector_scan(
    conn: Any,
    t: Tables,
    vector: NDArray[np.float32],
    k: int,
    where: Filter | None,
    *,
    ef: int,
    exact: bool,
    exact_below: int,
) -> list[ScoredChunk]:
    """Top-k chunks by cosine similarity; min(k, matching chunks) rows whatever the filter.

    Exact scan when ``exact`` is set or the filter matches fewer than ``exact_below`` records
    (counted on the records table, through the field indexes); otherwise the HNSW index
    (iterative scan, ``hnsw.ef_search = ef``), falling back to an exact scan if the index
    returned fewer than min(k, matching chunks) rows.
    """
    if exact or (where is not None and count_records(conn, t, where, exact_below) < exact_below):
        return exact_scan(conn, t, vector, k, where)
    rows = ann_scan(conn, t, vector, k, where, ef)
    if len(rows) < k and len(rows) < count_matches(conn, t, where, k):
        return exact_scan(conn, t, vector, k, where)
    return rows


def count_records(conn: Any, t: Tables, where: Filter, cap: int) -> int:
    """How many records pass ``where``, counting at most ``cap`` (an index scan when it can)."""
    sql, params = where_sql(where)
    return _count_at_most(conn, f"SELECT 1 FROM {t.records} r WHERE {sql}", params, cap)


def ann_sql(t: Tables, filter_sql: str) -> str:
    """The HNSW query: params are (vector, *filter params, vector, k); rows (id, record id, score).

    The inner query is the index-ordered scan; ``MATERIALIZED`` plus ``ORDER BY distance + 0``
    re-orders the relaxed-order rows by exact distance without a second index scan.
    """
    return (
        f"WITH ann AS MATERIALIZED (SELECT k.id, r.id AS record_id, "
        f"k.embedding <=> %s AS distance FROM {t.chunks} k "
        f"JOIN {t.records} r ON r.rid = k.record_rid "
        f"WHERE k.embedding IS NOT NULL AND ({filter_sql}) ORDER BY k.embedding <=> %s LIMIT %s) "
        "SELECT id, record_id, 1 - distance FROM ann ORDER BY distance + 0, record_id"
    )


def set_ann_options(conn: Any, ef: int) -> None:
    """Set ``hnsw.ef_search`` and relaxed iterative scans for the current transaction."""
    conn.execute(
        "SELECT set_config('hnsw.ef_search', %s, true), "
        "set_config('hnsw.iterative_scan', 'relaxed_order', true)",
        (str(int(ef)),),
    )


def ann_scan(
    conn: Any, t: Tables, vector: NDArray[np.float32], k: int, where: Filter | None, ef: int
) -> list[ScoredChunk]:
    """Top-k by the HNSW index with an iterative scan; scores are cosine similarity in [-1, 1]."""
    sql, params = where_sql(where)
    with conn.transaction():
        set_ann_options(conn, ef)
        rows = conn.execute(ann_sql(t, sql), (vector, *params, vector, k)).fetchall()
    return [ScoredChunk(int(r[0]), r[1], float(r[2])) for r in rows]


def exact_scan(
    conn: Any, t: Tables, vector: NDArray[np.float32], k: int, where: Filter | None
) -> list[ScoredChunk]:
    """Exact top-k over every embedded chunk that passes ``where`` (the index is not used)."""
    sql, params = where_sql(where)
    rows = conn.execute(
        f"SELECT k.id, r.id, 1 - (k.embedding <=> %s) AS score FROM {t.chunks} k "
        f"JOIN {t.records} r ON r.rid = k.record_rid "
        f"WHERE k.embedding IS NOT NULL AND ({sql}) "
        "ORDER BY (k.embedding <=> %s) + 0, r.id, k.id LIMIT %s",
        (vector, *params, vector, k),
    ).fetchall()
    return [ScoredChunk(int(r[0]), r[1], float(r[2])) for r in rows]


def count_matches(conn: Any, t: Tables, where: Filter | None, cap: int) -> int:
    """How many embedded chunks pass ``where``, counting at most ``cap`` (cheap for big sets)."""
    sql, params = where_sql(where)
    rows = (
        f"SELECT 1 FROM {t.chunks} k JOIN {t.records} r ON r.rid = k.record_rid "
        f"WHERE k.embedding IS NOT NULL AND ({sql})"
    )
    return _count_at_most(conn, rows, params, cap)


def _count_at_most(conn: Any, rows_sql: str, params: list[Any], cap: int) -> int:
    """How many rows the query ``rows_sql`` (with ``params``) returns, counting at most ``cap``
    (``LIMIT`` inside the count, so a large set costs ``cap`` rows, not all of them)."""
    row = conn.execute(
        f"SELECT count(*) FROM ({rows_sql} LIMIT %s) AS s", (*params, int(cap))
    ).fetchone()
    return int(row[0])


def substring_scan(
    conn: Any, t: Tables, pieces: list[str], k: int, where: Filter | None, cap: int | None = None
) -> list[ScoredChunk]:
    """Top-k chunks containing any of ``pieces`` (casefolded), of the first ``cap`` found (None:
    all), scored by
    :func:`~semsearch.keyword_text.scan_score`, each with the share of the pieces it holds as
    its keyword evidence and coverage (:func:`~semsearch.stores.query_rules.scanned`)."""
    if not pieces:
        return []
    sql, params = where_sql(where)
    contains = " OR ".join("strpos(lower(k.text), %s) > 0" for _ in pieces)
    query = (
        f"SELECT k.id, r.id, k.ordinal, k.text FROM {t.chunks} k "
        f"JOIN {t.records} r ON r.rid = k.record_rid "
        f"WHERE k.id > %s AND ({contains}) AND ({sql}) ORDER BY k.id LIMIT %s"
    )

    def fetch(after: int, n: int) -> list[ScanRow]:
        found = conn.execute(query, (after, *pieces, *params, n)).fetchall()
        return [(int(r[0]), r[1], int(r[2]), r[3]) for r in found]

    return scanned(paged(fetch, cap), pieces, k)


def keyword_scan(
    conn: Any, t: Tables, query: str, k: int, where: Filter | None
) -> list[ScoredChunk]:
    """Top-k chunks matching ``websearch_to_tsquery(query)`` by ``ts_rank_cd`` (>= 0; not BM25).

    ``query`` is the output of :func:`semsearch.stores.postgres.sql.websearch_text`.
    """
    sql, params = where_sql(where)
    rows = conn.execute(
        f"SELECT k.id, r.id, ts_rank_cd(k.tsv, q.q) AS score FROM {t.chunks} k "
        f"JOIN {t.records} r ON r.rid = k.record_rid, "
        f"websearch_to_tsquery('{TS_CONFIG}', %s) AS q(q) "
        f"WHERE k.tsv @@ q.q AND ({sql}) ORDER BY score DESC, r.id, k.id LIMIT %s",
        (query, *params, k),
    ).fetchall()
    return [ScoredChunk(int(r[0]), r[1], float(r[2])) for r in rows]
