"""The Reranker protocol, the score check every provider's output passes, and the registry.

A reranker rescores (query, text) pairs: ``rerank(query, texts) -> float32[len(texts)]``, each
score in [0, 1] (higher is more relevant) and meaningful on its own, not only within a query.
A local cross-encoder gives its logit through a sigmoid; the rerank APIs give their documented
``relevance_score``. Spec strings pick a provider as for embedders: ``local:<folder>``,
``cohere:<model>``, ``jina:<model>``, ``voyage:<model>`` (providers register a prefix with
:func:`register_reranker`; ``fake:`` is the test double).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Sequence
from typing import Protocol, runtime_checkable

import numpy as np
from numpy.typing import NDArray

from semsearch.errors import RerankerUnavailable

__all__ = [
    "Reranker",
    "check_scores",
    "register_reranker",
    "resolve_reranker",
    "sigmoid",
]

Scores = NDArray[np.float32]


@runtime_checkable
class Reranker(Protocol):
    """What semsearch needs from a reranker.

    Attributes:
        model_id: stable id, e.g. ``"local:/models/ms-marco-MiniLM-L6-v2"`` or
            ``"cohere:rerank-v3.5"``; named in ``SearchResult.reranked_by``.
        max_tokens: tokens of one (query, text) pair the model reads, special tokens included
            (longer pairs are truncated longest side first, or by the provider).
    """

    @property
    def model_id(self) -> str: ...

    @property
    def max_tokens(self) -> int: ...

    def rerank(self, query: str, texts: Sequence[str]) -> Scores:
        """float32[len(texts)] relevance scores in [0, 1], in the order of ``texts``.

        Raises:
            RerankerUnavailable (or another SemsearchError): the model cannot load or answer.
        """
        ...


def sigmoid(logits: NDArray[np.floating]) -> Scores:
    """1 / (1 + exp(-x)), float32, computed without overflow for large |x|."""
    x = np.asarray(logits, dtype=np.float64)
    small = np.exp(-np.abs(x))  # in (0, 1]: never overflows
    return np.where(x >= 0, 1.0 / (1.0 + small), small / (1.0 + small)).astype(np.float32)


def check_scores(raw: object, n: int, model_id: str) -> Scores:
    """A provider's scores as float32[n] in [0, 1].

    Raises:
        RerankerUnavailable: not ``n`` scores, or NaN/Inf among them. Finite values outside
            [0, 1] (a provider that drifts past its documented range) are clipped.
    """
    try:
        scores = np.asarray(raw, dtype=np.float32).reshape(-1)
    except (TypeError, ValueError):
        scores = np.empty(0, dtype=np.float32)
    if scores.shape[0] != n:
        raise RerankerUnavailable(
            f"reranker {model_id} returned {scores.shape[0]} scores for {n} texts",
            hint="the model or provider answered malformed output; try again or use another",
        )
    if not np.isfinite(scores).all():
        raise RerankerUnavailable(
            f"reranker {model_id} returned NaN or Inf scores",
            hint="a corrupted model gives non-finite output; check the model folder",
        )
    return np.clip(scores, 0.0, 1.0)


RerankerFactory = Callable[[str], Reranker]
_PROVIDERS: dict[str, RerankerFactory] = {}
_BUILTIN = {
    "local": ("semsearch.rerank.local", "LocalReranker"),
    "cohere": ("semsearch.rerank.api", "CohereReranker"),
    "jina": ("semsearch.rerank.api", "JinaReranker"),
    "voyage": ("semsearch.rerank.api", "VoyageReranker"),
    "fake": ("semsearch.rerank.fake", "FakeReranker"),
}


def register_reranker(prefix: str, factory: RerankerFactory) -> None:
    """Register ``factory(name)`` for reranker specs ``"<prefix>:<name>"``."""
    _PROVIDERS[prefix] = factory


def resolve_reranker(spec: str | Reranker) -> Reranker:
    """Turn a spec string into a Reranker (nothing is loaded or called until the first rerank).

    Args:
        spec: a Reranker (returned as is), or ``"local:<cross-encoder folder>"``,
            ``"cohere:<model>"``, ``"jina:<model>"``, ``"voyage:<model>"`` (options after
            ``?``, see docs/retrieval.md), ``"fake:"`` (tests).
    Raises:
        RerankerUnavailable: no provider prefix, an unknown one, or no model name; a ``local:``
            folder that does not exist or holds no one-label cross-encoder.
    """
    if not isinstance(spec, str):
        return spec
    prefix, sep, name = spec.strip().partition(":")
    factory = _PROVIDERS.get(prefix)
    if factory is None and sep and prefix in _BUILTIN:
        module, cls = _BUILTIN[prefix]
        factory = getattr(importlib.import_module(module), cls).from_spec
    if factory is None or not sep:
        known = ", ".join(f"'{p}:'" for p in sorted({*_BUILTIN, *_PROVIDERS} - {"fake"}))
        raise RerankerUnavailable(
            f"unknown reranker {spec!r}",
            hint=f"name a provider: {known}, e.g. 'local:/models/ms-marco-MiniLM-L6-v2' or "
            "'cohere:rerank-v3.5'",
        )
    if not name.partition("?")[0].strip() and prefix != "fake":
        raise RerankerUnavailable(
            f"no model named in the reranker spec {spec!r}", hint=f"e.g. '{prefix}:<model>'"
        )
    return factory(name)
