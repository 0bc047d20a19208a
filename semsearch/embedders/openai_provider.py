"""OpenAI embeddings through the official ``openai`` package (spec ``openai:<model>``).

Request (``POST /v1/embeddings``, OpenAI API reference "Create embeddings"):
``{"model": ..., "input": [texts], "encoding_format": "float"[, "dimensions": N]}``; response
``{"object": "list", "data": [{"object": "embedding", "index": i, "embedding": [...]}], ...}``.
Limits from the same reference: at most 2048 inputs and 300,000 tokens per request, 8192 tokens
per input (we declare 8191, tiktoken's documented limit for these models). ``dimensions`` is
only accepted by text-embedding-3 and later models.

The key comes from ``OPENAI_API_KEY`` only; ``OPENAI_BASE_URL`` (read by the openai package)
points the client at a proxy or a compatible server. The package's own retries are switched
off (``max_retries=0``) so that :mod:`semsearch.embedders.retry` is the one retry policy.
"""

from __future__ import annotations

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
)
from semsearch.errors import EmbedderUnavailable

__all__ = [
    "OPENAI_MODELS",
    "OpenAIEmbedder",
    "check_dimensions",
    "classify_openai_error",
    "parse_openai_response",
]

#: Known models: default dimension, and whether the ``dimensions`` parameter is accepted.
OPENAI_MODELS: dict[str, tuple[int, bool]] = {
    "text-embedding-3-small": (1536, True),
    "text-embedding-3-large": (3072, True),
    "text-embedding-ada-002": (1536, False),
}

_INSTALL_HINT = "pip install 'semsearch[providers]'"


def check_dimensions(model: str, dimensions: int | None) -> None:
    """Raise EmbedderUnavailable when ``dimensions`` is asked of a known model that does not
    accept it (ada-002); unknown models are left to the API."""
    known = OPENAI_MODELS.get(model)
    if dimensions is not None and known is not None and not known[1]:
        raise EmbedderUnavailable(
            f"model {model} does not accept a dimensions option",
            hint="use text-embedding-3-small or -large for shorter vectors",
        )


def import_openai() -> Any:
    """The ``openai`` module, or EmbedderUnavailable with the install command."""
    try:
        import openai
    except ImportError as exc:
        raise EmbedderUnavailable(
            "the openai package is not installed", hint=_INSTALL_HINT
        ) from exc
    return openai


class OpenAIEmbedder(RemoteEmbedder):
    """An OpenAI embedding model.

    Args:
        model: e.g. ``text-embedding-3-small`` (1536-d), ``text-embedding-3-large`` (3072-d),
            ``text-embedding-ada-002`` (1536-d).
        dimensions: shorter output (text-embedding-3 models only); part of ``model_id``.
        base_url: API base URL; default ``OPENAI_BASE_URL`` or the public API.
        policy: retry/timeout policy.
    Raises:
        EmbedderUnavailable: ``dimensions`` asked of a model that does not accept it; no key
            (raised on first use).
    """

    provider = "openai"
    window = 8191
    max_batch = 100
    max_request_tokens = 300_000 // 2  # the request limit, with the same margin as one text

    def __init__(
        self,
        model: str,
        dimensions: int | None = None,
        *,
        base_url: str | None = None,
        policy: RetryPolicy | None = None,
    ) -> None:
        check_dimensions(model, dimensions)
        super().__init__(model, dimensions, policy)
        self.base_url = base_url

    @classmethod
    def from_spec(cls, name: str) -> OpenAIEmbedder:
        """Factory for ``openai:<model>[?dimensions=N]``."""
        model, options = parse_options(name, ["dimensions"], "openai")
        return cls(model, int_option(options, "dimensions"))

    def declared_dim(self) -> int | None:
        known = OPENAI_MODELS.get(self.model)
        return known[0] if known else None

    def secrets(self) -> list[str]:
        import os

        return [os.environ.get("OPENAI_API_KEY", "")]

    def _make_client(self) -> Any:
        openai = import_openai()
        return openai.OpenAI(
            api_key=env_secret("OpenAI", "OPENAI_API_KEY"),
            base_url=self.base_url,
            timeout=self.policy.timeout,
            max_retries=0,
        )

    def client(self) -> Any:
        """The openai client, made on first use."""
        if self._client is None:
            self._client = self._make_client()
        return self._client

    def _request(self, texts: list[str], kind: EmbedKind) -> list[Sequence[float]]:
        params: dict[str, Any] = {"model": self.model, "input": texts, "encoding_format": "float"}
        if self.dimensions is not None:
            params["dimensions"] = self.dimensions
        response = self.client().embeddings.create(**params)
        return parse_openai_response(response, len(texts))

    def _classify(self, exc: Exception) -> Transient | Permanent | None:
        return classify_openai_error(exc, import_openai())


def parse_openai_response(response: Any, n: int) -> list[Sequence[float]]:
    """Vectors from a CreateEmbeddingResponse, ordered by ``index``. Raises Permanent if malformed."""
    try:
        rows = sorted(response.data, key=lambda d: int(d.index))
        vectors: list[Sequence[float]] = [list(d.embedding) for d in rows]
    except (AttributeError, TypeError, ValueError) as exc:
        raise Permanent(f"malformed response ({type(exc).__name__})") from None
    if [int(d.index) for d in rows] != list(range(n)):
        raise Permanent(f"malformed response: {len(rows)} embeddings for {n} inputs")
    return vectors


def classify_openai_error(exc: Exception, openai: Any) -> Transient | Permanent | None:
    """Map an ``openai`` exception to Transient (timeout, connection, 429, 5xx) or Permanent."""
    if isinstance(exc, openai.APITimeoutError):
        return Transient("request timed out")
    if isinstance(exc, openai.APIConnectionError):
        return Transient("cannot connect to the API")
    if isinstance(exc, openai.APIStatusError):
        status = int(exc.status_code)
        message = _error_message(exc)
        if is_retryable_status(status):
            headers = dict(exc.response.headers) if exc.response is not None else {}
            return Transient(f"HTTP {status}: {message}", status, parse_retry_after(headers))
        return Permanent(f"HTTP {status}: {message}", status)
    if isinstance(exc, openai.APIResponseValidationError | ValueError):
        return Permanent(f"malformed response ({type(exc).__name__})")
    return None


def _error_message(exc: Any) -> str:
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, dict) and inner.get("message"):
            return str(inner["message"])[:300]
    return str(getattr(exc, "message", "") or type(exc).__name__)[:300]
