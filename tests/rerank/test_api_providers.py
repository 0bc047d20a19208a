"""Cohere, Jina and Voyage rerankers against a local HTTP server that speaks each API.

The server checks nothing itself: it records every request and answers what the test scripts,
in the providers' documented response shapes (see semsearch/rerank/api.py for the sources).
Waits between retries go to a recorder, so the tests never sleep.
"""

from __future__ import annotations

import json
import random
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

import semsearch
from semsearch.embedders.fake import FakeEmbedder
from semsearch.embedders.retry import RetryPolicy
from semsearch.errors import RerankerUnavailable
from semsearch.rerank import resolve_reranker
from semsearch.rerank.api import ApiReranker, CohereReranker, JinaReranker, VoyageReranker

KEY = "sk-test-0123456789abcdef"
DOCS = ["alpha text", "beta text", "gamma text"]


@dataclass
class FakeApi:
    """Scripted answers (status, headers, body), and the requests received."""

    url: str
    script: list[tuple[int, dict[str, str], Any]] = field(default_factory=list)
    requests: list[dict[str, Any]] = field(default_factory=list)


@pytest.fixture
def api() -> Iterator[FakeApi]:
    state = FakeApi(url="")

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length", 0))
            body = json.loads(self.rfile.read(length) or b"null")
            state.requests.append(
                {"path": self.path, "auth": self.headers.get("Authorization"), "body": body}
            )
            status, headers, answer = state.script.pop(0) if state.script else (500, {}, {})
            data = json.dumps(answer).encode()
            self.send_response(status)
            for name, value in {"Content-Type": "application/json", **headers}.items():
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    state.url = f"http://127.0.0.1:{server.server_address[1]}/v1/rerank"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield state
    server.shutdown()
    server.server_close()


def _policy(waits: list[float]) -> RetryPolicy:
    return RetryPolicy(attempts=4, sleep=waits.append, rng=random.Random(0), timeout=5.0)


def _ok(provider: str, scores: dict[int, float]) -> Any:
    """A success body in the provider's shape, results best first (not in input order)."""
    rows = [
        {"index": i, "relevance_score": s} for i, s in sorted(scores.items(), key=lambda kv: -kv[1])
    ]
    if provider == "cohere":
        return {"id": "r-1", "results": rows, "meta": {"api_version": {"version": "2"}}}
    if provider == "jina":
        return {"model": "m", "usage": {"total_tokens": 12}, "results": rows}
    return {"object": "list", "data": rows, "model": "m", "usage": {"total_tokens": 12}}


PROVIDERS: list[tuple[type[ApiReranker], str, str]] = [
    (CohereReranker, "CO_API_KEY", "rerank-v3.5"),
    (JinaReranker, "JINA_API_KEY", "jina-reranker-v2-base-multilingual"),
    (VoyageReranker, "VOYAGE_API_KEY", "rerank-2.5"),
]


@pytest.fixture(params=PROVIDERS, ids=[p[0].provider for p in PROVIDERS])
def provider(
    request: pytest.FixtureRequest, api: FakeApi, monkeypatch: pytest.MonkeyPatch
) -> tuple[type[ApiReranker], str]:
    cls, key_env, model = request.param
    for _, other, _ in PROVIDERS:
        monkeypatch.delenv(other, raising=False)
    monkeypatch.delenv("COHERE_API_KEY", raising=False)
    monkeypatch.setenv(key_env, KEY)
    monkeypatch.setenv(f"SEMSEARCH_{cls.provider.upper()}_URL", api.url)
    return cls, model


