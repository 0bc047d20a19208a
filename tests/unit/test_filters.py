"""The where-filter language on the SQLite store: operators, errors, injection, the guarantee.

Plumbing tests with the deterministic fake embedder; expected ids are computed in the test from
the generated records, independently of the store.
"""

from __future__ import annotations

import pytest

import semsearch
from semsearch.filters import And, Compare, Not, Or, parse_filter
from semsearch.schema import Field, Schema
from semsearch.stores.sqlite.sql import compile_filter

SCHEMA = Schema(
    fields=(
        Field("level", "int"),
        Field("cr", "float"),
        Field("school", "str"),
        Field("ritual", "bool"),
        Field("classes", "list[str]"),
    ),
    text=("text",),
)
SCHOOLS = ["evocation", "abjuration", "necromancy"]
CLASSES = ["wizard", "cleric", "bard", "druid"]


def make_records(n: int) -> list[dict]:
    records = []
    for i in range(n):
        record = {
            "id": f"r{i:05d}",
            "text": f"arcane spell number {i} with {SCHOOLS[i % 3]} power",
            "level": i % 10,
            "cr": (i % 8) / 4,
            "school": SCHOOLS[i % 3],
            "ritual": i % 2 == 0,
            "classes": [CLASSES[i % 4], CLASSES[(i + 1) % 4]] if i % 5 else [],
        }
        if i % 7 == 0:
            del record["school"]  # absent field
        records.append(record)
    return records


RECORDS = make_records(200)


@pytest.fixture(scope="module")
def coll(tmp_path_factory: pytest.TempPathFactory) -> semsearch.Collection:
    db = semsearch.connect(tmp_path_factory.mktemp("f") / "f.embed.db")
    collection = db.collection("spells", schema=SCHEMA, embedder="fake:16")
    collection.upsert(RECORDS)
    return collection


def ids_where(pred) -> set[str]:
    return {r["id"] for r in RECORDS if pred(r)}


CASES = [
    ({"level": 3}, lambda r: r["level"] == 3),
    ({"level": {"$eq": 3}}, lambda r: r["level"] == 3),
    ({"level": {"$ne": 3}}, lambda r: r["level"] != 3),
    ({"level": {"$gt": 7}}, lambda r: r["level"] > 7),
    ({"level": {"$gte": 7}}, lambda r: r["level"] >= 7),
    ({"level": {"$lt": 2}}, lambda r: r["level"] < 2),
    ({"level": {"$lte": 2}}, lambda r: r["level"] <= 2),
    ({"level": {"$in": [1, 4]}}, lambda r: r["level"] in (1, 4)),
    ({"level": {"$nin": [1, 4]}}, lambda r: r["level"] not in (1, 4)),
    ({"level_min": 2, "level_max": 4}, lambda r: 2 <= r["level"] <= 4),
    ({"cr_max": 0.5}, lambda r: r["cr"] <= 0.5),
    ({"school": "necromancy"}, lambda r: r.get("school") == "necromancy"),
    ({"school": {"$ne": "necromancy"}}, lambda r: r.get("school") != "necromancy"),
    ({"school": {"$nin": ["necromancy"]}}, lambda r: r.get("school") != "necromancy"),
    ({"ritual": True}, lambda r: r["ritual"] is True),
    ({"classes": {"$contains": "bard"}}, lambda r: "bard" in r["classes"]),
    ({"classes": "bard"}, lambda r: "bard" in r["classes"]),
    (
        {"classes": {"$in": ["bard", "druid"]}},
        lambda r: bool({"bard", "druid"} & set(r["classes"])),
    ),
    ({"classes": {"$nin": ["bard"]}}, lambda r: "bard" not in r["classes"]),
    (
        {"$or": [{"level": 0}, {"school": "abjuration"}]},
        lambda r: r["level"] == 0 or r.get("school") == "abjuration",
    ),
    (
        {"$and": [{"level_min": 5}, {"ritual": False}]},
        lambda r: r["level"] >= 5 and not r["ritual"],
    ),
    ({"$not": {"school": "evocation"}}, lambda r: r.get("school") != "evocation"),
    ({"$not": {"level": {"$in": [1, 2, 3]}}}, lambda r: r["level"] not in (1, 2, 3)),
]


@pytest.mark.parametrize(("where", "pred"), CASES, ids=[str(w) for w, _ in CASES])
def test_find_matches_exactly_the_expected_records(coll, where, pred) -> None:
    found = {r.id for r in coll.find(where, limit=1000)}
    assert found == ids_where(pred)


