"""A provider outage never loses a write: real SQLite file, OpenAI client, local fake API."""

from __future__ import annotations

import pytest

from semsearch.embedders.openai_provider import OpenAIEmbedder
from semsearch.embedders.retry import RetryPolicy
from semsearch.errors import EmbedderUnavailable, ModelMismatch
from tests.providers.conftest import OPENAI_KEY
from tests.providers.servers import Action

pytestmark = pytest.mark.usefixtures("keys")

RECORDS = [
    {"id": "a", "text": "apple pie recipe"},
    {"id": "b", "text": "bicycle repair guide"},
    {"id": "c", "text": "carrot soup with ginger"},
]
DOWN = Action(503, {"Retry-After": "0"}, {"error": {"message": f"overloaded {OPENAI_KEY}"}})


@pytest.fixture
def emb(openai_server, sleeps):
    policy = RetryPolicy(attempts=2, initial_wait=0.0, timeout=2.0, sleep=sleeps)
    return OpenAIEmbedder(
        "text-embedding-3-small", 8, base_url=openai_server.url + "/v1", policy=policy
    )


def test_outage_leaves_records_pending_then_reindex_embeds_them(db, emb, openai_server):
    coll = db.collection("notes", embedder=emb)
    openai_server.push(DOWN, DOWN)  # one embed call: first try + one retry
    report = coll.upsert(RECORDS)

    assert (report.added, report.chunks_embedded, report.chunks_failed) == (3, 0, 3)
    assert report.errors and OPENAI_KEY not in " ".join(report.errors)
    stats = coll.stats()  # tried and marked failed, counted so in both
    assert (stats.records, stats.embedded, stats.pending, stats.failed) == (3, 0, 0, 3)
    assert report.chunks_pending == 0
    assert [r.id for r in coll.get(["a", "b", "c"])] == ["a", "b", "c"]

    keyword = coll.search("bicycle", mode="keyword")
    assert keyword.ids == ["b"] and not keyword.degraded

    openai_server.push(DOWN, DOWN)
    hybrid = coll.search("carrot soup", mode="hybrid")
    assert hybrid.degraded and hybrid.ids == ["c"]
    assert "semantic leg missing" in (hybrid.degraded_reason or "")

    openai_server.push(DOWN, DOWN)
    with pytest.raises(EmbedderUnavailable) as info:
        coll.search("carrot soup", mode="semantic")
    assert OPENAI_KEY not in str(info.value)

    openai_server.push(DOWN, DOWN)
    fallback = coll.search("carrot soup", mode="semantic", fallback="keyword")
    assert fallback.degraded and fallback.ids == ["c"]

    done = coll.reindex()  # the API is back: unscripted requests succeed
    assert done.chunks_embedded == 3
    stats = coll.stats()
    assert (stats.embedded, stats.pending, stats.failed, stats.dim) == (3, 0, 0, 8)
    hit = coll.search("apple pie recipe", mode="semantic")[0]
    assert hit.id == "a" and hit.score == pytest.approx(1.0, abs=1e-5)  # same text, same vector


def test_model_and_dim_are_stored_and_enforced(db, emb, openai_server, monkeypatch):
    coll = db.collection("notes", embedder=emb)
    coll.upsert(RECORDS)
    info = db.store.get_collection("notes")
    assert (info.model_id, info.dim) == ("openai:text-embedding-3-small?dimensions=8", 8)

    with pytest.raises(ModelMismatch, match="text-embedding-3-small"):
        db.collection("notes", embedder="gemini:gemini-embedding-001?dimensions=8")
    with pytest.raises(ModelMismatch):
        db.collection("notes", embedder="openai:text-embedding-3-small")  # other dimensions

    monkeypatch.setenv("OPENAI_BASE_URL", openai_server.url + "/v1")
    reopened = db.collection("notes")  # the stored spec resolves to the same provider + model
    assert reopened.embedder.model_id == emb.model_id
    assert reopened.search("bicycle repair guide")[0].id == "b"


def test_wrong_dimension_stores_no_vector(db, emb, openai_server):
    coll = db.collection("notes", embedder=emb)
    openai_server.push(Action(dim=16))
    report = coll.upsert(RECORDS)  # reported like an outage, not raised half-applied
    assert any("16-d" in e for e in report.errors)
    assert (report.added, report.chunks_embedded, report.chunks_failed) == (3, 0, 3)
    stats = coll.stats()
    assert stats.embedded == 0 and stats.dim is None  # no vector of any size was written
    assert coll.count() == 3  # the records themselves are kept, pending
    assert coll.reindex().chunks_embedded == 3 and coll.stats().dim == 8


def test_long_records_are_chunked_to_the_window_before_sending(db, emb, openai_server):
    from semsearch.embedders.remote import approx_token_spans

    words = [f"word{i % 97} is number {i}." for i in range(3000)]  # ~15k estimated tokens
    text = " ".join(words)
    coll = db.collection("long", embedder=emb)
    report = coll.upsert([{"id": "long", "text": text}])

    inputs = [t for body in openai_server.bodies() for t in body["input"]]
    assert report.chunks_embedded == len(inputs) > 3
    assert all(len(approx_token_spans(t)) <= emb.max_tokens for t in inputs)
    assert "".join(inputs).replace(" ", "") == text.replace(" ", "")  # nothing dropped