def test_request_and_response_shapes(provider: tuple[type[ApiReranker], str], api: FakeApi) -> None:
    cls, model = provider
    api.script.append((200, {}, _ok(cls.provider, {0: 0.25, 1: 0.75, 2: 0.5})))
    reranker = resolve_reranker(f"{cls.provider}:{model}")
    scores = reranker.rerank("which letter", DOCS)
    assert scores.tolist() == [0.25, 0.75, 0.5]  # back in the order of the documents
    assert reranker.model_id == f"{cls.provider}:{model}"
    (sent,) = api.requests
    assert sent["path"] == "/v1/rerank" and sent["auth"] == f"Bearer {KEY}"
    expected: dict[str, Any] = {"model": model, "query": "which letter", "documents": DOCS}
    if cls.provider == "voyage":
        expected |= {"top_k": 3, "return_documents": False, "truncation": True}
    elif cls.provider == "jina":
        expected |= {"top_n": 3, "return_documents": False}
    else:
        expected |= {"top_n": 3}
    assert sent["body"] == expected


def test_429_and_5xx_are_retried_honouring_retry_after(
    provider: tuple[type[ApiReranker], str], api: FakeApi
) -> None:
    cls, model = provider
    api.script += [
        (429, {"Retry-After": "2"}, {"message": "slow down"}),
        (503, {}, {"detail": "overloaded"}),
        (200, {}, _ok(cls.provider, {0: 0.1, 1: 0.2, 2: 0.3})),
    ]
    waits: list[float] = []
    scores = cls(model, policy=_policy(waits)).rerank("q", DOCS)
    assert scores.tolist() == pytest.approx([0.1, 0.2, 0.3])
    assert len(api.requests) == 3 and len(waits) == 2 and waits[0] >= 2.0


def test_401_is_not_retried_and_the_key_never_shows(
    provider: tuple[type[ApiReranker], str], api: FakeApi
) -> None:
    cls, model = provider
    api.script.append((401, {}, {"message": f"invalid api token {KEY}"}))
    waits: list[float] = []
    with pytest.raises(RerankerUnavailable) as caught:
        cls(model, policy=_policy(waits)).rerank("q", DOCS)
    assert len(api.requests) == 1 and waits == []
    assert "HTTP 401" in caught.value.message and KEY not in str(caught.value)
    assert "API key" in (caught.value.hint or "")


def test_a_document_left_unscored_is_refused(
    provider: tuple[type[ApiReranker], str], api: FakeApi
) -> None:
    cls, model = provider
    api.script.append((200, {}, _ok(cls.provider, {0: 0.9, 2: 0.1})))
    with pytest.raises(RerankerUnavailable, match="NaN"):
        cls(model, policy=_policy([])).rerank("q", DOCS)


def test_persistent_failure_degrades_a_search_to_its_unreranked_hits(
    provider: tuple[type[ApiReranker], str], api: FakeApi
) -> None:
    cls, model = provider
    db = semsearch.connect(":memory:")
    coll = db.collection("notes", embedder=FakeEmbedder(), create=True)
    coll.upsert([{"id": str(i), "text": text} for i, text in enumerate(DOCS)])
    plain = coll.search("alpha text", mode="keyword")
    waits: list[float] = []
    reranker = cls(model, policy=_policy(waits))  # every answer is the server's default 500
    result = coll.search("alpha text", mode="keyword", rerank=reranker)
    assert result.degraded and result.reranked_by is None and result.ids == plain.ids
    assert "HTTP 500" in (result.degraded_reason or "") and KEY not in (
        result.degraded_reason or ""
    )
    assert len(api.requests) == 4 and len(waits) == 3  # attempts=4, then it gave up
    db.close()


def test_no_key_degrades_with_the_variable_to_set(
    api: FakeApi, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("VOYAGE_API_KEY", raising=False)
    monkeypatch.setenv("SEMSEARCH_VOYAGE_URL", api.url)
    with pytest.raises(RerankerUnavailable, match="VOYAGE_API_KEY"):
        VoyageReranker("rerank-2.5").rerank("q", DOCS)
    assert api.requests == []


def test_spec_options_cannot_move_the_endpoint() -> None:
    with pytest.raises(RerankerUnavailable, match="unknown option"):
        resolve_reranker("cohere:rerank-v3.5?base_url=http://elsewhere")
