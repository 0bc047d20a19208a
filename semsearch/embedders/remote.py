"""The shared half of every API embedder: spec options, keys, token estimates, request planning.

A provider module (``openai_provider``, ``azure_openai``, ``gemini``, ``ollama``) subclasses
:class:`RemoteEmbedder` and writes two methods: ``_request(texts, kind)`` (one HTTP call, returns
one vector per text) and ``_classify(exc)`` (its client's exception -> :class:`Transient` /
:class:`Permanent`). Everything else lives here once:

- **Batching.** Texts go out in requests of at most ``max_batch`` texts and at most
  ``max_request_tokens`` estimated tokens.
- **Retries** per :mod:`semsearch.embedders.retry`; failures end as :class:`EmbedderUnavailable`
  (so ``Collection.upsert`` leaves chunks pending) and wrong-sized vectors as
  :class:`DimensionMismatch`. Messages are scrubbed of API keys.
- **Token counts without the provider's tokenizer.** The chunker needs token offsets, but the
  real tokenizers (OpenAI's tiktoken BPE files, Gemini's SentencePiece model) cannot be
  downloaded here and are not shipped in any package. :func:`approx_token_spans` over-counts
  instead: runs of up to 4 ASCII letters, up to 3 digits, and every other non-space character
  each count as one token, and a provider's usable window is half its real one
  (:data:`TOKEN_MARGIN`). English BPE tokens average about 4 characters, so real token counts stay
  well inside the window; should an input still be too long, the provider is told not to
  truncate (OpenAI and Ollama reject it; Gemini gets half its window), so nothing is cut silently.
- **Oversized inputs** (a direct ``embed_documents`` call with a text longer than
  ``max_tokens``) are split into window-sized pieces, each piece is embedded, and the text's
  vector is the piece vectors' token-weighted mean, re-normalised (OpenAI Cookbook,
  "Embedding texts that are longer than the model's maximum context length").
"""

from __future__ import annotations

import logging
import os
import re
import threading
from abc import abstractmethod
from collections.abc import Sequence
from typing import Any
from urllib.parse import parse_qsl

import numpy as np
from numpy.typing import NDArray

from semsearch.embedders.base import BaseEmbedder, EmbedKind
from semsearch.embedders.retry import Permanent, RetryPolicy, Transient, call_with_retries
from semsearch.errors import DimensionMismatch, EmbedderUnavailable

__all__ = [
    "TOKEN_MARGIN",
    "RemoteEmbedder",
    "approx_token_spans",
    "env_secret",
    "parse_options",
    "redact",
]

log = logging.getLogger(__name__)

#: Fraction of a provider's real token window that the approximate token count may fill.
TOKEN_MARGIN = 0.5

_APPROX_TOKEN = re.compile(r"[A-Za-z]{1,4}|[0-9]{1,3}|[^\sA-Za-z0-9]")


def approx_token_spans(text: str) -> list[tuple[int, int]]:
    """Char offsets of approximate tokens: <=4 ASCII letters, <=3 digits, or one other char.

    A deliberate over-estimate of BPE/SentencePiece token counts for English text, used with
    :data:`TOKEN_MARGIN` because the providers' own tokenizers are not available offline.
    """
    return [m.span() for m in _APPROX_TOKEN.finditer(text)]


def parse_options(name: str, allowed: Sequence[str], provider: str) -> tuple[str, dict[str, str]]:
    """Split ``"model?key=value&..."`` into the model name and its options.

    Raises:
        EmbedderUnavailable: empty model name, or an option not in ``allowed``.
    """
    model, _, query = name.partition("?")
    options = dict(parse_qsl(query, keep_blank_values=True)) if query else {}
    unknown = sorted(set(options) - set(allowed))
    if not model.strip():
        raise EmbedderUnavailable(
            f"no model named in the {provider!r} spec", hint=f"e.g. '{provider}:<model>'"
        )
    if unknown:
        raise EmbedderUnavailable(
            f"unknown option(s) {', '.join(unknown)} for provider {provider!r}",
            hint=f"supported options: {', '.join(allowed) or 'none'}",
        )
    return model.strip(), options


def int_option(options: dict[str, str], key: str) -> int | None:
    """A positive integer option, or None when absent. Raises EmbedderUnavailable if invalid."""
    if key not in options:
        return None
    value = options[key]
    if not value.isdigit() or int(value) < 1:
        raise EmbedderUnavailable(
            f"option {key}={value!r} must be a positive integer", hint=f"e.g. {key}=768"
        )
    return int(value)


