"""The PostgreSQL store's pure SQL builders (no server needed)."""

from __future__ import annotations

import pytest

from semsearch.filters import parse_filter
from semsearch.schema import Schema
from semsearch.stores.postgres.sql import (
    Tables,
    column,
    compile_filter,
    ef_search_for,
    order_by_sql,
    websearch_text,
)

SCHEMA = Schema.from_types({"level": "int", "school": "str", "tags": "list[str]"})


def _sql(where):
    return compile_filter(parse_filter(where, SCHEMA))


def test_scalar_comparisons_stay_plain_so_indexes_apply() -> None:
    assert _sql({"level": 3}) == ('r."f_level" = %s', [3])
    assert _sql({"level": {"$gte": 2}}) == ('r."f_level" >= %s', [2])
    assert _sql({"level": {"$ne": 2}}) == ('(r."f_level" IS NULL OR r."f_level" <> %s)', [2])
    assert _sql({"level": {"$in": [1, 2]}}) == ('r."f_level" IN (%s, %s)', [1, 2])
    assert _sql({"level": {"$nin": [1]}}) == (
        '(r."f_level" IS NULL OR r."f_level" NOT IN (%s))', [1])  # fmt: skip


def test_list_fields_use_array_overlap_for_the_gin_index() -> None:
    assert _sql({"tags": "a"}) == ('r."f_tags" && %s::text[]', [["a"]])
    assert _sql({"tags": {"$in": ["a", "b"]}})[1] == [["a", "b"]]
    assert _sql({"tags": {"$nin": ["a"]}})[0] == '(r."f_tags" && %s::text[]) IS NOT TRUE'


def test_not_is_the_complement_under_three_valued_logic() -> None:
    sql, params = _sql({"$or": [{"level": 1}, {"$not": {"school": "x"}}]})
    assert sql == '(r."f_level" = %s) OR ((r."f_school" = %s) IS NOT TRUE)'
    assert params == [1, "x"]


def test_hostile_values_only_ever_reach_parameters() -> None:
    evil = "x'); DROP TABLE semsearch_collections; --"
    sql, params = _sql({"school": evil, "tags": {"$in": [evil]}})
    assert evil not in sql and "DROP" not in sql
    assert params == [evil, [evil]]


def test_column_and_table_names_are_derived_from_checked_identifiers() -> None:
    assert column("level") == '"f_level"'
    with pytest.raises(ValueError):
        column('x"; DROP TABLE t; --')
    t = Tables(7)
    assert (t.records, t.chunks, t.hnsw) == (
        "semsearch_c7_records", "semsearch_c7_chunks", "semsearch_c7_hnsw")  # fmt: skip


def test_websearch_text_quotes_each_piece_and_ors_them() -> None:
    assert websearch_text("fire ball") == '"fire" or "ball"'
    assert websearch_text('ADR-0042 "quoted') == '"ADR-0042" or "quoted"'
    assert websearch_text("-not or") == '"-not" or "or"'
    assert websearch_text("fire fire") == '"fire"'
    assert websearch_text(' " ( ) ') is None
    assert websearch_text("") is None


def test_order_by_puts_absent_values_where_sqlite_does() -> None:
    assert order_by_sql([("level", False), ("school", True)]) == (
        'ORDER BY r."f_level" ASC NULLS FIRST, r."f_school" DESC NULLS LAST, r.id ASC'
    )
    assert order_by_sql([]) == "ORDER BY r.id ASC"


def test_ef_search_covers_k_within_pgvector_limits() -> None:
    assert ef_search_for(10) == 40
    assert ef_search_for(10, minimum=100) == 100
    assert ef_search_for(400) == 400
    assert ef_search_for(5000) == 1000
