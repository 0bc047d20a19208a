"""Gemini provider (google-genai) against a local fake of models/{m}:batchEmbedContents."""

from __future__ import annotations

import logging

import numpy as np
import pytest

from semsearch.embedders.gemini import GeminiEmbedder
from semsearch.embedders.registry import resolve_embedder
from semsearch.errors import DimensionMismatch, EmbedderUnavailable
from tests.providers.conftest import GEMINI_KEY
from tests.providers.servers import Action, raw_vector

pytestmark = pytest.mark.usefixtures("keys")

PATH = "/models/gemini-embedding-001:batchEmbedContents"


def make(server, policy, dimensions=768):
    return GeminiEmbedder("gemini-embedding-001", dimensions, base_url=server.url, policy=policy)


def item(text, task, dims=768):
    return {
        "content": {"parts": [{"text": text}], "role": "user"},
        "taskType": task,
        "outputDimensionality": dims,
        "model": "models/gemini-embedding-001",
    }


def test_documents_and_queries_use_their_task_types(gemini_server, policy):
    emb = make(gemini_server, policy)
    docs = emb.embed_documents(["first doc", "second doc"])
    query = emb.embed_query("a question")

    first, second = gemini_server.requests
    assert first.path.endswith(PATH) and first.headers["x-goog-api-key"] == GEMINI_KEY
    assert first.body == {
        "requests": [
            item("first doc", "RETRIEVAL_DOCUMENT"),
            item("second doc", "RETRIEVAL_DOCUMENT"),
        ]
    }
    assert second.body == {"requests": [item("a question", "RETRIEVAL_QUERY")]}
    assert emb.has_modes and docs.shape == (2, 768) and query.shape == (768,)


def test_truncated_dimensions_are_normalised_here(gemini_server, policy):
    vector = make(gemini_server, policy).embed_query("norm me")
    # the fake sends norm-3 vectors, as the real API sends non-unit ones below 3072-d
    assert np.linalg.norm(vector) == pytest.approx(1.0, abs=1e-6)
    np.testing.assert_allclose(vector, np.asarray(raw_vector("norm me", 768)) / 3, atol=1e-6)


def test_default_model_is_3072_d_without_output_dimensionality(gemini_server, policy):
    emb = make(gemini_server, policy, dimensions=None)
    assert emb.model_id == "gemini:gemini-embedding-001" and emb.dim == 3072
    emb.embed_query("x")
    assert "outputDimensionality" not in gemini_server.bodies()[0]["requests"][0]


def test_batches_of_100(gemini_server, policy):
    make(gemini_server, policy).embed_documents([f"d{i}" for i in range(230)])
    assert [len(b["requests"]) for b in gemini_server.bodies()] == [100, 100, 30]


def test_spec_string(monkeypatch, gemini_server):
    monkeypatch.setenv("GOOGLE_GEMINI_BASE_URL", gemini_server.url)
    emb = resolve_embedder("gemini:gemini-embedding-001?dimensions=768")
    assert emb.model_id == "gemini:gemini-embedding-001?dimensions=768"
    assert emb.embed_query("hi").shape == (768,)


def test_429_resource_exhausted_is_retried_after_retry_after(gemini_server, policy, sleeps):
    body = {"error": {"code": 429, "message": "Resource exhausted", "status": "RESOURCE_EXHAUSTED"}}
    gemini_server.push(Action(429, {"Retry-After": "3"}, body))
    make(gemini_server, policy).embed_query("x")
    assert len(gemini_server.requests) == 2 and sleeps == [3.0]


def test_500s_exhaust_the_attempts(gemini_server, policy, sleeps):
    body = {"error": {"code": 500, "message": "internal", "status": "INTERNAL"}}
    gemini_server.push(*[Action(500, body=body)] * 5)
    with pytest.raises(EmbedderUnavailable, match="HTTP 500"):
        make(gemini_server, policy).embed_query("x")
    assert len(gemini_server.requests) == 5 and len(sleeps) == 4


def test_400_invalid_argument_is_not_retried(gemini_server, policy, sleeps):
    body = {"error": {"code": 400, "message": "bad dims", "status": "INVALID_ARGUMENT"}}
    gemini_server.push(Action(400, body=body))
    with pytest.raises(EmbedderUnavailable, match="bad dims"):
        make(gemini_server, policy).embed_query("x")
    assert len(gemini_server.requests) == 1 and sleeps == []


def test_timeout_is_retried(gemini_server, sleeps):
    from semsearch.embedders.retry import RetryPolicy

    fast = RetryPolicy(attempts=2, initial_wait=0.0, timeout=1.0, sleep=sleeps)
    gemini_server.push(Action(hang=3.0))  # longer than the 1 s timeout
    assert make(gemini_server, fast).embed_query("slow").shape == (768,)
    assert len(gemini_server.requests) == 2


def test_malformed_body(gemini_server, policy):
    gemini_server.push(Action(body={"embeddings": "nope"}))
    with pytest.raises(EmbedderUnavailable, match="malformed"):
        make(gemini_server, policy).embed_query("x")
    assert len(gemini_server.requests) == 1


def test_wrong_dimension(gemini_server, policy):
    gemini_server.push(Action(dim=3072))
    with pytest.raises(DimensionMismatch, match="3072-d"):
        make(gemini_server, policy).embed_documents(["a", "b"])


def test_key_not_in_errors_or_logs(gemini_server, policy, caplog):
    caplog.set_level(logging.DEBUG)
    body = {"error": {"code": 403, "message": f"key {GEMINI_KEY} denied", "status": "DENIED"}}
    gemini_server.push(Action(502, body={"error": {"message": GEMINI_KEY}}), Action(403, body=body))
    with pytest.raises(EmbedderUnavailable) as info:
        make(gemini_server, policy).embed_query("x")
    assert GEMINI_KEY not in str(info.value) and "API key" in (info.value.hint or "")
    assert all(GEMINI_KEY not in r.getMessage() for r in caplog.records)


def test_google_api_key_is_accepted(gemini_server, policy, monkeypatch):
    monkeypatch.delenv("GEMINI_API_KEY")
    monkeypatch.setenv("GOOGLE_API_KEY", "google-key-xyz")
    make(gemini_server, policy).embed_query("x")
    assert gemini_server.requests[0].headers["x-goog-api-key"] == "google-key-xyz"


def test_no_key(gemini_server, policy, monkeypatch):
    monkeypatch.delenv("GEMINI_API_KEY")
    with pytest.raises(EmbedderUnavailable, match="GEMINI_API_KEY or GOOGLE_API_KEY"):
        make(gemini_server, policy).embed_query("x")
    assert gemini_server.requests == []