def env_secret(provider: str, *names: str) -> str:
    """The first non-empty environment variable among ``names``; never logged or shown.

    Raises:
        EmbedderUnavailable: none is set (the message names the variables, not any value).
    """
    for name in names:
        value = os.environ.get(name, "").strip()
        if value:
            return value
    raise EmbedderUnavailable(
        f"no API key for {provider}: set {' or '.join(names)} in the environment",
        hint="keys are read from the environment only, never from code, specs or files",
    )


def redact(text: str, secrets: Sequence[str]) -> str:
    """``text`` with every secret (and any ``Bearer``/``key=`` token) replaced by ``***``."""
    for secret in secrets:
        if secret and len(secret) >= 4:
            text = text.replace(secret, "***")
    text = re.sub(r"(?i)(bearer\s+)[A-Za-z0-9._~+/=-]+", r"\1***", text)
    return re.sub(r"(?i)((?:api[-_]?)?key=)[^&\s'\"]+", r"\1***", text)


class RemoteEmbedder(BaseEmbedder):
    """Base class for API embedders. Subclasses set the class attributes and two methods.

    Class attributes a provider declares:
        provider: spec prefix, e.g. ``"openai"``.
        window: the provider's real input limit per text, in its own tokens.
        max_batch: texts per request (the API's limit, or a polite default of 100).
        max_request_tokens: estimated tokens per request (e.g. OpenAI's 300,000), or None.
        has_modes: True when queries and documents are embedded differently (task types or
            prefixes).

    Args:
        model: the provider's model (or Azure deployment) name.
        dimensions: requested output dimension, or None for the model's default.
        policy: retry and timeout policy (see :class:`RetryPolicy`).
    """

    provider: str = ""
    window: int = 512
    max_batch: int = 100
    max_request_tokens: int | None = None
    has_modes: bool = False

    def __init__(
        self, model: str, dimensions: int | None = None, policy: RetryPolicy | None = None
    ) -> None:
        super().__init__(batch_size=self.max_batch)
        self.model = model
        self.dimensions = dimensions
        self.policy = policy or RetryPolicy()
        self.model_id = f"{self.provider}:{model}" + (
            f"?dimensions={dimensions}" if dimensions else ""
        )
        self._dim: int | None = dimensions or self.declared_dim()
        self._lock = threading.Lock()
        self._client: Any = None

    # -- what a provider writes -----------------------------------------------------------

    @abstractmethod
    def _request(self, texts: list[str], kind: EmbedKind) -> list[Sequence[float]]:
        """One API call: one raw vector per text, in order. Raises the client's exceptions."""

    @abstractmethod
    def _classify(self, exc: Exception) -> Transient | Permanent | None:
        """Map a client exception to Transient / Permanent, or None if it is not the client's."""

    def declared_dim(self) -> int | None:
        """The model's known default dimension, or None to probe it with one request."""
        return None

    def secrets(self) -> list[str]:
        """Values that must never appear in a log line or an error message."""
        return []

    # -- the Embedder protocol ------------------------------------------------------------

    @property
    def dim(self) -> int:
        """Output dimension: requested, declared for known models, or probed once and cached."""
        if self._dim is None:
            with self._lock:
                if self._dim is None:
                    self._dim = len(self._send(["dimension probe"], "document")[0])
        return self._dim

    @property
    def max_tokens(self) -> int:
        """Usable window in :func:`approx_token_spans` tokens: ``window * TOKEN_MARGIN``."""
        return max(1, int(self.window * TOKEN_MARGIN))

    def token_spans(self, text: str) -> list[tuple[int, int]]:
        """Approximate token offsets (see :func:`approx_token_spans`)."""
        return approx_token_spans(text)

    def _embed_batch(self, texts: list[str], kind: EmbedKind) -> NDArray[np.floating]:
        pieces, owners, weights = self._split_oversized(texts)
        vectors = np.empty((len(pieces), self.dim), dtype=np.float64)
        for start, stop in self._plan(pieces):
            vectors[start:stop] = self._send(pieces[start:stop], kind)
        if len(pieces) == len(texts):
            return vectors
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        unit = vectors / np.where(norms > 0, norms, 1.0)
        out = np.zeros((len(texts), self.dim), dtype=np.float64)
        np.add.at(out, owners, unit * np.asarray(weights, dtype=np.float64)[:, None])
        return out

    # -- shared machinery -----------------------------------------------------------------

    def _split_oversized(self, texts: list[str]) -> tuple[list[str], list[int], list[int]]:
        """Pieces of at most ``max_tokens`` tokens, the text each belongs to, its token count."""
        pieces: list[str] = []
        owners: list[int] = []
        weights: list[int] = []
        limit = self.max_tokens
        for i, text in enumerate(texts):
            spans = approx_token_spans(text)
            if len(spans) <= limit:
                pieces.append(text)
                owners.append(i)
                weights.append(max(1, len(spans)))
                continue
            log.info("%s: text of ~%d tokens split into pieces", self.model_id, len(spans))
            for first in range(0, len(spans), limit):
                group = spans[first : first + limit]
                pieces.append(text[group[0][0] : group[-1][1]])
                owners.append(i)
                weights.append(len(group))
        return pieces, owners, weights

    def _plan(self, texts: list[str]) -> list[tuple[int, int]]:
        """Cut ``texts`` into request ranges within ``max_batch`` and ``max_request_tokens``."""
        ranges: list[tuple[int, int]] = []
        start, tokens = 0, 0
        budget = self.max_request_tokens
        for i, text in enumerate(texts):
            n = len(approx_token_spans(text))
            full = i - start >= self.max_batch or (budget is not None and tokens + n > budget)
            if full and i > start:
                ranges.append((start, i))
                start, tokens = i, 0
            tokens += n
        if start < len(texts):
            ranges.append((start, len(texts)))
        return ranges

    def _send(self, texts: list[str], kind: EmbedKind) -> NDArray[np.float64]:
        """One request with retries; returns float64[len(texts), d], checked for shape."""

        def once() -> list[Sequence[float]]:
            try:
                return self._request(texts, kind)
            except (Transient, Permanent) as exc:
                raise self._scrubbed(exc) from None
            except Exception as exc:
                mapped = self._classify(exc)
                if mapped is None:
                    raise
                raise self._scrubbed(mapped) from None

        try:
            raw = call_with_retries(once, self.policy, self.model_id)
        except (Transient, Permanent) as exc:
            raise self._unavailable(exc) from None
        return self._as_matrix(raw, len(texts))

    def _as_matrix(self, raw: Any, n: int) -> NDArray[np.float64]:
        try:
            rows = [np.asarray(v, dtype=np.float64) for v in raw]
        except (TypeError, ValueError):
            rows = []
        if len(rows) != n or any(r.ndim != 1 for r in rows):
            raise EmbedderUnavailable(
                f"{self.model_id} returned {len(rows)} vectors for {n} texts; nothing was stored",
                hint="the provider's response was malformed; try again later",
            )
        sizes = {r.shape[0] for r in rows}
        expected = self._dim
        if len(sizes) > 1 or (expected is not None and sizes != {expected}):
            got = ", ".join(str(s) for s in sorted(sizes))
            raise DimensionMismatch(
                f"{self.model_id} returned {got}-d vectors, expected {expected or 'equal'}-d; "
                "nothing was stored",
                hint="check the model/deployment name and the dimensions option of the spec",
            )
        return np.vstack(rows) if rows else np.empty((0, expected or 0))

    def _scrubbed(self, exc: Transient | Permanent) -> Transient | Permanent:
        """The same failure with every secret removed from its reason (it gets logged)."""
        reason = redact(exc.reason, self.secrets())
        if isinstance(exc, Transient):
            return Transient(reason, exc.status, exc.retry_after)
        return Permanent(reason, exc.status)

    def _unavailable(self, exc: Transient | Permanent) -> EmbedderUnavailable:
        reason = redact(exc.reason, self.secrets())
        if isinstance(exc, Transient):
            hint = (
                "the provider is unreachable, rate-limited or failing; written records stay "
                "pending and keyword-searchable: run `semsearch reindex` later"
            )
        elif exc.status in (401, 403):
            hint = f"check the API key for {self.provider} (read from the environment)"
        elif exc.status == 404:
            hint = "check the model or deployment name in the spec"
        else:
            hint = "the request was rejected; check the model name, options and input size"
        return EmbedderUnavailable(f"{self.model_id}: {reason}", hint=hint)
