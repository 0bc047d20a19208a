"""Pure SQL builders for BM25 over records in PostgreSQL (tables: stores/postgres/bm25_index.py).

semsearch's BM25 (semsearch/keyword_query.py) of record ``d`` for clauses ``c``::

    score(d) = sum_c wi(c) * f(c, d) * (k1 + 1) / (f(c, d) + k1 * (1 - b + b * rel(|d|)))

``rel(|d|)`` the relative length ``r = |d| / avgdl`` up to LENGTH_KNEE (1.5), then
``1.5 * (1 + ln(r / 1.5))`` (keyword_query.relative_length: long notes do not sink),

with ``wi(c) = w(c) * idf(N, n(c))`` computed by the caller from the statistics, ``f`` the
weighted frequency (``kw_terms.tf``, or a phrase's count from :func:`phrase_sql`) and ``|d|``
``kw_terms.len``. :func:`score_sql` is the one statement that scores, filters and orders
(best first, ties by record id). Values are bound parameters; only table names (from the integer
collection id), the compiled filter and the BM25 constants are inlined.
"""

from __future__ import annotations

from collections.abc import Sequence

from semsearch.keyword_query import K1, LENGTH_KNEE, TITLE_WEIGHT, B
from semsearch.stores.postgres.sql import Tables

__all__ = ["phrase_sql", "ranked_sql", "score_sql", "statistics_sql"]


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


def statistics_sql(t: Tables, phrases: Sequence[int], scope: tuple[str, str] | None) -> str:
    """The statement that reads BM25's statistics for a query: one row ``(N, total length,
    chunks, chunks' total length, n(q) of each single term in order, chunks holding each
    single term, n(q) of each phrase, generation)``; the generation, the ``kw_stats`` row's
    ``xmin`` and ``ctid``, changes with every write to the collection's postings
    (stores/postgres/postings_cache.py), NULL when scoped.

    Args:
        t: the collection's tables.
        phrases: the term count (>= 2) of each phrase clause.
        scope: None for the collection's statistics; else one filter compiled twice, for
            ``records r`` and for ``records s`` (``where_sql(where, "r")``, ``(..., "s")``):
            N, the lengths and the n(q) of terms are then counted over the records it allows
            (chunk counts 0, phrases not counted: scoped searches score terms only).
    Params, in order: unscoped, the single terms (text[]) twice, then for each phrase its
    distinct terms (text[]), their number and its :func:`phrase_sql` params; scoped, the ``s`` filter's params, the single terms, then the
    ``r`` filter's params.
    """
    terms = "unnest(%s::text[]) WITH ORDINALITY AS u(term, i)"
    if scope is None:
        # a phrase one of whose words no record holds is held by none: skip reading the
        # postings of its other words (a phrase such as "4-PBA" read all 18,592 of "4")
        counted = [
            f"(CASE WHEN (SELECT count(*) FROM {t.kw_df} WHERE term = ANY(%s::text[])) = %s "
            f"THEN (SELECT count(*) FROM ({phrase_sql(t, m)}) AS p{i}) ELSE 0 END)"
            for i, m in enumerate(phrases)
        ]
        per_term = [
            f"ARRAY(SELECT coalesce((SELECT d.{column} FROM {t.kw_df} d WHERE d.term = u.term), 0) "
            f"FROM {terms} ORDER BY u.i)"
            for column in ("df", "chunk_df")
        ]
        return (
            f"SELECT st.records, st.len, st.chunks, st.chunk_len, {', '.join(per_term)}, "
            f"ARRAY[{', '.join(counted)}]::bigint[], st.xmin::text || '/' || st.ctid::text "
            f"FROM {t.kw_stats} st"
        )
    r_filter, s_filter = scope
    return (
        "SELECT count(*), coalesce(sum(d.len), 0), 0, 0, "
        f"ARRAY(SELECT (SELECT count(*) FROM {t.kw_terms} k JOIN {t.records} s "
        f"ON s.rid = k.record_rid WHERE k.term = u.term AND ({s_filter})) FROM {terms} "
        "ORDER BY u.i), ARRAY[]::bigint[], ARRAY[]::bigint[], NULL "
        f"FROM {t.records} r LEFT JOIN {t.kw_docs} d ON d.record_rid = r.rid WHERE ({r_filter})"
    )


