"""Collection.search_by_vector: a caller's query vector, normalised; bad vectors change nothing
(fake embedder, real SQLite file). The every-store cases run in
tests/contract/test_async_api_fake_embedder.py."""

from __future__ import annotations

import numpy as np
import pytest

from semsearch.embedders.fake import FakeEmbedder
from semsearch.errors import DimensionMismatch, InvalidFilter, InvalidQuery

TEXTS = {"a": "red apple pie", "b": "blue ocean waves", "c": "green apple tart"}


@pytest.fixture
def coll(db):
    c = db.collection("v", embedder=FakeEmbedder(16))
    c.upsert([{"id": k, "text": v} for k, v in TEXTS.items()])
    return c


def test_scores_are_cosines_of_the_normalised_vector(coll) -> None:
    emb = FakeEmbedder(16)
    raw = emb.embed_query("apple") * 3.0 + 0.0  # any length: it is normalised
    unit = raw / np.linalg.norm(raw)
    # the SQLite store keeps float16 vectors: each document's, rounded, against the query
    docs = {
        k: emb.embed_documents([t])[0].astype(np.float16).astype(np.float32)
        for k, t in TEXTS.items()
    }
    expected = {k: float(d @ unit) for k, d in docs.items()}
    result = coll.search_by_vector(raw.tolist(), limit=3, min_score=None)
    assert result.mode == "semantic" and result.query == ""
    assert result.ids == sorted(expected, key=lambda k: -expected[k])
    for hit in result:
        assert hit.score == pytest.approx(expected[hit.id], abs=1e-5)


def test_default_threshold_is_the_models_and_applies(coll) -> None:
    vector = FakeEmbedder(16).embed_query(TEXTS["b"])
    result = coll.search_by_vector(vector)
    assert result.min_score == pytest.approx(0.3)
    assert all(h.score >= 0.3 for h in result) and result.ids[0] == "b"


@pytest.mark.parametrize(
    ("vector", "error"),
    [
        ([1.0] * 15, DimensionMismatch),
        ([0.0] * 16, InvalidQuery),
        ([float("nan")] * 16, InvalidQuery),
        ([[1.0] * 16], InvalidQuery),
        ("apple", InvalidQuery),
    ],
)
def test_bad_vectors_raise_and_leave_the_collection_unchanged(coll, vector, error) -> None:
    with pytest.raises(error):
        coll.search_by_vector(vector)
    assert coll.count() == 3


def test_where_is_checked(coll) -> None:
    with pytest.raises(InvalidFilter):
        coll.search_by_vector([1.0] * 16, where={"undeclared": 1})
