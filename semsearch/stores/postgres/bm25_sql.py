"""Pure SQL builders for BM25 over records in PostgreSQL (tables: stores/postgres/bm25_index.py).

semsearch's BM25 (semsearch/keyword_query.py) of record ``d`` for clauses ``c``::

    score(d) = sum_c wi(c) * f(c, d) * (k1 + 1) / (f(c, d) + k1 * (1 - b + b * |d| / avgdl))

with ``wi(c) = w(c) * idf(N, n(c))`` computed by the caller from the statistics, ``f`` the
weighted frequency (``kw_terms.tf``, or a phrase's count from :func:`phrase_sql`) and ``|d|``
``kw_terms.len``. :func:`score_sql` is the one statement that scores, filters and orders (best
first, ties by record id). Values are bound parameters; only table names (from the integer
collection id), the compiled filter and the BM25 constants are inlined.
"""

from __future__ import annotations

from collections.abc import Sequence

from semsearch.keyword_query import K1, TITLE_WEIGHT, B
from semsearch.stores.postgres.sql import Tables

__all__ = ["phrase_sql", "score_sql"]


def _f8(value: float) -> str:
    """A float constant as a float8 literal (never ``numeric``)."""
    return f"{float(value)!r}::float8"


def phrase_sql(t: Tables, m: int) -> str:
    """Rows ``(rid, len, f)`` of every record holding a phrase of ``m`` >= 2 terms, ``f`` > 0
    its weighted count: occurrences of the terms at consecutive positions inside one column,
    TITLE_WEIGHT each in the title and 1 each in the body (FTS5's phrase rule; as
    :func:`semsearch.stores.record_terms.phrase_frequency`).

    Params: the phrase's terms 2..m, then its first term.
    """
    joins = " ".join(
        f"JOIN {t.kw_terms} a{i} ON a{i}.record_rid = a0.record_rid AND a{i}.term = %s"
        for i in range(1, m)
    )

    def count(column: str) -> str:
        follow = " AND ".join(f"p + {i} = ANY(a{i}.{column})" for i in range(1, m))
        return f"(SELECT count(*) FROM unnest(a0.{column}) AS x(p) WHERE {follow})"

    f = f"({_f8(TITLE_WEIGHT)} * {count('title_pos')} + {count('body_pos')})"
    return (
        f"SELECT rid, len, f FROM (SELECT a0.record_rid AS rid, a0.len, {f} AS f "
        f"FROM {t.kw_terms} a0 {joins} WHERE a0.term = %s) AS ph WHERE f > 0"
    )


def score_sql(t: Tables, phrases: Sequence[int], filtered: str | None) -> str:
    """The scoring statement: rows ``(record id, score, ords, fs, len, first chunk id)`` of the
    best records, best first, ties by record id; ``ords``/``fs`` are the clause ordinals a
    record holds and their ``f``, ascending by ordinal; ``first`` the record's first chunk
    (NULL for a record without chunks).

    Args:
        t: the collection's tables.
        phrases: the term count (>= 2) of each phrase clause, in the order of their params.
        filtered: the compiled ``where`` filter over ``records r``, or None (no filter: the
            top k are cut by score first and only they, and records tied with the k-th, are
            joined to their records).
    Params, in order: the single-term clauses as three arrays (terms text[], ordinals int[],
    wi float8[]); for each phrase its ordinal, its wi and :func:`phrase_sql`'s params; avgdl;
    the filter's params (``filtered``) or k - 1; then k.
    """
    branches = [
        f"SELECT k.record_rid AS rid, k.len, q.ord, q.wi, k.tf::float8 AS f FROM {t.kw_terms} k "
        "JOIN q ON k.term = q.term"
    ]
    branches += [
        f"SELECT rid, len, %s::int, %s::float8, f::float8 FROM ({phrase_sql(t, m)}) AS p{i}"
        for i, m in enumerate(phrases)
    ]
    norm = f"({_f8(K1)} * ({_f8(1.0 - B)} + {_f8(B)} * len / %s::float8))"
    part = f"wi * (f * {_f8(K1 + 1.0)} / (f + {norm}))"
    head = (
        "WITH q (term, ord, wi) AS (SELECT * FROM unnest(%s::text[], %s::int[], %s::float8[])), "
        f"hit AS ({' UNION ALL '.join(branches)}), "
        f"scored AS (SELECT rid, sum({part} ORDER BY ord) AS score, "
        "array_agg(ord ORDER BY ord) AS ords, array_agg(f ORDER BY ord) AS fs, max(len) AS len "
        "FROM hit GROUP BY rid)"
    )
    select = (
        "SELECT r.id, s.score, s.ords, s.fs, s.len, "
        f"(SELECT min(c.id) FROM {t.chunks} c WHERE c.record_rid = s.rid) "
        f"FROM scored s JOIN {t.records} r ON r.rid = s.rid"
    )
    if filtered is not None:
        return f"{head} {select} WHERE ({filtered}) ORDER BY s.score DESC, r.id LIMIT %s"
    return (
        f"{head}, cut AS (SELECT score FROM scored ORDER BY score DESC OFFSET %s LIMIT 1) "
        f"{select} WHERE s.score >= coalesce((SELECT score FROM cut), 0) "
        "ORDER BY s.score DESC, r.id LIMIT %s"
    )
