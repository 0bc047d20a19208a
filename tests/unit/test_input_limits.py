"""Size and depth limits on records and filters, and numbers a store cannot bind.

Plumbing tests with the deterministic fake embedder (``fake:32``) on a real SQLite file: each
limit is refused with InvalidRecord/InvalidFilter before the store sees the input, nothing
stored changes, and input just inside the limit still works end to end.
"""

from __future__ import annotations

from typing import Any

import pytest

import semsearch
from semsearch.embedders.fake import FakeEmbedder
from semsearch.filters import MAX_FILTER_DEPTH, MAX_FILTER_LEAVES
from semsearch.validation import MAX_VALUE_DEPTH

FIELDS = {"price": "float", "popularity": "int", "tags": "list[str]"}


@pytest.fixture
def coll(db: semsearch.Database) -> semsearch.Collection:
    c = db.collection(
        "p", embedder=FakeEmbedder(dim=32), schema=semsearch.Schema.from_types(FIELDS)
    )
    c.upsert(
        [
            {"id": f"a/{i}", "text": f"item {i}", "price": float(i), "popularity": i, "tags": ["t"]}
            for i in range(5)
        ]
    )
    return c


def nested(levels: int, leaf: Any = "x") -> Any:
    for _ in range(levels):
        leaf = [leaf]
    return leaf


def test_fake_embedder_record_nested_at_the_limit_round_trips(coll: semsearch.Collection) -> None:
    coll.upsert([{"id": "deep", "text": "deep", "extra": nested(MAX_VALUE_DEPTH)}])
    assert coll.get("deep")[0].fields["extra"] == nested(MAX_VALUE_DEPTH)


@pytest.mark.parametrize("levels", [MAX_VALUE_DEPTH + 1, 900, 5000])
def test_fake_embedder_record_nested_too_deep_is_invalid_record(
    coll: semsearch.Collection, levels: int
) -> None:
    deep = {"id": "deep9", "name": "x", "extra": {"a": nested(levels)}}
    with pytest.raises(semsearch.InvalidRecord) as info:
        coll.upsert([{"id": "ok", "text": "fine"}, deep])
    assert "deep9" in info.value.message and "'extra'" in info.value.message
    assert str(MAX_VALUE_DEPTH) in info.value.message and info.value.hint
    assert coll.count() == 5  # nothing from the batch was written


def _chain(levels: int, op: str) -> dict[str, Any]:
    where: dict[str, Any] = {"price": 1}
    for _ in range(levels):
        where = {"$not": where} if op == "$not" else {op: [where]}
    return where


@pytest.mark.parametrize("op", ["$and", "$or", "$not"])
def test_fake_embedder_filter_at_the_depth_limit_runs(coll: semsearch.Collection, op: str) -> None:
    # the costliest shape measured: each level beside other conditions, plus a path scope
    where: dict[str, Any] = {"price": {"$ne": 1}}
    for _ in range(MAX_FILTER_DEPTH):
        inner = {"tags": {"$nin": ["z"]}, "price": {"$gt": -1}, **where}
        where = {"$not": inner} if op == "$not" else {op: [inner, {"price": 2}]}
    coll.find(where=where)
    coll.search("item", where=where, folder="a", include=["a/*", "a/?"], exclude=["a/b*"])


@pytest.mark.parametrize("levels", [MAX_FILTER_DEPTH + 1, 100, 400, 5000])
@pytest.mark.parametrize("op", ["$and", "$or", "$not"])
def test_fake_embedder_filter_nested_too_deep_is_invalid_filter(
    coll: semsearch.Collection, levels: int, op: str
) -> None:
    where = _chain(levels, op)
    for call in (lambda: coll.find(where=where), lambda: coll.search("item", where=where)):
        with pytest.raises(semsearch.InvalidFilter) as info:
            call()
        assert f"more than {MAX_FILTER_DEPTH} levels" in info.value.message
        assert info.value.hint


def test_fake_embedder_filter_with_too_many_conditions_is_invalid_filter(
    coll: semsearch.Collection,
) -> None:
    ok = {"$or": [{"price": {"$ne": float(i)}} for i in range(MAX_FILTER_LEAVES)]}
    assert len(coll.find(where=ok)) == 5  # every price differs from some listed one
    many = {"$or": [{"price": float(i)} for i in range(1000)]}
    too_many = {"$and": [ok, {"popularity": 1}]}
    for where in (many, too_many):
        with pytest.raises(semsearch.InvalidFilter) as info:
            coll.find(where=where)
        assert str(MAX_FILTER_LEAVES) in info.value.message and "$in" in (info.value.hint or "")


@pytest.mark.parametrize(
    "where",
    [
        {"popularity": {"$gt": 99999999999999999999999}},
        {"popularity": 2**63},
        {"popularity": {"$in": [1, -(2**63) - 1]}},
        {"popularity": 10**5000},
        {"price": 10**400},
    ],
)
def test_fake_embedder_int_outside_int64_is_invalid_filter(
    coll: semsearch.Collection, where: dict[str, Any]
) -> None:
    with pytest.raises(semsearch.InvalidFilter) as info:
        coll.find(where=where)
    assert "64-bit integer range" in info.value.message


def test_fake_embedder_int64_bounds_are_accepted(coll: semsearch.Collection) -> None:
    assert len(coll.find(where={"popularity": {"$lt": 2**63 - 1}})) == 5
    assert len(coll.find(where={"popularity": {"$gt": -(2**63)}})) == 5


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), float("-inf")])
def test_fake_embedder_nan_and_infinity_are_invalid_filter(
    coll: semsearch.Collection, bad: float
) -> None:
    for where in ({"price": bad}, {"price": {"$lt": bad}}, {"price": {"$in": [1.0, bad]}}):
        with pytest.raises(semsearch.InvalidFilter) as info:
            coll.find(where=where)
        assert "'price'" in info.value.message and "finite" in (info.value.hint or "")


