"""OpenAI provider against a local fake of POST /v1/embeddings (no network: see conftest)."""

from __future__ import annotations

import logging
import random

import numpy as np
import pytest

from semsearch.embedders.openai_provider import OpenAIEmbedder
from semsearch.embedders.registry import resolve_embedder
from semsearch.errors import DimensionMismatch, EmbedderUnavailable
from tests.providers.conftest import OPENAI_KEY
from tests.providers.servers import Action, raw_vector

pytestmark = pytest.mark.usefixtures("keys")


def make(server, policy, model="text-embedding-3-small", dimensions=None):
    return OpenAIEmbedder(model, dimensions, base_url=server.url + "/v1", policy=policy)


def test_request_body_batches_and_auth_header(openai_server, policy):
    texts = [f"text number {i}" for i in range(250)]
    vectors = make(openai_server, policy).embed_documents(texts)

    assert [len(b["input"]) for b in openai_server.bodies()] == [100, 100, 50]
    first = openai_server.requests[0]
    assert first.path == "/v1/embeddings"
    assert first.body == {
        "model": "text-embedding-3-small",
        "input": texts[:100],
        "encoding_format": "float",
    }
    assert first.headers["authorization"] == f"Bearer {OPENAI_KEY}"
    assert vectors.shape == (250, 1536) and vectors.dtype == np.float32
    expected = np.asarray(raw_vector("text number 7", 1536)) / 3.0  # server sends norm-3 vectors
    np.testing.assert_allclose(vectors[7], expected, rtol=1e-5, atol=1e-6)


def test_dimensions_are_sent_and_part_of_model_id(openai_server, policy):
    emb = make(openai_server, policy, dimensions=256)
    vector = emb.embed_query("short vectors")

    assert openai_server.bodies()[0]["dimensions"] == 256
    assert vector.shape == (256,)
    assert emb.model_id == "openai:text-embedding-3-small?dimensions=256"
    assert emb.dim == 256 and len(openai_server.requests) == 1  # declared: no probe request


def test_spec_string_uses_openai_base_url(openai_server, monkeypatch):
    monkeypatch.setenv("OPENAI_BASE_URL", openai_server.url + "/v1")
    emb = resolve_embedder("openai:text-embedding-3-large?dimensions=1024")
    assert emb.model_id == "openai:text-embedding-3-large?dimensions=1024"
    assert emb.embed_query("hello").shape == (1024,)
    assert openai_server.bodies()[0]["model"] == "text-embedding-3-large"


def test_ada_002_refuses_dimensions():
    with pytest.raises(EmbedderUnavailable, match="does not accept a dimensions option"):
        resolve_embedder("openai:text-embedding-ada-002?dimensions=512")


def test_unknown_spec_option_is_refused():
    with pytest.raises(EmbedderUnavailable, match="unknown option"):
        resolve_embedder("openai:text-embedding-3-small?dims=5")


def test_429_waits_the_retry_after_seconds(openai_server, policy, sleeps):
    openai_server.push(Action(429, {"Retry-After": "2"}, {"error": {"message": "slow down"}}))
    make(openai_server, policy).embed_documents(["a"])
    assert len(openai_server.requests) == 2
    assert sleeps == [2.0]  # the jittered backoff (<= 0.01 s) is below Retry-After


def test_retry_after_ms_header_is_honoured(openai_server, policy, sleeps):
    openai_server.push(Action(429, {"retry-after-ms": "1500"}, {"error": {"message": "x"}}))
    make(openai_server, policy).embed_documents(["a"])
    assert sleeps == [1.5]


def test_5xx_retries_with_full_jitter_backoff_then_gives_up(openai_server, policy, sleeps):
    openai_server.push(*[Action(500, body={"error": {"message": "boom"}})] * 5)
    with pytest.raises(EmbedderUnavailable, match="HTTP 500") as info:
        make(openai_server, policy).embed_documents(["a"])
    assert len(openai_server.requests) == 5  # policy.attempts
    rng = random.Random(7)  # the policy's seed: full jitter draws uniform(0, cap_n)
    expected = [rng.uniform(0, cap) for cap in (0.01, 0.02, 0.04, 0.08)]
    assert sleeps == pytest.approx(expected)
    assert "reindex" in (info.value.hint or "")


def test_502_then_success_recovers(openai_server, policy, sleeps):
    openai_server.push(Action(502, body={"error": {"message": "bad gateway"}}))
    vectors = make(openai_server, policy).embed_documents(["x", "y"])
    assert vectors.shape == (2, 1536) and len(openai_server.requests) == 2 and len(sleeps) == 1


def test_400_is_not_retried(openai_server, policy, sleeps):
    body = {"error": {"message": "maximum context length is 8192 tokens"}}
    openai_server.push(Action(400, body=body))
    with pytest.raises(EmbedderUnavailable, match="maximum context length"):
        make(openai_server, policy).embed_documents(["a"])
    assert len(openai_server.requests) == 1 and sleeps == []


def test_retry_after_beyond_the_cap_fails_at_once(openai_server, policy, sleeps):
    openai_server.push(Action(429, {"Retry-After": "3600"}, {"error": {"message": "quota"}}))
    with pytest.raises(EmbedderUnavailable, match="HTTP 429"):
        make(openai_server, policy).embed_documents(["a"])
    assert len(openai_server.requests) == 1 and sleeps == []


def test_timeout_is_retried(openai_server, sleeps):
    from semsearch.embedders.retry import RetryPolicy

    fast = RetryPolicy(attempts=3, initial_wait=0.0, timeout=1.0, sleep=sleeps)
    openai_server.push(Action(hang=3.0))  # longer than the 1 s timeout
    vectors = make(openai_server, fast).embed_documents(["late"])
    assert vectors.shape == (1, 1536)
    assert len(openai_server.requests) == 2 and len(sleeps) == 1


def test_malformed_body_raises_without_retry(openai_server, policy):
    openai_server.push(Action(raw=b'{"object": "list", "data": [{"embedd'))
    with pytest.raises(EmbedderUnavailable, match="malformed"):
        make(openai_server, policy).embed_documents(["a"])
    assert len(openai_server.requests) == 1


def test_too_few_vectors_is_malformed(openai_server, policy):
    openai_server.push(Action(body={"object": "list", "data": [], "model": "m"}))
    with pytest.raises(EmbedderUnavailable, match="malformed"):
        make(openai_server, policy).embed_documents(["a", "b"])


def test_wrong_dimension_raises_dimension_mismatch(openai_server, policy):
    openai_server.push(Action(dim=1024))
    with pytest.raises(DimensionMismatch, match="1024-d"):
        make(openai_server, policy).embed_documents(["a"])


def test_key_never_in_errors_or_logs(openai_server, policy, caplog):
    caplog.set_level(logging.DEBUG)
    echo = {"error": {"message": f"Incorrect API key provided: {OPENAI_KEY}"}}
    openai_server.push(Action(500, body=echo), Action(401, body=echo))
    with pytest.raises(EmbedderUnavailable) as info:
        make(openai_server, policy).embed_documents(["a"])
    assert len(openai_server.requests) == 2  # 500 retried once, 401 not retried
    assert OPENAI_KEY not in str(info.value) and "***" in str(info.value)
    assert "API key" in (info.value.hint or "")
    assert caplog.records, "the retry must have been logged"
    for record in caplog.records:
        assert OPENAI_KEY not in record.getMessage()


def test_missing_key_names_the_variable(openai_server, policy, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY")
    with pytest.raises(EmbedderUnavailable, match="OPENAI_API_KEY"):
        make(openai_server, policy).embed_documents(["a"])
    assert openai_server.requests == []
