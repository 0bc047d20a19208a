"""Bad input on every backend: model and dimension mismatch, bad filters, empty queries."""

from __future__ import annotations

import numpy as np
import pytest

from semsearch.embedders.fake import FakeEmbedder
from semsearch.errors import (
    BackendUnavailable,
    DimensionMismatch,
    IndexNotFound,
    InvalidFilter,
    InvalidQuery,
    InvalidRecord,
    ModelMismatch,
)
from tests.contract.helpers import spells
from tests.contract.spells import RECORDS, SCHEMA


class _LyingEmbedder(FakeEmbedder):
    """Claims the model id ``fake:32`` but returns 16-d vectors."""

    def __init__(self) -> None:
        super().__init__(16)
        self.model_id = "fake:32"


def test_model_mismatch_on_reopen(store) -> None:
    with store.connect() as db:
        spells(db)
    with store.connect() as db:
        with pytest.raises(ModelMismatch) as info:
            db.collection("spells", embedder=FakeEmbedder(16))
        assert "fake:32" in str(info.value) and info.value.hint
        assert db.collection("spells").count() == 7


def test_dimension_mismatch_on_reopen(store) -> None:
    with store.connect() as db:
        spells(db)
    with store.connect() as db, pytest.raises(DimensionMismatch):
        db.collection("spells", embedder=_LyingEmbedder())


def test_dimension_mismatch_at_write_writes_no_vector(database) -> None:
    coll = database.collection("dims", embedder=FakeEmbedder(32))
    coll.upsert([{"id": "a", "text": "alpha"}])
    pending = coll.upsert([{"id": "b", "text": "beta"}], embed=False)
    assert pending.chunks_pending == 1
    chunk_id = coll.store.pending_chunks("dims", 10)[0].chunk_id
    with pytest.raises(DimensionMismatch):
        coll.store.set_vectors("dims", [chunk_id], np.ones((1, 16), dtype=np.float32) / 4)
    stats = coll.stats()
    assert (stats.embedded, stats.pending, stats.dim) == (1, 1, 32)


@pytest.mark.parametrize("shape", [(1, 32), (3, 32), (32,)], ids=["too-few", "too-many", "1-d"])
def test_vectors_that_are_not_one_row_per_chunk_are_refused_and_write_nothing(
    database, shape: tuple[int, ...]
) -> None:
    coll = database.collection("rows", embedder=FakeEmbedder(32))
    coll.upsert([{"id": "a", "text": "alpha"}])
    coll.upsert([{"id": "b", "text": "beta"}, {"id": "c", "text": "gamma"}], embed=False)
    ids = [p.chunk_id for p in coll.store.pending_chunks("rows", 10)]
    assert len(ids) == 2
    with pytest.raises(DimensionMismatch) as info:
        coll.store.set_vectors("rows", ids, np.full(shape, 0.25, dtype=np.float32))
    expected = f"2 chunk ids but {shape[0]} vectors" if len(shape) == 2 else "shape (32,)"
    assert expected in str(info.value)
    assert info.value.hint and "nothing was written" in info.value.hint
    stats = coll.stats()
    assert (stats.embedded, stats.pending) == (1, 2)


def test_ragged_vector_rows_are_refused_and_write_nothing(database) -> None:
    coll = database.collection("rows", embedder=FakeEmbedder(32))
    coll.upsert([{"id": "b", "text": "beta"}, {"id": "c", "text": "gamma"}], embed=False)
    ids = [p.chunk_id for p in coll.store.pending_chunks("rows", 10)]
    with pytest.raises(DimensionMismatch, match="not a 2-d array of numbers") as info:
        coll.store.set_vectors("rows", ids, [[0.25] * 32, [0.25] * 31])  # type: ignore[arg-type]
    assert info.value.hint
    assert coll.stats().pending == 2


def test_vectors_given_as_lists_of_floats_are_stored_as_given(database) -> None:
    coll = database.collection("rows", embedder=FakeEmbedder(4))
    coll.upsert([{"id": "b", "text": "beta"}, {"id": "c", "text": "gamma"}], embed=False)
    pending = coll.store.pending_chunks("rows", 10)
    given = {"b": [1.0, 0.0, 0.0, 0.0], "c": [0.0, 0.6, 0.8, 0.0]}
    coll.store.set_vectors(
        "rows",
        [p.chunk_id for p in pending],
        [given[p.record_id] for p in pending],  # type: ignore[arg-type]
    )
    assert coll.stats().embedded == 2
    stored = coll.store.chunk_vectors("rows", ["b", "c"])
    for rid, vector in given.items():
        np.testing.assert_allclose(np.asarray(stored[rid][0], np.float32), vector, atol=1e-3)


