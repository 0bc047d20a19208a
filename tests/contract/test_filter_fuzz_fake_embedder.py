"""Fuzz the ``where`` language (issue 19, item 7): random filters, well-formed or not, through
``find`` and every search mode on every store of the contract suite (fake embedder): 400 on
SQLite, 100 on PostgreSQL and Milvus Lite (slower per query).

Every filter either runs or raises a SemsearchError (InvalidFilter for a bad one), never another
exception: before, 54 of 2,000 random filters crashed with a raw ``sqlite3.OperationalError``
(all an empty sub-filter such as ``{"$and": [{}]}``). Filters that run must also agree with the
language's laws: ``$not`` is the exact complement, ``{"$and": [{}, f]}`` is ``f``, and every
search mode returns only records ``find`` matches (semantic: exactly them).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import semsearch
from semsearch.collection import Collection
from semsearch.errors import InvalidFilter, SemsearchError

FIELDS = {"n": "int", "x": "float", "s": "str", "b": "bool", "tags": "list[str]"}
WORDS = ["red", "blue", "green"]


def _record(i: int) -> dict[str, Any]:
    """Record i; every third lacks ``s`` and every fourth lacks ``tags`` (absent fields)."""
    record: dict[str, Any] = {"id": f"r{i}", "text": f"lamp {WORDS[i % 3]}", "n": i,
                              "x": i / 2, "b": i % 2 == 0}  # fmt: skip
    if i % 3:
        record["s"] = WORDS[i % 3]
    if i % 4:
        record["tags"] = WORDS[: i % 4]
    return record


@pytest.fixture(scope="module")
def coll(module_store) -> Iterator[Collection]:
    """Twelve records r0..r11 (see _record), written once per backend."""
    with module_store.connect() as db:
        c = db.collection("fuzz", embedder="fake:16", schema=semsearch.Schema.from_types(FIELDS))
        c.upsert([_record(i) for i in range(12)])
        yield c


#: Random filters per backend.
EXAMPLES = {"sqlite": 400, "postgres": 100, "milvus": 100}


values = st.one_of(
    st.integers(-3, 14), st.floats(allow_nan=True, allow_infinity=True), st.booleans(),
    st.sampled_from([*WORDS, "", "zz"]), st.none(), st.lists(st.sampled_from(WORDS), max_size=3),
    st.just({}), st.integers(2**63 - 1, 2**64),
)  # fmt: skip
operators = st.sampled_from(
    ["$eq", "$ne", "$gt", "$gte", "$lt", "$lte", "$in", "$nin", "$contains", "$bad"]
)
keys = st.sampled_from([*FIELDS, "n_min", "x_max", "nope"])
leaf = st.one_of(
    st.dictionaries(keys, values, max_size=2),
    st.dictionaries(keys, st.dictionaries(operators, values, max_size=2), max_size=2),
)


def _extend(inner: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.one_of(
        st.builds(lambda v: {"$and": v}, st.lists(inner, max_size=3)),
        st.builds(lambda v: {"$or": v}, st.lists(inner, max_size=3)),
        st.builds(lambda v: {"$not": v}, inner),
        st.builds(lambda a, b: {**a, **b}, inner, inner),
        st.builds(lambda v: {"$and": v}, st.one_of(values, inner)),  # not a list
    )


filters = st.recursive(leaf, _extend, max_leaves=12)


def _find(coll: Collection, where: Any) -> set[str] | None:
    """The ids ``where`` matches, or None when it is refused (only SemsearchError allowed)."""
    try:
        return {r.id for r in coll.find(where, limit=100)}
    except SemsearchError:
        return None


def test_random_filters_run_or_raise_invalid_filter(coll: Collection, module_store) -> None:
    @settings(
        max_examples=EXAMPLES[module_store.backend],
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow],
        database=None,  # a stored example would replay on another backend's run
    )
    @given(where=filters)
    def check(where: Any) -> None:
        _check_one(coll, where)

    check()


def _check_one(coll: Collection, where: Any) -> None:
    every = {f"r{i}" for i in range(12)}
    found = _find(coll, where)
    for mode in ("semantic", "keyword", "hybrid"):
        try:
            result = coll.search("lamp", mode=mode, where=where, limit=100, min_score=None)
        except SemsearchError:
            assert found is None, f"{mode} refused a filter find ran"
            continue
        assert found is not None, f"{mode} ran a filter find refused"
        assert set(result.ids) <= found
        if mode == "semantic":
            assert set(result.ids) == found
    if found is None:
        with pytest.raises(SemsearchError):
            coll.find(where, limit=100)
        return
    assert _find(coll, {"$not": where}) == every - found  # exact complement
    assert _find(coll, {"$and": [{}, where]}) == found
    assert _find(coll, {"$or": [where, {"$not": {}}]}) == found


def test_a_bad_filter_is_invalid_filter_not_a_crash(coll: Collection) -> None:
    with pytest.raises(InvalidFilter):
        coll.find({"$and": [{}, {"nope": 1}]})
    with pytest.raises(InvalidFilter):
        coll.find({"$or": [{}, {"n": {"$contains": 1}}]})  # every branch is still checked
