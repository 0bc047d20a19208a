"""The filter compiler: expected expressions written by hand, and escaping against a real Milvus Lite.

The system semsearch replaces formatted values straight into Milvus expressions; these tests pin
down that a value holding quotes, backslashes, newlines or ``" or "`` stays one literal.
"""

from __future__ import annotations

import pytest

import semsearch
from semsearch.embedders.fake import FakeEmbedder
from semsearch.errors import InvalidFilter
from semsearch.filters import parse_filter
from semsearch.schema import Schema
from semsearch.stores.milvus.expr import compile_filter, literal

SCHEMA = Schema.from_types(
    {"level": "int", "school": "str", "weight": "float", "ritual": "bool", "classes": "list[str]"}
)


def _compile(where: dict) -> str:
    ast = parse_filter(where, SCHEMA)
    assert ast is not None
    return compile_filter(ast)


def test_literals_escape_quotes_backslashes_and_line_breaks() -> None:
    assert literal('a"b') == '"a\\"b"'
    assert literal("it's") == '"it\\\'s"'
    assert literal("back\\slash") == '"back\\\\slash"'
    assert literal("two\nlines\r\tx") == '"two\\nlines\\r\\tx"'
    assert literal('x" or "1" == "1') == '"x\\" or \\"1\\" == \\"1"'


def test_literals_for_numbers_and_booleans() -> None:
    assert literal(3) == "3"
    assert literal(-7) == "-7"
    assert literal(2.5) == "2.5"
    assert literal(True) == "true"
    assert literal(False) == "false"


@pytest.mark.parametrize("bad", [float("inf"), float("nan"), 2**63, None, b"x"])
def test_unwritable_values_are_refused(bad: object) -> None:
    with pytest.raises(InvalidFilter):
        literal(bad)


def test_comparisons_are_null_safe() -> None:
    assert _compile({"level": 3}) == "(f_level is not null and f_level == 3)"
    assert _compile({"level": {"$ne": 3}}) == "(f_level is null or f_level != 3)"
    assert _compile({"level_min": 2}) == "(f_level is not null and f_level >= 2)"
    assert _compile({"school": {"$in": ["a", "b"]}}) == (
        '(f_school is not null and f_school in ["a", "b"])'
    )
    assert _compile({"school": {"$nin": ["a"]}}) == '(f_school is null or f_school not in ["a"])'


def test_list_fields_use_array_functions() -> None:
    assert _compile({"classes": "Wizard"}) == (
        '(f_classes is not null and array_contains(f_classes, "Wizard"))'
    )
    assert _compile({"classes": {"$in": ["a", "b"]}}) == (
        '(f_classes is not null and array_contains_any(f_classes, ["a", "b"]))'
    )
    assert _compile({"classes": {"$nin": ["a"]}}) == (
        '(f_classes is null or not array_contains_any(f_classes, ["a"]))'
    )


def test_logical_operators_nest() -> None:
    where = {"$or": [{"level": 1}, {"$not": {"ritual": True}}], "weight": {"$lt": 2}}
    assert _compile(where) == (
        "(((f_level is not null and f_level == 1) or "
        "(not (f_ritual is not null and f_ritual == true))) and "
        "(f_weight is not null and f_weight < 2.0))"
    )


# -- against a real Milvus Lite ---------------------------------------------------------------

HOSTILE = [
    'evo" or f_school != "',
    "evo' or f_school != '",
    'x\\" or f_level >= 0 or f_school == \\"',
    "line\nbreak",
    "tab\tand back\\slash",
]


@pytest.fixture
def spells(mdb: semsearch.Database) -> semsearch.Collection:
    coll = mdb.collection("spells", schema=SCHEMA, embedder=FakeEmbedder(16))
    rows = [
        {"id": f"h{i}", "text": f"hostile {i}", "school": v, "level": i}
        for i, v in enumerate(HOSTILE)
    ]
    rows += [
        {"id": "plain", "text": "plain spell", "school": "evo", "level": 9, "classes": ["Wizard"]},
        {"id": "bare", "text": "bare spell"},
    ]
    coll.upsert(rows)
    return coll


def test_hostile_values_match_only_themselves(spells: semsearch.Collection) -> None:
    for i, value in enumerate(HOSTILE):
        assert [r.id for r in spells.find({"school": value})] == [f"h{i}"]
        assert [
            h.id
            for h in spells.search("spell hostile", where={"school": value}, min_score=None).hits
        ] == [f"h{i}"]
        assert [
            h.id for h in spells.search("hostile", mode="keyword", where={"school": value}).hits
        ] == [f"h{i}"]


def test_injection_attempt_does_not_widen_the_filter(spells: semsearch.Collection) -> None:
    # Formatted raw into `f_school == "<value>"`, this value would match every row with a school.
    assert spells.find({"school": 'nothing" or f_school != "'}) == []
    assert spells.find({"school": {"$in": ['a"] or f_level >= 0 or f_school in ["b']}}) == []


def test_not_is_the_exact_complement_with_absent_fields(spells: semsearch.Collection) -> None:
    every = set(spells.ids())
    level9 = {r.id for r in spells.find({"level": 9})}
    assert level9 == {"plain"}
    assert {r.id for r in spells.find({"$not": {"level": 9}})} == every - {"plain"}
    # "bare" has no classes and no school: $ne and $nin match it, as in MongoDB.
    assert {r.id for r in spells.find({"classes": {"$ne": "Wizard"}})} == every - {"plain"}
    assert "bare" in {r.id for r in spells.find({"school": {"$nin": ["evo"]}})}
    assert "bare" not in {r.id for r in spells.find({"school": {"$in": ["evo"]}})}
