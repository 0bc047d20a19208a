"""Ollama provider (httpx) against a local fake of POST /api/embed."""

from __future__ import annotations

import socket

import pytest

from semsearch.embedders.ollama import OllamaEmbedder
from semsearch.embedders.registry import resolve_embedder
from semsearch.embedders.retry import RetryPolicy
from semsearch.errors import DimensionMismatch, EmbedderUnavailable
from tests.providers.servers import Action


def make(server, policy, model="nomic-embed-text", **kw):
    return OllamaEmbedder(model, host=server.url, policy=policy, **kw)


def test_body_has_truncate_false_and_nomic_prefixes(ollama_server, policy):
    emb = make(ollama_server, policy)
    emb.embed_documents(["a note", "another"])
    emb.embed_query("what?")
    bodies = ollama_server.bodies()
    assert ollama_server.requests[1].path == "/api/embed"
    assert bodies == [
        {
            "model": "nomic-embed-text",
            "input": ["search_document: dimension probe"],
            "truncate": False,
        },
        {
            "model": "nomic-embed-text",
            "input": ["search_document: a note", "search_document: another"],
            "truncate": False,
        },
        {"model": "nomic-embed-text", "input": ["search_query: what?"], "truncate": False},
    ]
    assert emb.dim == 768 and len(ollama_server.requests) == 3  # probed once, cached


def test_model_without_prompts_sends_text_as_is(ollama_server, policy):
    emb = make(ollama_server, policy, "all-minilm:latest", dimensions=384)
    emb.embed_query("plain")
    assert ollama_server.bodies() == [
        {"model": "all-minilm:latest", "input": ["plain"], "truncate": False, "dimensions": 384}
    ]
    assert emb.model_id == "ollama:all-minilm:latest?dimensions=384" and not emb.has_modes


def test_max_tokens_follows_window_margin_and_prefix():
    emb = resolve_embedder("ollama:mxbai-embed-large?max_tokens=1000")
    # 1000-token window * 0.5 margin, minus the query prefix's approximate tokens
    prefix = "Represent this sentence for searching relevant passages: "
    assert emb.max_tokens == 500 - len(emb.token_spans(prefix))


def test_ollama_host_without_scheme(monkeypatch, ollama_server, policy):
    monkeypatch.setenv("OLLAMA_HOST", ollama_server.url.removeprefix("http://"))
    emb = resolve_embedder("ollama:all-minilm")
    emb.policy = policy
    assert emb.embed_query("x").shape == (768,)


def test_5xx_retried_404_not(ollama_server, policy, sleeps):
    ollama_server.push(Action(500, body={"error": "llama runner crashed"}))
    ollama_server.push(Action(404, body={"error": 'model "nomic-embed-text" not found'}))
    with pytest.raises(EmbedderUnavailable, match="not found") as info:
        make(ollama_server, policy, dimensions=768).embed_query("x")
    assert len(ollama_server.requests) == 2 and len(sleeps) == 1
    assert "model or deployment name" in (info.value.hint or "")


def test_input_over_context_is_an_error_not_truncation(ollama_server, policy):
    ollama_server.push(Action(400, body={"error": "input length exceeds the context length"}))
    with pytest.raises(EmbedderUnavailable, match="exceeds the context length"):
        make(ollama_server, policy, dimensions=768).embed_query("x")


def test_server_down_is_retried_then_unavailable(sleeps):
    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    policy = RetryPolicy(attempts=3, initial_wait=0.0, timeout=1.0, sleep=sleeps)
    emb = OllamaEmbedder("nomic-embed-text", 768, host=f"http://127.0.0.1:{port}", policy=policy)
    with pytest.raises(EmbedderUnavailable, match="cannot connect"):
        emb.embed_query("x")
    assert len(sleeps) == 2


def test_malformed_and_wrong_dim(ollama_server, policy):
    ollama_server.push(Action(raw=b"<html>proxy error</html>"), Action(dim=1024))
    emb = make(ollama_server, policy, dimensions=768)
    with pytest.raises(EmbedderUnavailable, match="malformed"):
        emb.embed_query("x")
    with pytest.raises(DimensionMismatch, match="1024-d"):
        emb.embed_query("x")
