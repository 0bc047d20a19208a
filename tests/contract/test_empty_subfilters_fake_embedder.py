"""An empty object inside a filter matches everything, as a top-level ``{}`` does, on every
backend and through find and every search mode (issue 19, item 7; fake embedder).

Before the fix ``{"$and": [{}]}`` compiled to an empty SQL expression and crashed with a raw
``sqlite3.OperationalError``. Expected ids are worked out by hand from the five records
a/0..a/4 whose ``n`` field is their number.
"""

from __future__ import annotations

from typing import Any

import pytest

import semsearch
from semsearch.embedders.fake import FakeEmbedder

ALL = ["a/0", "a/1", "a/2", "a/3", "a/4"]

#: (filter, the ids it matches): {} is "every record", so $not {} is "no record".
CASES: list[tuple[dict[str, Any], list[str]]] = [
    ({"$and": [{}]}, ALL),
    ({"$or": [{}, {"n": 1}]}, ALL),
    ({"$not": {}}, []),
    ({"$and": [{}, {"n": 1}]}, ["a/1"]),
    ({"$or": [{"$not": {}}, {"n": 2}]}, ["a/2"]),
    ({"$not": {"$and": [{}, {}]}}, []),
    ({"$not": {"$not": {}}}, ALL),
    ({"n": {"$gte": 3}, "$and": [{}]}, ["a/3", "a/4"]),
    ({"$or": [{"$and": [{}]}, {"n": 9}]}, ALL),
]


@pytest.fixture(scope="module")
def coll(module_store):
    """Five records a/0..a/4, ``n`` equal to their number, all saying "lamp"; written once."""
    with module_store.connect() as db:
        c = db.collection(
            "empty", embedder=FakeEmbedder(dim=32), schema=semsearch.Schema.from_types({"n": "int"})
        )
        c.upsert([{"id": f"a/{i}", "text": f"lamp {i}", "n": i} for i in range(5)])
        yield c


@pytest.mark.parametrize("case", CASES, ids=lambda case: str(case[0]))
def test_find_treats_an_empty_subfilter_as_match_all(coll, case) -> None:
    where, expected = case
    assert sorted(r.id for r in coll.find(where, limit=100)) == expected


@pytest.mark.parametrize("mode", ["semantic", "keyword", "hybrid"])
@pytest.mark.parametrize("case", CASES, ids=lambda case: str(case[0]))
def test_every_search_mode_treats_an_empty_subfilter_as_match_all(coll, case, mode) -> None:
    where, expected = case
    result = coll.search("lamp", mode=mode, where=where, limit=100, min_score=None)
    assert sorted(result.ids) == expected


def test_count_of_an_empty_subfilter(coll) -> None:
    assert len(coll.find({"$and": [{}]}, limit=100)) == 5
    assert coll.find({"$not": {}}, limit=100) == []