def test_first_write_with_lying_embedder_is_refused_later(database) -> None:
    coll = database.collection("dims", embedder=FakeEmbedder(32))
    coll.upsert([{"id": "a", "text": "alpha"}])
    coll.embedder = _LyingEmbedder()
    with pytest.raises(DimensionMismatch):
        coll.upsert([{"id": "b", "text": "beta gamma"}])
    assert coll.stats().embedded == 1


@pytest.mark.parametrize(
    "where",
    [
        {"nope": 1},
        {"level": "three"},
        {"level": {"$regex": "x"}},
        {"classes": {"$gt": "a"}},
        {"level": {"$in": []}},
        {"$or": {"level": 1}},
        {"school": {"$contains": "evo"}},
    ],
    ids=str,
)
def test_bad_filter_raises_invalid_filter_with_hint(database, where) -> None:
    coll = spells(database)
    for call in (
        lambda: coll.find(where),
        lambda: coll.search("magic", where=where),
        lambda: coll.search("magic", mode="keyword", where=where),
        lambda: coll.search("magic", mode="hybrid", where=where),
    ):
        with pytest.raises(InvalidFilter) as info:
            call()
        assert info.value.hint


def test_empty_query_without_filter_lists_every_record_by_id(database) -> None:
    coll = spells(database)  # alarm cure detect fireball light note wish
    for mode in ("semantic", "keyword", "hybrid"):
        result = coll.search("   ", mode=mode, limit=3)
        assert (result.mode, result.ids) == ("structured", ["alarm", "cure", "detect"])
    assert coll.search("", limit=3, offset=3).ids == ["fireball", "light", "note"]
    assert coll.search("", offset=6).ids == ["wish"]


def test_empty_query_with_filter_lists_matching_records(database) -> None:
    coll = spells(database)
    result = coll.search("", where={"level": 1})
    assert result.mode == "structured"
    assert result.ids == ["alarm", "cure", "detect"]


@pytest.mark.parametrize("limit", [0, -1, 1001])
def test_bad_limit_is_refused(database, limit) -> None:
    coll = database.collection("spells", schema=SCHEMA, embedder=FakeEmbedder(32))
    with pytest.raises(InvalidQuery):
        coll.search("magic", limit=limit)


@pytest.mark.parametrize("mode", ["keyword", "semantic", "hybrid"])
def test_a_nul_in_a_query_is_invalid_query_on_every_store(database, mode) -> None:
    """PostgreSQL raised a raw psycopg.DataError; every store now refuses it alike."""
    coll = spells(database)
    with pytest.raises(InvalidQuery, match=r"query holds a NUL character .* at character 1"):
        coll.search("x\x00y", mode=mode)


def test_a_nul_in_a_record_id_is_invalid_record_and_nothing_is_written(database) -> None:
    coll = spells(database)
    with pytest.raises(InvalidRecord, match="record id holds a NUL character") as info:
        coll.upsert([{"id": "fresh", "text": "ok"}, {"id": "n\x00ul", "text": "t"}])
    assert "NUL" in str(info.value.hint)
    assert coll.count() == 7 and coll.get(["fresh"]) == []  # the good record was not written
    for call in (lambda: coll.get(["n\x00ul"]), lambda: coll.delete(["n\x00ul"])):
        with pytest.raises(InvalidQuery, match="an id holds a NUL character"):
            call()