def score_sql(t: Tables, phrases: Sequence[int], filtered: str | None, texts: bool) -> str:
    """The scoring statement: rows ``(record id, score, evidence sum, coverage sum, chunk ids,
    chunk texts)`` of the k best records, best first, ties by record id. ``score`` is BM25,
    ``evidence sum`` the same sum with each clause's evidence weight ``ev`` in place of its
    ``wi`` and ``coverage sum`` the sum of ``ev`` over the clauses the record holds (the
    caller divides both by the reference); chunk ids ascending (empty for a record without
    chunks) and, with ``texts``, their texts (else NULL).

    Each record's sum runs over its rows in the order the plan produces them, term by term,
    the same order for every record, so records of equal statistics tie exactly.

    Args:
        t: the collection's tables.
        phrases: the term count (>= 2) of each phrase clause, in the order of their params.
        filtered: the compiled ``where`` filter over ``records r``, applied before the top k;
            None: the k best by score alone, with every record tied with the k-th (``FETCH
            FIRST k ROWS WITH TIES``), are the only ones joined to their records and ordered.
        texts: return the chunks' texts.
    Params, in order: the single-term clauses as three arrays (terms text[], wi float8[], ev
    float8[]); avgdl; for each phrase its wi, its ev and :func:`phrase_sql`'s params; k when
    not ``filtered``, else the filter's params; then k.
    """
    branches = [
        f"SELECT k.record_rid AS rid, k.len, q.wi, q.ev, k.tf::float8 AS f FROM {t.kw_terms} k "
        "JOIN q ON k.term = q.term"
    ]
    branches += [
        f"SELECT rid, len, %s::float8, %s::float8, f::float8 FROM ({phrase_sql(t, m)}) AS p{i}"
        for i, m in enumerate(phrases)
    ]
    knee = _f8(LENGTH_KNEE)
    r = "(len / a.avgdl)"
    rel = f"(CASE WHEN {r} <= {knee} THEN {r} ELSE {knee} * (1 + ln({r} / {knee})) END)"
    norm = f"({_f8(K1)} * ({_f8(1.0 - B)} + {_f8(B)} * {rel}))"
    part = f"(f * {_f8(K1 + 1.0)} / (f + {norm}))"
    scored = (
        f"SELECT rid, sum(wi * {part}) AS score, sum(ev * {part}) AS evidence, "
        f"sum(ev) AS coverage FROM ({' UNION ALL '.join(branches)}) AS hit, a GROUP BY rid"
    )
    if filtered is None:
        scored += " ORDER BY score DESC FETCH FIRST %s ROWS WITH TIES"
    return (
        "WITH q (term, wi, ev) AS (SELECT * FROM unnest(%s::text[], %s::float8[], %s::float8[])), "
        f"a (avgdl) AS (SELECT %s::float8) {_hits_sql(t, scored, filtered, texts)}"
    )


def ranked_sql(t: Tables, texts: bool) -> str:
    """The statement that names records scored elsewhere (in numpy: bm25_memory.py): rows as
    :func:`score_sql`'s, the k best by score, ties by record id.

    Params: rids (bigint[]), their scores, evidence sums and coverage sums (float8[] each),
    then k.
    """
    scored = (
        "SELECT * FROM unnest(%s::bigint[], %s::float8[], %s::float8[], %s::float8[]) "
        "AS u(rid, score, evidence, coverage)"
    )
    return _hits_sql(t, scored, None, texts)


def _hits_sql(t: Tables, scored: str, filtered: str | None, texts: bool) -> str:
    """The tail both statements share: rows ``(rid, score, evidence, coverage)`` of
    ``scored`` joined to their records, ``filtered``, the best first, ties by record id, each
    with its chunk ids (and with ``texts`` their texts); its last param is k."""
    of_record = f"FROM {t.chunks} c WHERE c.record_rid = s.rid ORDER BY c.id"
    texts_sql = f"ARRAY(SELECT c.text {of_record})" if texts else "NULL"
    return (
        f"SELECT r.id, s.score, s.evidence, s.coverage, ARRAY(SELECT c.id {of_record}), "
        f"{texts_sql} FROM ({scored}) AS s JOIN {t.records} r ON r.rid = s.rid "
        f"WHERE ({filtered or 'true'}) ORDER BY s.score DESC, r.id LIMIT %s"
    )
