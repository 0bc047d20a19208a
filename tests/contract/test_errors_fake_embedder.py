"""Bad input on every backend: model and dimension mismatch, bad filters, empty queries."""

from __future__ import annotations

import numpy as np
import pytest

from semsearch.embedders.fake import FakeEmbedder
from semsearch.errors import DimensionMismatch, InvalidFilter, InvalidQuery, ModelMismatch
from tests.contract.helpers import spells
from tests.contract.spells import SCHEMA


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


def test_empty_query_without_filter_is_refused(database) -> None:
    coll = spells(database)
    for mode in ("semantic", "keyword", "hybrid"):
        with pytest.raises(InvalidQuery):
            coll.search("   ", mode=mode)


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
