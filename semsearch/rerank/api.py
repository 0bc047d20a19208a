"""Rerank APIs: Cohere, Jina and Voyage (specs ``cohere:<model>``, ``jina:<model>``,
``voyage:<model>``), over httpx with the embedders' retry policy.

Each takes the query, the documents and how many results to return, and answers one
``relevance_score`` per document with its ``index`` into the request's documents:

- Cohere (API reference, "Rerank V2 API"): ``POST https://api.cohere.com/v2/rerank`` with
  ``{"model", "query", "documents": [str], "top_n"}``; response ``{"id", "results": [{"index",
  "relevance_score"}], "meta"}``. Key: ``CO_API_KEY`` or ``COHERE_API_KEY``.
- Jina (Reranker API): ``POST https://api.jina.ai/v1/rerank`` with ``{"model", "query",
  "documents", "top_n", "return_documents": false}``; response ``{"model", "usage",
  "results": [{"index", "relevance_score"}]}``. Key: ``JINA_API_KEY``.
- Voyage (API reference, "Rerankers"): ``POST https://api.voyageai.com/v1/rerank`` with
  ``{"model", "query", "documents", "top_k", "return_documents": false, "truncation": true}``;
  response ``{"object": "list", "data": [{"index", "relevance_score"}], "model", "usage"}``.
  Key: ``VOYAGE_API_KEY``.

semsearch asks for every document's score (top_n = the number of documents), so the order it
returns is the provider's. Scores are the providers' own, documented in [0, 1]. Retries follow
:mod:`semsearch.embedders.retry` (429 and 5xx retried with backoff and Retry-After, other 4xx
not); keys are read from the environment only and scrubbed from every message. The endpoint
can be moved with ``SEMSEARCH_<PROVIDER>_URL`` (a proxy, or a local test server); it is not a
spec option, so a network client that names a spec cannot send the key elsewhere.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from typing import Any

import numpy as np

from semsearch.embedders.remote import env_secret, parse_options, redact
from semsearch.embedders.retry import (
    Permanent,
    RetryPolicy,
    Transient,
    call_with_retries,
    http_client,
    http_status_failure,
    transport_failure,
)
from semsearch.errors import EmbedderUnavailable, RerankerUnavailable
from semsearch.rerank.base import Scores, check_scores

__all__ = ["ApiReranker", "CohereReranker", "JinaReranker", "VoyageReranker"]


class ApiReranker:
    """Base of the rerank API providers; a provider sets the class attributes and ``body``.

    Class attributes:
        provider: spec prefix, e.g. ``"cohere"``.
        url: the endpoint (overridden by ``SEMSEARCH_<PROVIDER>_URL``).
        key_names: environment variables holding the key, first non-empty wins.
        results_key: the response field with the ``{index, relevance_score}`` list.
        window: tokens per (query, document) pair the provider reads; it truncates beyond.

    Args:
        model: the provider's model name, e.g. ``rerank-v3.5``.
        base_url: the endpoint (default: ``SEMSEARCH_<PROVIDER>_URL`` or :attr:`url`).
        policy: retries and timeout (default :class:`RetryPolicy`).
    """

    provider = ""
    url = ""
    key_names: tuple[str, ...] = ()
    results_key = "results"
    window = 4096

    def __init__(
        self, model: str, *, base_url: str | None = None, policy: RetryPolicy | None = None
    ) -> None:
        self.model = model
        env = os.environ.get(f"SEMSEARCH_{self.provider.upper()}_URL", "").strip()
        self.endpoint = base_url or env or self.url
        self.policy = policy or RetryPolicy()
        self._client: Any = None
        self._key: str | None = None
        self._lock = threading.Lock()

    @classmethod
    def from_spec(cls, name: str) -> ApiReranker:
        """Factory for ``<provider>:<model>`` (no options)."""
        try:
            model, _ = parse_options(name, [], cls.provider)
        except EmbedderUnavailable as exc:  # the option parser is shared with embedders
            raise RerankerUnavailable(exc.message, hint=exc.hint) from None
        return cls(model)

    @property
    def model_id(self) -> str:
        """``<provider>:<model>``."""
        return f"{self.provider}:{self.model}"

    @property
    def max_tokens(self) -> int:
        """Tokens per (query, document) pair the provider reads (it truncates the rest)."""
        return self.window

    def body(self, query: str, texts: list[str]) -> dict[str, Any]:
        """The JSON request for scoring every one of ``texts`` against ``query``."""
        return {"model": self.model, "query": query, "documents": texts, "top_n": len(texts)}

    def rerank(self, query: str, texts: Sequence[str]) -> Scores:
        """The provider's relevance_score per text: float32[len(texts)] in [0, 1].

        Raises:
            RerankerUnavailable: no key, the provider failed after retries, or answered
                malformed output (the message never holds the key).
        """
        if not texts:
            return np.empty(0, dtype=np.float32)
        body = self.body(query, list(texts))
        try:
            payload = call_with_retries(lambda: self._post(body), self.policy, self.model_id)
        except (Transient, Permanent) as exc:
            raise RerankerUnavailable(
                f"{self.model_id}: {redact(exc.reason, self._secrets())}",
                hint=_hint(exc),
            ) from None
        return check_scores(self._scores(payload, len(texts)), len(texts), self.model_id)

    def _post(self, body: dict[str, Any]) -> Any:
        try:
            response = self._http().post(self.endpoint, json=body)
        except Exception as exc:
            failure = transport_failure(exc)
            if failure is None:
                raise
            raise failure from None
        if response.status_code >= 400:
            raise http_status_failure(response)
        try:
            return response.json()
        except ValueError:
            raise Permanent("malformed response (not JSON)") from None

    def _scores(self, payload: Any, n: int) -> list[float]:
        """One score per document from the response's ``{index, relevance_score}`` list."""
        scores = [float("nan")] * n
        try:
            for row in payload[self.results_key]:
                scores[int(row["index"])] = float(row["relevance_score"])
        except (KeyError, TypeError, ValueError, IndexError) as exc:
            raise RerankerUnavailable(
                f"{self.model_id} answered a malformed response ({type(exc).__name__})",
                hint="the provider's response did not match its documented shape",
            ) from None
        return scores  # a document left unscored stays NaN, which check_scores refuses

    def _secrets(self) -> list[str]:
        return [self._key] if self._key else []

    def _http(self) -> Any:
        with self._lock:
            if self._client is None:
                try:
                    self._key = env_secret(self.provider, *self.key_names)
                except EmbedderUnavailable as exc:
                    raise RerankerUnavailable(exc.message, hint=exc.hint) from None
                headers = {"Authorization": f"Bearer {self._key}"}
                self._client = http_client(headers=headers, timeout=self.policy.timeout)
        return self._client


