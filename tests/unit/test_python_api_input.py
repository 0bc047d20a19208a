"""Python API arguments of the wrong type, and text that is not valid Unicode, are clear errors.

Plumbing tests with the deterministic fake embedder (``fake_embedder`` fixture, fake:32): each
bad call raises InvalidQuery or InvalidRecord naming the argument, the type received and the type
expected, and nothing stored changes.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

import semsearch
from semsearch.embedders.fake import FakeEmbedder
from semsearch.errors import BackendUnavailable, InvalidQuery, InvalidRecord

DOCS = [
    {"id": "a", "text": "the quick brown fox"},
    {"id": "b", "text": "a lazy dog sleeps"},
]


@pytest.fixture
def coll(db: semsearch.Database, fake_embedder: FakeEmbedder) -> semsearch.Collection:
    collection = db.collection("docs", embedder=fake_embedder)
    collection.upsert(DOCS)
    return collection


@pytest.mark.parametrize(
    ("kwargs", "names"),
    [
        ({"query": None}, ["query", "str", "NoneType"]),
        ({"query": b"fox"}, ["query", "str", "bytes"]),
        ({"limit": "5"}, ["limit", "int", "str"]),
        ({"limit": 2.0}, ["limit", "int", "float"]),
        ({"limit": True}, ["limit", "int", "bool"]),
        ({"min_score": "0.3"}, ["min_score", "number", "str"]),
        ({"min_score": True}, ["min_score", "number", "bool"]),
        ({"mode": None}, ["mode", "None", "semantic"]),
        ({"folder": 5}, ["folder", "str", "int"]),
        ({"exclude": "private/*"}, ["exclude", "list", "str"]),
        ({"include": [5]}, ["include", "str", "int"]),
        ({"hypothetical_answer": 5}, ["hypothetical_answer", "str", "int"]),
        ({"fallback": "semantic"}, ["fallback", "semantic", "keyword"]),
        ({"exact": "yes"}, ["exact", "bool", "str"]),
    ],
    ids=lambda v: str(v) if isinstance(v, dict) else "",
)
def test_search_argument_of_the_wrong_type_is_invalid_query_fake_embedder(
    coll: semsearch.Collection, kwargs: dict[str, Any], names: list[str]
) -> None:
    args = {"query": "fox", **kwargs}
    query = args.pop("query")
    with pytest.raises(InvalidQuery) as info:
        coll.search(query, **args)
    text = str(info.value)
    assert all(name in text for name in names), text
    assert info.value.hint


def test_numpy_and_int_min_scores_are_still_accepted_fake_embedder(
    coll: semsearch.Collection,
) -> None:
    import numpy as np

    as_numpy = coll.search("quick fox", min_score=np.float32(0.5))
    assert as_numpy.ids == coll.search("quick fox", min_score=0.5).ids
    assert all(h.score >= 0.5 for h in as_numpy.hits) and as_numpy.ids[0] == "a"
    assert coll.search("quick fox", min_score=0).ids == coll.search("quick fox", min_score=0.0).ids


@pytest.mark.parametrize(
    ("call", "names"),
    [
        (lambda c: c.get(None), ["ids", "NoneType"]),
        (lambda c: c.get([None]), ["ids", "str", "NoneType"]),
        (lambda c: c.get({"id": "a"}), ["ids", "dict"]),
        (lambda c: c.delete(3.5), ["ids", "float"]),
        (lambda c: c.find(limit="5"), ["limit", "int", "str"]),
        (lambda c: c.find(offset=None), ["offset", "int", "NoneType"]),
        (lambda c: c.find(order_by=5), ["order_by", "int"]),
    ],
    ids=[
        "get-None",
        "get-list-None",
        "get-dict",
        "delete-float",
        "find-limit",
        "find-offset",
        "order",
    ],
)
def test_get_delete_find_arguments_of_the_wrong_type_fake_embedder(
    coll: semsearch.Collection, call: Any, names: list[str]
) -> None:
    with pytest.raises(InvalidQuery) as info:
        call(coll)
    assert all(name in str(info.value) for name in names), str(info.value)
    assert coll.count() == 2  # a refused delete deleted nothing


def test_an_int_id_is_read_as_its_string_fake_embedder(coll: semsearch.Collection) -> None:
    coll.upsert([{"id": 7, "text": "seven"}])
    assert [r.id for r in coll.get(7)] == ["7"]


@pytest.mark.parametrize(
    ("value", "type_name"),
    [(b"bytes text", "bytes"), (True, "bool"), ({"a", "b"}, "set"), (float("nan"), "float")],
)
def test_upsert_text_of_the_wrong_type_is_invalid_record_fake_embedder(
    coll: semsearch.Collection, value: object, type_name: str
) -> None:
    with pytest.raises(InvalidRecord) as info:
        coll.upsert([{"id": "a", "text": "changed"}, {"id": "c", "text": value}])
    message = info.value.message
    assert "'c'" in message and "'text'" in message and type_name in message and "str" in message
    assert info.value.hint
    assert coll.get("a")[0].text == "the quick brown fox"  # nothing of the batch was written
    assert coll.count() == 2


def test_text_numbers_and_lists_are_still_rendered_fake_embedder(
    coll: semsearch.Collection,
) -> None:
    coll.upsert([{"id": "n", "text": 1984}, {"id": "l", "text": ["first part", "second part"]}])
    assert coll.get("n")[0].text == "1984"
    assert coll.get("l")[0].text == "first part\n\nsecond part"


def _file_digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.mark.parametrize(
    ("bad", "where"),
    [
        ({"id": "s", "text": "ok so far \ud800 then more"}, "field 'text' at character 10"),
        ({"id": "s", "text": "fine", "meta": {"tags": ["x", "\udfff"]}}, "'meta.tags[1]'"),
        ({"id": "s\udc00", "text": "fine"}, "record id"),
    ],
    ids=["text", "nested-field", "id"],
)
def test_a_lone_surrogate_is_invalid_record_and_the_file_is_unchanged_fake_embedder(
    db_path: Path, fake_embedder: FakeEmbedder, bad: dict[str, Any], where: str
) -> None:
    with semsearch.connect(db_path) as db:
        db.collection("docs", embedder=fake_embedder).upsert(DOCS)
    before = _file_digest(db_path)
    # json.loads makes such strings from an unpaired escape, as a JSON import would
    assert json.loads('"\\ud800"') == "\ud800"
    with semsearch.connect(db_path) as db:
        coll = db.collection("docs", embedder=fake_embedder)
        batch = [{"id": "a", "text": "an update"}, {"id": "new", "text": "new"}, bad]
        with pytest.raises(InvalidRecord) as info:
            coll.upsert(batch)
        assert where in info.value.message
        assert "surrogate" in info.value.message and "surrogate" in (info.value.hint or "")
        assert [r.text for r in coll.get(["a", "new"])] == ["the quick brown fox"]
    assert _file_digest(db_path) == before  # byte-for-byte: nothing of the batch was stored


@pytest.mark.parametrize("mode", ["semantic", "keyword", "hybrid"])
def test_a_query_with_a_lone_surrogate_is_invalid_query_fake_embedder(
    coll: semsearch.Collection, mode: str
) -> None:
    with pytest.raises(InvalidQuery) as info:
        coll.search("quick \ud800 fox", mode=mode)
    assert "query" in info.value.message and "character 6" in info.value.message
    with pytest.raises(InvalidQuery):
        coll.search("fox", mode=mode, hypothetical_answer="a \udbff")
    with pytest.raises(InvalidQuery):
        coll.get("a\ud800")


def test_a_closed_sqlite_store_never_reopens_the_file_fake_embedder(
    db_path: Path, fake_embedder: FakeEmbedder
) -> None:
    with semsearch.connect(db_path) as db:
        db.collection("docs", embedder=fake_embedder).upsert(DOCS)
    before = _file_digest(db_path)
    db = semsearch.connect(db_path)
    coll = db.collection("docs", embedder=fake_embedder)
    coll.store.close()  # closed under the Database, as the CLI does at the end of a command
    with pytest.raises(BackendUnavailable, match="closed"):
        coll.upsert([{"id": "c", "text": "written after close"}])
    with pytest.raises(BackendUnavailable, match="closed"):
        coll.count()
    assert _file_digest(db_path) == before


@pytest.mark.parametrize(
    ("where", "position"),
    [({"tag": "\ud800"}, 0), ({"tag": {"$in": ["ok", "no\udc00"]}}, 2), ({"tags": "x\ud800"}, 1)],
    ids=["eq", "in", "list-contains"],
)
def test_a_filter_value_with_a_lone_surrogate_is_invalid_filter_fake_embedder(
    db: semsearch.Database, fake_embedder: FakeEmbedder, where: dict[str, Any], position: int
) -> None:
    from semsearch.errors import InvalidFilter

    schema = semsearch.Schema.from_types({"tag": "str", "tags": "list[str]"})
    coll = db.collection("tagged", schema=schema, embedder=fake_embedder)
    coll.upsert([{"id": "a", "text": "fox", "tag": "ok", "tags": ["x"]}])
    for call in (lambda: coll.find(where), lambda: coll.search("fox", where=where)):
        with pytest.raises(InvalidFilter) as info:
            call()
        assert f"surrogate at character {position}" in info.value.message
        assert info.value.hint


def test_a_bad_offset_is_named_as_the_offset_fake_embedder(
    db: semsearch.Database, fake_embedder: FakeEmbedder
) -> None:
    """One message named both ("limit must be in [1, 1000] and offset >= 0") and hinted at
    the limit, so a bad offset read as a bad limit."""
    coll = db.collection("docs", embedder=fake_embedder)
    coll.upsert(DOCS)
    for call in (lambda: coll.find(offset=-3), lambda: coll.search("", offset=-3)):
        with pytest.raises(InvalidQuery) as info:
            call()
        assert "offset must be >= 0" in info.value.message and "limit" not in info.value.message
        assert "offset=0" in str(info.value.hint)
    with pytest.raises(InvalidQuery, match=r"limit must be in \[1, 10000\], got 0"):
        coll.find(limit=0)