def test_parse_builds_the_ast() -> None:
    ast = parse_filter(
        {"level_min": 2, "$or": [{"school": "x"}, {"$not": {"ritual": True}}]}, SCHEMA
    )
    assert ast == And(
        (
            Compare("level", "gte", 2, "int"),
            Or((Compare("school", "eq", "x", "str"), Not(Compare("ritual", "eq", True, "bool")))),
        )
    )
    assert parse_filter({}, SCHEMA) is None and parse_filter(None, SCHEMA) is None


@pytest.mark.parametrize(
    ("where", "names"),
    [
        ({"lvl": 3}, ["lvl", "level", "school"]),
        ({"level": {"$between": [1, 2]}}, ["$between", "$gte"]),
        ({"$xor": []}, ["$xor", "$and"]),
        ({"level": "three"}, ["level", "int"]),
        ({"school": {"$gt": 1}}, ["school", "str"]),
        ({"ritual": {"$gt": True}}, ["$gt", "bool"]),
        ({"level": {"$contains": 3}}, ["$contains", "list[str]"]),
        ({"level": {"$in": 3}}, ["$in", "list"]),
    ],
)
def test_bad_filters_name_the_bad_part_and_the_choices(where, names) -> None:
    with pytest.raises(semsearch.InvalidFilter) as info:
        parse_filter(where, SCHEMA)
    text = str(info.value)
    for name in names:
        assert name in text


@pytest.mark.parametrize(
    ("where", "hint"),
    [
        ({"level": 1.5}, "give an int value"),
        ({"cr": "high"}, 'give a float value (a number, or a fraction such as "1/4")'),
    ],
)
def test_type_hints_read_as_english(where, hint) -> None:
    with pytest.raises(semsearch.InvalidFilter) as info:
        parse_filter(where, SCHEMA)
    assert info.value.hint == hint


def test_values_are_bound_parameters_never_sql(coll) -> None:
    evil = 'x" OR 1=1 --'
    sql, params = compile_filter(parse_filter({"school": evil}, SCHEMA))  # type: ignore[arg-type]
    assert evil not in sql and params == [evil]
    assert coll.find({"school": evil}) == []
    assert coll.search("arcane spell", where={"school": evil}, min_score=None).hits == []
    assert coll.search("arcane spell", mode="keyword", where={"school": "' OR ''='"}).hits == []
    assert coll.count() == 200  # nothing broke


@pytest.mark.parametrize("mode", ["semantic", "keyword", "hybrid"])
@pytest.mark.parametrize(
    ("where", "pred"),
    [
        (
            {"level": 3, "ritual": False, "school": "evocation"},
            lambda r: r["level"] == 3 and not r["ritual"] and r.get("school") == "evocation",
        ),
        ({"level": 3}, lambda r: r["level"] == 3),
        ({"level_max": 8}, lambda r: r["level"] <= 8),
        ({"$not": {"level": 99}}, lambda r: True),
    ],
)
def test_filter_applies_before_ranking_and_never_under_returns(coll, mode, where, pred) -> None:
    matches = ids_where(pred)
    for limit in (5, 50):
        result = coll.search(
            "arcane spell power", mode=mode, limit=limit, where=where, min_score=None
        )
        assert len(result) == min(limit, len(matches)), (mode, where, limit)
        assert set(result.ids) <= matches


def test_empty_query_with_filter_is_structured(coll) -> None:
    result = coll.search("  ", where={"level": 9}, limit=100)
    assert result.mode == "structured"
    assert set(result.ids) == ids_where(lambda r: r["level"] == 9)
    assert all(hit.score == 0.0 for hit in result)


def test_find_orders_pages_and_validates(coll) -> None:
    page1 = coll.find({"level": 9}, limit=5, order_by="-cr")
    crs = [r.fields["cr"] for r in page1]
    assert crs == sorted(crs, reverse=True)
    everything = coll.find({"level": 9}, limit=100, order_by=["-cr"])
    assert [r.id for r in coll.find({"level": 9}, limit=5, offset=5, order_by="-cr")] == [
        r.id for r in everything[5:10]
    ]
    with pytest.raises(semsearch.InvalidFilter):
        coll.find(order_by="power")
    with pytest.raises(semsearch.InvalidQuery):
        coll.find(limit=0)


def test_filters_use_the_field_index(coll) -> None:
    import sqlite3

    sql, params = compile_filter(parse_filter({"level": 3}, SCHEMA))  # type: ignore[arg-type]
    conn = sqlite3.connect(coll.store.location)
    plan = conn.execute(
        f"EXPLAIN QUERY PLAN SELECT r.rowid FROM records r WHERE r.collection_id = 1 AND ({sql})",
        params,
    ).fetchall()
    assert any("attr_1_level" in row[-1] for row in plan), plan