def test_a_nul_in_a_filter_value_or_a_path_is_refused_alike_on_every_store(database) -> None:
    """PostgreSQL raised a raw psycopg.DataError for a NUL in a filter value; Milvus an
    InvalidFilter with a developer's hint for one in ``folder``; SQLite answered []."""
    coll = spells(database)
    for where in ({"school": "a\x00"}, {"classes": {"$contains": "\x00"}},
                  {"school": {"$in": ["abjuration", "x\x00"]}}):  # fmt: skip
        for verb, args in ((coll.find, ()), (coll.search, ("ward",)), (coll.delete_where, ())):
            with pytest.raises(InvalidFilter, match="NUL character") as info:
                verb(*args, where=where)
            assert "NUL" in str(info.value.hint)
    for mode in ("keyword", "semantic"):
        with pytest.raises(InvalidQuery, match="folder holds a NUL character"):
            coll.search("", folder="b\x00", mode=mode)
        with pytest.raises(InvalidQuery, match="exclude glob holds a NUL character"):
            coll.search("ward", exclude=["x\x00"], mode=mode)
    assert coll.count() == len(RECORDS)  # delete_where deleted nothing


def _every_verb(coll) -> dict[str, object]:
    """One call of each Collection verb, by name (reads, searches and writes)."""
    return {
        "count": lambda: coll.count(),
        "get": lambda: coll.get("alarm"),
        "ids": lambda: coll.ids(),
        "find": lambda: coll.find({"level": 1}),
        "stats": lambda: coll.stats(),
        "semantic": lambda: coll.search("magic", min_score=None),
        "keyword": lambda: coll.search("magic", mode="keyword"),
        "hybrid": lambda: coll.search("magic", mode="hybrid"),
        "upsert": lambda: coll.upsert([{"id": "new", "text": "x", "level": 1}]),
        "delete": lambda: coll.delete("alarm"),
        "reindex": lambda: coll.reindex(),
    }


def test_a_handle_used_after_close_raises_backend_unavailable_fake_embedder(store) -> None:
    db = store.connect()
    coll = spells(db)
    db.close()
    for verb, call in _every_verb(coll).items():
        with pytest.raises(BackendUnavailable) as info:
            call()
        assert "closed" in info.value.message, verb
        assert "semsearch.connect" in (info.value.hint or ""), verb
    for call in (db.collections, lambda: db.collection("spells"), lambda: db.drop_collection("x")):
        with pytest.raises(BackendUnavailable):
            call()
    db.close()  # closing twice is harmless
    with store.connect() as again:  # nothing was lost or written by the refused calls
        reopened = again.collection("spells")
        assert reopened.count() == len(RECORDS)
        assert reopened.get("new") == [] and reopened.get("alarm") != []


def test_a_handle_of_a_dropped_collection_raises_index_not_found_fake_embedder(database) -> None:
    coll = spells(database)
    other = database.collection("other", embedder=FakeEmbedder(32))
    other.upsert([{"id": "o", "text": "kept"}])
    assert database.drop_collection("spells") is True
    for verb, call in _every_verb(coll).items():
        with pytest.raises(IndexNotFound) as info:
            call()
        assert "dropped" in info.value.message, verb
        assert "db.collection('spells')" in (info.value.hint or ""), verb
    assert database.collections() == ["other"]  # the refused upsert created nothing
    assert other.get("o")[0].text == "kept"  # other handles keep working
    fresh = spells(database)  # the name can be created again; the old handle stays dead
    assert fresh.count() == len(RECORDS)
    with pytest.raises(IndexNotFound):
        coll.count()


def test_model_mismatch_refuses_semantic_but_not_keyword_search_fake_embedder(store) -> None:
    with store.connect() as db:
        spells(db)
    with store.connect() as db:
        coll = db.collection("spells", embedder=FakeEmbedder(16), strict_model=False)
        keyword = coll.search("flame", mode="keyword")
        assert keyword.mode == "keyword" and "fireball" in keyword.ids
        assert coll.count() == len(RECORDS) and coll.find({"level": 3})
        assert coll.stats().model_id == "fake:32"
        for call in (
            lambda: coll.search("fire"),
            lambda: coll.search("fire", mode="hybrid"),
            lambda: coll.search("fire", fallback="keyword"),
            lambda: coll.upsert([{"id": "new", "text": "x", "level": 1}]),
            lambda: coll.upsert([{"id": "new", "text": "y", "level": 1}], embed=False),
            lambda: coll.reindex(),
            lambda: coll.embed_pending(),
        ):
            with pytest.raises(ModelMismatch) as info:
                call()
            assert "fake:32" in info.value.message and "fake:16" in info.value.message
            assert info.value.hint
        assert coll.get("new") == [] and coll.count() == len(RECORDS)  # nothing was written
