"""Filters at the documented limits run on every backend with the right answer (fake embedder):
``MAX_FILTER_DEPTH`` levels of the costliest shape with a path scope, ``MAX_FILTER_LEAVES``
conditions, and the ends of the 64-bit integer range."""

from __future__ import annotations

from typing import Any

import pytest

import semsearch
from semsearch.embedders.fake import FakeEmbedder
from semsearch.filters import MAX_FILTER_DEPTH, MAX_FILTER_LEAVES

FIELDS = {"price": "float", "popularity": "int", "tags": "list[str]"}


@pytest.fixture(scope="module")
def coll(module_store):
    """Five records a/0..a/4 with price and popularity equal to their number; written once."""
    with module_store.connect() as db:
        c = db.collection(
            "limits", embedder=FakeEmbedder(dim=32), schema=semsearch.Schema.from_types(FIELDS)
        )
        c.upsert(
            [
                {"id": f"a/{i}", "text": f"lamp {i}", "price": i, "popularity": i, "tags": ["t"]}
                for i in range(5)
            ]
        )
        yield c


def deep_not(levels: int, leaf: dict[str, Any]) -> dict[str, Any]:
    """``levels`` nested $not, each beside two conditions every record meets: NOT(true AND x)
    is NOT x, so an even number of levels means ``leaf``."""
    where = leaf
    for _ in range(levels):
        where = {"$not": {"price": {"$gt": -1}, "tags": {"$nin": ["zz"]}, **where}}
    return where


def test_deepest_allowed_filter_runs_with_a_path_scope(coll) -> None:
    assert MAX_FILTER_DEPTH % 2 == 0  # the expected ids below rely on an even depth
    where = deep_not(MAX_FILTER_DEPTH, {"popularity": {"$gte": 2}})
    assert sorted(r.id for r in coll.find(where)) == ["a/2", "a/3", "a/4"]
    result = coll.search(
        "lamp", where=where, folder="a", include=["a/*"], exclude=["a/4"], min_score=None
    )
    assert sorted(result.ids) == ["a/2", "a/3"]
    keyword = coll.search("lamp", mode="keyword", where=where, exclude=["a/4", "a/?x"])
    assert sorted(keyword.ids) == ["a/2", "a/3"]


def test_most_conditions_allowed_run(coll) -> None:
    where = {"$or": [{"price": float(v)} for v in range(3, 3 + MAX_FILTER_LEAVES)]}
    assert sorted(r.id for r in coll.find(where)) == ["a/3", "a/4"]
    result = coll.search("lamp", where=where, min_score=None, exclude=["a/4"])
    assert result.ids == ["a/3"]


def test_ends_of_the_int64_range_bind(coll) -> None:
    assert len(coll.find({"popularity": {"$lt": 2**63 - 1}})) == 5
    assert len(coll.find({"popularity": {"$gt": -(2**63)}})) == 5
    assert coll.find({"popularity": {"$in": [2**63 - 1, -(2**63), 1]}})[0].id == "a/1"