def _hint(exc: Transient | Permanent) -> str:
    if isinstance(exc, Transient):
        return "the provider is unreachable, rate-limited or failing; results are un-reranked"
    if exc.status in (401, 403):
        return "check the API key (read from the environment)"
    return "the request was rejected; check the model name"


class CohereReranker(ApiReranker):
    """Cohere's Rerank v2 API, e.g. ``cohere:rerank-v3.5`` (4096 tokens per pair)."""

    provider = "cohere"
    url = "https://api.cohere.com/v2/rerank"
    key_names = ("CO_API_KEY", "COHERE_API_KEY")


class JinaReranker(ApiReranker):
    """Jina's Reranker API, e.g. ``jina:jina-reranker-v2-base-multilingual`` (1024 tokens)."""

    provider = "jina"
    url = "https://api.jina.ai/v1/rerank"
    key_names = ("JINA_API_KEY",)
    window = 1024

    def body(self, query: str, texts: list[str]) -> dict[str, Any]:
        """Jina's request: Cohere's fields plus ``return_documents: false``."""
        return {**super().body(query, texts), "return_documents": False}


class VoyageReranker(ApiReranker):
    """Voyage's rerank API, e.g. ``voyage:rerank-2.5`` (``top_k``, results under ``data``)."""

    provider = "voyage"
    url = "https://api.voyageai.com/v1/rerank"
    key_names = ("VOYAGE_API_KEY",)
    results_key = "data"
    window = 8000  # rerank-2-lite and rerank-1, query + document; rerank-2.5 reads 32,000

    def body(self, query: str, texts: list[str]) -> dict[str, Any]:
        """Voyage's request: ``top_k`` instead of ``top_n``, truncation on."""
        return {
            "model": self.model,
            "query": query,
            "documents": texts,
            "top_k": len(texts),
            "return_documents": False,
            "truncation": True,
        }
