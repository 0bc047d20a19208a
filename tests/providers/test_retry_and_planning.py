"""The shared retry policy and request planning, tested without any server."""

from __future__ import annotations

import random

import numpy as np
import pytest

from semsearch.embedders.remote import (
    RemoteEmbedder,
    approx_token_spans,
    parse_options,
    redact,
)
from semsearch.embedders.retry import (
    Permanent,
    RetryPolicy,
    Transient,
    backoff_wait,
    call_with_retries,
    parse_retry_after,
)
from semsearch.errors import EmbedderUnavailable


def test_parse_retry_after_forms():
    assert parse_retry_after({"Retry-After": "7"}) == 7.0
    assert parse_retry_after({"retry-after-ms": "250", "Retry-After": "9"}) == 0.25
    # HTTP-date 30 s after a fixed "now" (RFC 9110 IMF-fixdate)
    now = 1_700_000_000.0  # 2023-11-14 22:13:20 UTC
    assert parse_retry_after({"Retry-After": "Tue, 14 Nov 2023 22:13:50 GMT"}, now=now) == 30.0
    assert parse_retry_after({"Retry-After": "soon"}) is None
    assert parse_retry_after({}) is None
    assert parse_retry_after({"Retry-After": "-3"}) == 0.0


def test_backoff_is_full_jitter_under_a_doubling_cap():
    policy = RetryPolicy(initial_wait=1.0, max_wait=5.0, rng=random.Random(1))
    waits = [backoff_wait(policy, n, None) for n in range(1, 8)]
    caps = [1, 2, 4, 5, 5, 5, 5]
    assert all(0 <= w <= c for w, c in zip(waits, caps, strict=True))
    assert backoff_wait(policy, 1, 12.0) == 12.0  # never less than Retry-After


def test_call_with_retries_counts(sleeps):
    calls = []

    def flaky():
        calls.append(1)
        if len(calls) < 3:
            raise Transient("HTTP 503", 503)
        return "ok"

    policy = RetryPolicy(attempts=4, initial_wait=0.0, sleep=sleeps)
    assert call_with_retries(flaky, policy, "t") == "ok"
    assert len(calls) == 3 and len(sleeps) == 2

    def broken():
        calls.append(1)
        raise Permanent("HTTP 401", 401)

    calls.clear()
    with pytest.raises(Permanent):
        call_with_retries(broken, policy, "t")
    assert len(calls) == 1


def test_approx_tokens_over_count_words():
    spans = approx_token_spans("Tokenization, 2024!")
    pieces = ["Toke", "niza", "tion", ",", "202", "4", "!"]
    assert ["Tokenization, 2024!"[a:b] for a, b in spans] == pieces


def test_parse_options():
    assert parse_options("m?dimensions=5", ["dimensions"], "p") == ("m", {"dimensions": "5"})
    with pytest.raises(EmbedderUnavailable, match="no model"):
        parse_options("?dimensions=5", ["dimensions"], "p")


def test_redact_hides_secrets_and_bearer_tokens():
    text = "key sk-abcdef used; Authorization: Bearer tok.123; url?key=AIzaXYZ&x=1"
    out = redact(text, ["sk-abcdef"])
    assert "sk-abcdef" not in out and "tok.123" not in out and "AIzaXYZ" not in out


class Recorder(RemoteEmbedder):
    """A RemoteEmbedder whose 'API' returns, for each text, [token count, 1, 0, 0]."""

    provider = "rec"
    window = 20  # usable: 10 approximate tokens
    max_batch = 3
    max_request_tokens = 12

    def __init__(self):
        super().__init__("m", 4)
        self.sent: list[list[str]] = []

    def _request(self, texts, kind):
        self.sent.append(list(texts))
        return [[float(len(approx_token_spans(t))), 1.0, 0.0, 0.0] for t in texts]

    def _classify(self, exc):
        return None


def test_requests_respect_max_batch_and_token_budget():
    emb = Recorder()
    texts = ["a b c d e", "f g h", "i", "j", "k l m n o p q"]  # 5, 3, 1, 1, 7 tokens
    emb.embed_documents(texts)
    # first request: max_batch=3 texts (9 tokens); second: 1 + 7 = 8 tokens <= 12
    assert emb.sent == [["a b c d e", "f g h", "i"], ["j", "k l m n o p q"]]


def test_oversized_text_is_split_and_averaged_not_truncated():
    emb = Recorder()
    text = " ".join(f"w{i}" for i in range(25))  # 50 approx tokens ('w', digits) -> 5 pieces
    vector = emb.embed_documents([text])[0]
    assert [len(s) for s in emb.sent] == [1, 1, 1, 1, 1]  # 10 tokens each; budget 12
    pieces = [p for request in emb.sent for p in request]
    assert "".join(pieces).replace(" ", "") == text.replace(" ", "")  # every char was sent
    # each piece vector [10, 1, 0, 0] normalised, weighted by its 10 tokens -> same direction
    expected = np.array([10.0, 1.0, 0, 0]) / np.linalg.norm([10.0, 1.0, 0, 0])
    np.testing.assert_allclose(vector, expected, atol=1e-6)
