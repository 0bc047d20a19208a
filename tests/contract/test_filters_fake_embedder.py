"""Every filter operator on every backend, through find and every search mode (fake embedder)."""

from __future__ import annotations

from typing import Any

import pytest

import semsearch
from tests.contract.helpers import spells
from tests.contract.spells import FILTER_CASES


def _ids(case: tuple[dict[str, Any], list[str]]) -> str:
    return str(case[0])


@pytest.fixture(scope="module")
def coll(module_store):
    """The spells collection, filled once per backend; the tests below only read it."""
    with module_store.connect() as db:
        yield spells(db)


@pytest.mark.parametrize("case", FILTER_CASES, ids=_ids)
def test_find_applies_every_operator(coll, case) -> None:
    where, expected = case
    assert [r.id for r in coll.find(where, limit=100)] == expected


@pytest.mark.parametrize("case", FILTER_CASES, ids=_ids)
def test_semantic_search_returns_exactly_the_matching_records(coll, case) -> None:
    where, expected = case
    result = coll.search("spell magic", where=where, limit=100, min_score=None)
    assert sorted(result.ids) == expected


@pytest.mark.parametrize("case", FILTER_CASES, ids=_ids)
def test_semantic_ann_path_agrees_with_exact_scan_under_filter(coll, case) -> None:
    where, _ = case
    ann = coll.search("a creature", where=where, limit=3, min_score=None)
    exact = coll.search("a creature", where=where, limit=3, min_score=None, exact=True)
    assert ann.ids == exact.ids
    assert [h.score for h in ann] == pytest.approx([h.score for h in exact], abs=1e-5)


def test_keyword_search_respects_filter(coll) -> None:
    # "evocation" spells: cure, fireball, light; of these only light's text says "light".
    result = coll.search("light flame", mode="keyword", where={"school": "evocation"})
    assert sorted(result.ids) == ["fireball", "light"]
    assert coll.search("ward", mode="keyword", where={"level": {"$gt": 1}}).ids == []


def test_hybrid_search_respects_filter(coll) -> None:
    result = coll.search("magic", mode="hybrid", where={"ritual": True}, limit=10)
    assert set(result.ids) <= {"alarm", "detect"}
    assert result.ids[0] == "detect"


def test_filter_on_field_added_later_matches_only_records_written_after(
    database: semsearch.Database,
) -> None:
    from semsearch.schema import Schema

    coll = spells(database)
    wider = Schema.from_types(
        {"level": "int", "school": "str", "ritual": "bool", "weight": "float",
         "classes": "list[str]", "range": "int"}
    )  # fmt: skip
    coll = database.collection("spells", schema=wider, embedder=coll.embedder)
    coll.upsert([{"id": "far", "text": "far sight", "range": 120}])
    assert [r.id for r in coll.find({"range": {"$gte": 100}})] == ["far"]
    assert len(coll.find({"range": {"$ne": 5}}, limit=100)) == 8
