"""Ollama embeddings over its HTTP API through httpx (spec ``ollama:<model>``).

Request (Ollama API reference, "Generate Embeddings"): ``POST {host}/api/embed`` with
``{"model": ..., "input": [texts], "truncate": false[, "dimensions": N]}``; response
``{"model": ..., "embeddings": [[...], ...], ...}``; errors are ``{"error": "..."}`` with a 4xx
or 5xx status. ``truncate`` defaults to true in Ollama, which would cut long inputs silently;
semsearch sends false, so an input over the context window is an error instead.

The host comes from ``OLLAMA_HOST`` (as for the ``ollama`` CLI; default
``http://127.0.0.1:11434``). Ollama does not report the context window through this endpoint,
so known models declare theirs and others default to 512 tokens; ``?max_tokens=N`` overrides
it. Models whose card asks for prefixes (``nomic-embed-text``: ``search_query: `` /
``search_document: ``) get them from :mod:`semsearch.embedders.prompts`.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from semsearch.embedders.base import EmbedKind
from semsearch.embedders.prompts import prompts_for
from semsearch.embedders.remote import RemoteEmbedder, int_option, parse_options
from semsearch.embedders.retry import (
    Permanent,
    RetryPolicy,
    Transient,
    http_client,
    http_status_failure,
    transport_failure,
)

__all__ = ["DEFAULT_HOST", "OLLAMA_WINDOWS", "OllamaEmbedder"]

DEFAULT_HOST = "http://127.0.0.1:11434"

#: Context windows (tokens) of common Ollama embedding models, from their model pages.
OLLAMA_WINDOWS: dict[str, int] = {
    "nomic-embed-text": 2048,
    "mxbai-embed-large": 512,
    "all-minilm": 256,
    "snowflake-arctic-embed": 512,
    "bge-m3": 8192,
    "bge-large": 512,
}


def ollama_host() -> str:
    """``OLLAMA_HOST`` with a scheme (``0.0.0.0:11434`` -> ``http://0.0.0.0:11434``)."""
    host = os.environ.get("OLLAMA_HOST", "").strip() or DEFAULT_HOST
    return host if "://" in host else f"http://{host}"


class OllamaEmbedder(RemoteEmbedder):
    """An embedding model served by Ollama.

    Args:
        model: an Ollama model tag, e.g. ``nomic-embed-text`` or ``mxbai-embed-large:335m``.
        dimensions: shorter output (models that support it); part of ``model_id``.
        max_tokens_window: the model's context window in tokens (default: known table or 512).
        host: server URL; default ``OLLAMA_HOST`` or http://127.0.0.1:11434.
        policy: retry/timeout policy.
    """

    provider = "ollama"
    max_batch = 64

    def __init__(
        self,
        model: str,
        dimensions: int | None = None,
        *,
        max_tokens_window: int | None = None,
        host: str | None = None,
        policy: RetryPolicy | None = None,
    ) -> None:
        super().__init__(model, dimensions, policy)
        base = model.split(":", 1)[0]
        self.window = max_tokens_window or OLLAMA_WINDOWS.get(base, 512)
        self.prompts = prompts_for(model)
        self.has_modes = bool(self.prompts)
        self.host = (host or ollama_host()).rstrip("/")

    @classmethod
    def from_spec(cls, name: str) -> OllamaEmbedder:
        """Factory for ``ollama:<model>[?dimensions=N&max_tokens=N]``."""
        model, options = parse_options(name, ["dimensions", "max_tokens"], "ollama")
        return cls(
            model,
            int_option(options, "dimensions"),
            max_tokens_window=int_option(options, "max_tokens"),
        )

    @property
    def max_tokens(self) -> int:
        """The window with the token margin, minus the longest prefix."""
        cost = self.prompts.token_cost(lambda p: len(self.token_spans(p)))
        return max(1, super().max_tokens - cost)

    def client(self) -> Any:
        """The httpx client, made on first use."""
        if self._client is None:
            self._client = http_client(base_url=self.host, timeout=self.policy.timeout)
        return self._client

    def _request(self, texts: list[str], kind: EmbedKind) -> list[Sequence[float]]:
        body: dict[str, Any] = {
            "model": self.model,
            "input": self.prompts.apply(texts, kind),
            "truncate": False,
        }
        if self.dimensions is not None:
            body["dimensions"] = self.dimensions
        response = self.client().post("/api/embed", json=body)
        if response.status_code >= 400:
            raise http_status_failure(response)
        try:
            vectors = response.json()["embeddings"]
        except (ValueError, KeyError, TypeError) as exc:
            raise Permanent(f"malformed response ({type(exc).__name__})") from None
        if not isinstance(vectors, list):
            raise Permanent("malformed response: 'embeddings' is not a list")
        return vectors

    def _classify(self, exc: Exception) -> Transient | Permanent | None:
        return transport_failure(exc)
