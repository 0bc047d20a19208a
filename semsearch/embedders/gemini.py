"""Gemini embeddings through the official ``google-genai`` package (spec ``gemini:<model>``).

The package sends ``POST /v1beta/models/{model}:batchEmbedContents`` (Gemini API reference,
"Embeddings") with ``{"requests": [{"model": "models/<model>", "content": {"parts": [{"text":
...}]}, "taskType": ..., "outputDimensionality": N}, ...]}`` and reads ``{"embeddings":
[{"values": [...]}, ...]}``. Documents are embedded with task type ``RETRIEVAL_DOCUMENT`` and
queries with ``RETRIEVAL_QUERY``. ``gemini-embedding-001`` gives 3072-d vectors by default;
``?dimensions=768`` (or 1536) asks for Matryoshka-truncated ones, which the API does NOT
normalise (only the full 3072-d output is unit length), so every vector is normalised here.
Input limit 2048 tokens per text; at most 100 texts per batch request.

The key comes from ``GEMINI_API_KEY`` or ``GOOGLE_API_KEY``; ``GOOGLE_GEMINI_BASE_URL`` (read by
google-genai) points the client elsewhere. The package's own retries stay off.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from semsearch.embedders.base import EmbedKind
from semsearch.embedders.remote import RemoteEmbedder, env_secret, int_option, parse_options
from semsearch.embedders.retry import (
    Permanent,
    RetryPolicy,
    Transient,
    is_retryable_status,
    parse_retry_after,
    transport_failure,
)
from semsearch.errors import EmbedderUnavailable

__all__ = ["GEMINI_MODELS", "TASK_TYPES", "GeminiEmbedder"]

#: Known models and their default output dimension.
GEMINI_MODELS: dict[str, int] = {"gemini-embedding-001": 3072, "text-embedding-004": 768}

#: Gemini task type per kind of text.
TASK_TYPES: dict[str, str] = {"document": "RETRIEVAL_DOCUMENT", "query": "RETRIEVAL_QUERY"}

_KEYS = ("GEMINI_API_KEY", "GOOGLE_API_KEY")


class GeminiEmbedder(RemoteEmbedder):
    """A Gemini embedding model.

    Args:
        model: e.g. ``gemini-embedding-001`` (3072-d by default).
        dimensions: ``output_dimensionality`` (e.g. 768); part of ``model_id``.
        base_url: API base URL; default ``GOOGLE_GEMINI_BASE_URL`` or the public API.
        policy: retry/timeout policy.
    """

    provider = "gemini"
    window = 2048
    max_batch = 100
    has_modes = True

    def __init__(
        self,
        model: str,
        dimensions: int | None = None,
        *,
        base_url: str | None = None,
        policy: RetryPolicy | None = None,
    ) -> None:
        super().__init__(model.removeprefix("models/"), dimensions, policy)
        self.base_url = base_url

    @classmethod
    def from_spec(cls, name: str) -> GeminiEmbedder:
        """Factory for ``gemini:<model>[?dimensions=N]``."""
        model, options = parse_options(name, ["dimensions"], "gemini")
        return cls(model, int_option(options, "dimensions"))

    def declared_dim(self) -> int | None:
        return GEMINI_MODELS.get(self.model)

    def secrets(self) -> list[str]:
        return [os.environ.get(k, "") for k in _KEYS]

    def client(self) -> Any:
        """The google-genai client, made on first use."""
        if self._client is None:
            genai, types = _import_genai()
            options = types.HttpOptions(
                base_url=self.base_url, timeout=int(self.policy.timeout * 1000)
            )
            self._client = genai.Client(api_key=env_secret("Gemini", *_KEYS), http_options=options)
        return self._client

    def _request(self, texts: list[str], kind: EmbedKind) -> list[Sequence[float]]:
        _, types = _import_genai()
        config = types.EmbedContentConfig(
            task_type=TASK_TYPES[kind], output_dimensionality=self.dimensions
        )
        response = self.client().models.embed_content(
            model=self.model, contents=texts, config=config
        )
        try:
            return [list(e.values) for e in response.embeddings]
        except (AttributeError, TypeError) as exc:
            raise Permanent(f"malformed response ({type(exc).__name__})") from None

    def _classify(self, exc: Exception) -> Transient | Permanent | None:
        from google.genai import errors

        if isinstance(exc, errors.APIError):
            status = int(exc.code or 0)
            message = f"HTTP {status}: {str(exc.message or exc.status or '')[:300]}"
            if is_retryable_status(status):
                headers = getattr(getattr(exc, "response", None), "headers", None)
                return Transient(message, status, parse_retry_after(_as_dict(headers)))
            return Permanent(message, status)
        if (failure := transport_failure(exc)) is not None:
            return failure
        if isinstance(exc, ValueError):  # pydantic validation or JSON decoding of the body
            return Permanent(f"malformed response ({type(exc).__name__})")
        return None


def _as_dict(headers: Any) -> dict[str, str] | None:
    try:
        return dict(headers) if headers is not None else None
    except (TypeError, ValueError):
        return None


def _import_genai() -> tuple[Any, Any]:
    try:
        from google import genai
        from google.genai import types
    except ImportError as exc:
        raise EmbedderUnavailable(
            "the google-genai package is not installed", hint="pip install 'semsearch[providers]'"
        ) from exc
    return genai, types