# -- arguments of the wrong type name the argument, what was given and what is expected ------


@pytest.mark.parametrize(
    ("kwargs", "words"),
    [
        ({"embedder": 5}, ["embedder", "int", "spec string"]),
        ({"embedder": ["fake:32"]}, ["embedder", "list"]),
        ({"schema": "x"}, ["schema", "str", "Schema"]),
        ({"schema": {"price": "float"}}, ["schema", "dict"]),
    ],
)
def test_fake_embedder_collection_arguments_of_the_wrong_type(
    db: semsearch.Database, kwargs: dict[str, Any], words: list[str]
) -> None:
    with pytest.raises(semsearch.InvalidQuery) as info:
        db.collection("z", **kwargs)
    for word in words:
        assert word in info.value.message
    assert info.value.hint and db.collections() == []  # nothing was created


def test_fake_embedder_an_embedder_object_is_still_accepted(db: semsearch.Database) -> None:
    c = db.collection("z", embedder=FakeEmbedder(dim=8))
    assert c.upsert([{"id": "a", "text": "x"}]).added == 1


@pytest.mark.parametrize("types", [None, ["price"], {"price": 3}, {1: "int"}])
def test_schema_from_types_of_the_wrong_type_is_invalid_query(types: Any) -> None:
    with pytest.raises(semsearch.InvalidQuery) as info:
        semsearch.Schema.from_types(types)
    assert "types must map field names to type names" in info.value.message
    assert type(types).__name__ in info.value.message


def test_schema_text_as_one_str_is_one_path_and_other_types_are_refused() -> None:
    assert semsearch.Schema.from_types({}, text="name").text == ("name",)  # type: ignore[arg-type]
    with pytest.raises(semsearch.InvalidQuery):
        semsearch.Schema.from_types({}, text=5)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("option", "value", "expected"),
    [
        ("M", "32", "int"),
        ("M", True, "int"),
        ("ef_search", 64.0, "int"),
        ("merge_fraction", "0.1", "float"),
        ("storage", 8, "str"),
        ("persist", 1, "bool"),
    ],
)
def test_fake_embedder_ann_option_of_the_wrong_type_is_invalid_query(
    coll: semsearch.Collection, option: str, value: Any, expected: str
) -> None:
    from semsearch.ann.policy import configure_ann

    before = dict(coll.info.options)
    with pytest.raises(semsearch.InvalidQuery) as info:
        configure_ann(coll, **{option: value})
    assert info.value.message.startswith(f"ANN option {option} must be {expected}, got ")
    assert type(value).__name__ in info.value.message
    assert coll.info.options == before  # nothing stored
    assert configure_ann(coll, M=16, merge_fraction=1).M == 16  # an int is a valid float


@pytest.mark.parametrize("embed", ["no", 0, None])
def test_fake_embedder_upsert_embed_must_be_a_bool(coll: semsearch.Collection, embed: Any) -> None:
    with pytest.raises(semsearch.InvalidQuery) as info:
        coll.upsert([{"id": "new", "text": "x"}], embed=embed)
    assert "embed must be True or False" in info.value.message
    assert type(embed).__name__ in info.value.message
    assert coll.count() == 5


@pytest.mark.parametrize(
    ("make", "words"),
    [
        (lambda: semsearch.Schema(fields="x"), ["fields", "got str"]),  # type: ignore[arg-type]
        (lambda: semsearch.Schema(fields=[1]), ["fields", "list holding int"]),  # type: ignore[list-item]
        (lambda: semsearch.Schema(chunker="nope"), ["chunker", "'nope'"]),  # type: ignore[arg-type]
        (lambda: semsearch.Schema.from_types({}, chunker=5), ["chunker", "5"]),  # type: ignore[arg-type]
    ],
)
def test_schema_parts_of_the_wrong_type_are_invalid_query(make: Any, words: list[str]) -> None:
    with pytest.raises(semsearch.InvalidQuery) as info:
        make()
    for word in words:
        assert word in info.value.message


@pytest.mark.parametrize("flag", ["create", "strict_model"])
def test_fake_embedder_collection_flags_must_be_bools(db: semsearch.Database, flag: str) -> None:
    with pytest.raises(semsearch.InvalidQuery) as info:
        db.collection("z", embedder="fake:8", **{flag: "no"})
    assert f"{flag} must be True or False, got str" in info.value.message
    assert db.collections() == []


# -- issue 46, item 14: a value that is not JSON names its field as well as its record --------


@pytest.mark.parametrize(
    ("record", "field"),
    [
        ({"id": "n", "text": "t", "price": float("nan")}, "'price'"),  # a declared float field
        ({"id": "n", "text": "t", "rating": float("inf")}, "'rating'"),  # an undeclared one
        ({"id": "n", "text": "t", "stats": {"hp": 3, "ac": float("-inf")}}, "'stats.ac'"),
        ({"id": "n", "text": "t", "scores": [1.0, 2.0, float("nan")]}, "'scores[2]'"),
        ({"id": "n", "text": "t", "when": {1, 2}}, "'when'"),  # a set: not JSON either
    ],
)
def test_fake_embedder_non_json_value_names_the_record_and_the_field(
    coll: semsearch.Collection, record: dict[str, Any], field: str
) -> None:
    with pytest.raises(semsearch.InvalidRecord) as info:
        coll.upsert([{"id": "a/0", "text": "changed"}, record])
    message = info.value.message
    assert "'n'" in message, message  # the record
    assert f"field {field}" in message, message  # and the field, as a dotted path
    assert info.value.hint
    assert coll.get("a/0")[0].text == "item 0" and coll.count() == 5  # nothing was written
