"""The Embedder protocol and a base class that does the shared work.

Implementers subclass :class:`BaseEmbedder` and write ``_embed_batch(texts, kind)`` plus
``_load()``; batching, shape checks, NaN/Inf/zero rejection (per text: see :class:`BadVectors`)
and unit-normalisation live here once.
Spec strings (``local:…``, ``fake:…``, ``openai:…``) are turned into embedders by
:mod:`semsearch.embedders.registry`, which sits above every provider.
"""

from __future__ import annotations

import logging
from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import Literal, Protocol, runtime_checkable

import numpy as np
from numpy.typing import NDArray
from typing_extensions import TypeIs

from semsearch.errors import BadVectors, DimensionMismatch, EmbedderUnavailable
from semsearch.moved import forward
from semsearch.progress import batch_done

__all__ = [
    "BaseEmbedder",
    "EmbedKind",
    "Embedder",
    "check_rows",
]

log = logging.getLogger(__name__)

EmbedKind = Literal["query", "document"]
Vectors = NDArray[np.float32]


@runtime_checkable
class Embedder(Protocol):
    """What semsearch needs from an embedding model.

    Attributes:
        model_id: stable id stored with a collection, e.g. ``"sentence-transformers/all-MiniLM-L6-v2"``.
        dim: output dimension (e.g. 384).
        max_tokens: usable token window per text, special tokens excluded (e.g. 254).

    Optional: ``default_min_score`` (a cosine similarity in [-1, 1]), the threshold used when a
    search gives none; without it the model id's default applies
    (:func:`semsearch.embedders.thresholds.default_min_score`). ``min_score_is_guess`` (bool):
    whether that default is a guess, which searches then note
    (:func:`semsearch.embedders.thresholds.threshold_is_guess`).
    """

    @property
    def model_id(self) -> str: ...

    @property
    def dim(self) -> int: ...

    @property
    def max_tokens(self) -> int: ...

    def embed_documents(self, texts: Sequence[str]) -> Vectors:
        """float32[n, dim], unit-normalised rows; raises EmbedderUnavailable on bad output."""
        ...

    def embed_query(self, text: str) -> NDArray[np.float32]:
        """float32[dim], unit-normalised; raises EmbedderUnavailable on bad output."""
        ...

    def token_spans(self, text: str) -> list[tuple[int, int]]:
        """Char offsets of each token of ``text`` under the model's tokenizer, specials excluded."""
        ...


@runtime_checkable
class LateChunking(Protocol):
    """An optional embedder capability: vectors of spans of a text from that text's own
    forward pass ("late chunking", Günther et al. 2024, arXiv:2409.04701).

    Sentence windows use it (:mod:`semsearch.windows`) to skip a second pass through the
    model. ``late_chunking`` is False when this model cannot (not mean pooling, torch engine,
    an API model), and then callers embed spans as texts of their own.
    """

    @property
    def late_chunking(self) -> bool: ...

    def embed_documents_late(
        self,
        texts: Sequence[str],
        spans: Sequence[Sequence[tuple[int, int]]],
        shared: Sequence[int] | None = None,
    ) -> tuple[Vectors, list[Vectors | None]]:
        """(float32[n, dim] as :meth:`Embedder.embed_documents` gives them, unit-normalised;
        per text float32[len(spans[i]), dim] unit-normalised, or None where that text's spans
        could not be pooled). ``spans[i]`` are char offsets into ``texts[i]``, end exclusive.
        Raises what ``embed_documents`` raises."""
        ...


def late_chunking(embedder: object) -> TypeIs[LateChunking]:
    """True when ``embedder`` can embed spans from their text's forward pass (:class:`LateChunking`)."""
    return isinstance(embedder, LateChunking) and bool(embedder.late_chunking)


class BaseEmbedder(ABC):
    """Shared batching and validation. Subclasses write ``_embed_batch`` and the three properties.

    Args:
        batch_size: texts per call to ``_embed_batch`` (default 32).
    """

    model_id: str = ""

    def __init__(self, batch_size: int = 32) -> None:
        self.batch_size = batch_size

    @property
    def default_min_score(self) -> float:
        """The cosine similarity in [-1, 1] below which semantic hits are dropped by default,
        calibrated per model (:mod:`semsearch.embedders.thresholds`); override to set your own."""
        from semsearch.embedders.thresholds import model_default

        return model_default(self.model_id)

    @property
    def min_score_is_guess(self) -> bool:
        """True when :attr:`default_min_score` is a guess: the fallback for a model that no
        table names (:mod:`semsearch.embedders.thresholds`). A subclass that sets its own
        ``default_min_score`` is not guessing."""
        from semsearch.embedders.thresholds import model_threshold

        if type(self).default_min_score is not BaseEmbedder.default_min_score:
            return False
        return model_threshold(self.model_id).guess

    def check_configured(self) -> None:
        """Checks that need no model load and no network, run before a collection is created
        with this embedder, so that a spec naming nothing never leaves a collection behind.
        The default checks nothing; raise EmbedderUnavailable with a hint to refuse."""
        return None

    @property
    @abstractmethod
    def dim(self) -> int: ...

    @property
    @abstractmethod
    def max_tokens(self) -> int: ...

    @abstractmethod
    def _embed_batch(self, texts: list[str], kind: EmbedKind) -> NDArray[np.floating]:
        """Raw vectors for ``texts``: any float dtype, shape [len(texts), dim]."""

    @abstractmethod
    def token_spans(self, text: str) -> list[tuple[int, int]]: ...

    def embed_documents(self, texts: Sequence[str]) -> Vectors:
        """Embed documents in batches of ``batch_size``, telling :func:`semsearch.progress.batch_done`
        after each (so a progress display moves within one long call).

        Returns:
            float32[len(texts), dim], every row unit-normalised (L2 norm 1).
        Raises:
            BadVectors: the model returned NaN, Inf or a zero vector for some texts; the
                exception carries every other text's vector (all batches are embedded).
            EmbedderUnavailable: the model failed or returned a wrong shape.
        """
        out = np.empty((len(texts), self.dim), dtype=np.float32)
        bad: dict[int, str] = {}
        poison: BadVectors | None = None
        for start in range(0, len(texts), self.batch_size):
            batch = list(texts[start : start + self.batch_size])
            try:
                out[start : start + len(batch)] = self._checked(batch, "document")
            except BadVectors as exc:  # the other texts (and batches) still count
                out[start : start + len(batch)] = exc.vectors
                bad |= {start + i: why for i, why in exc.bad.items()}
                poison = exc
            batch_done(len(batch))
        if poison is not None:
            first = min(bad)
            raise BadVectors(
                f"model {self.model_id} {bad[first]} for {len(bad)} of {len(texts)} texts; "
                "those were not stored",
                out,
                bad,
                hint=poison.hint,
            )
        return out

    def embed_query(self, text: str) -> NDArray[np.float32]:
        """Embed one query: float32[dim], unit-normalised. Raises EmbedderUnavailable on bad output."""
        vector: NDArray[np.float32] = self._checked([text], "query")[0]
        return vector

    def _checked(self, texts: list[str], kind: EmbedKind) -> Vectors:
        raw = np.asarray(self._embed_batch(texts, kind))
        return validate_vectors(raw, len(texts), self.dim, self.model_id)


def validate_vectors(raw: NDArray[np.floating], n: int, dim: int, model_id: str) -> Vectors:
    """Check a model's output and return it unit-normalised as float32[n, dim].

    Raises:
        DimensionMismatch: the model returned another dimension than ``dim``.
        EmbedderUnavailable: wrong row count.
        BadVectors: some rows have NaN, Inf or zero norm; it carries the good rows
            (normalised) and why each bad row was refused, so callers can store the rest.
    """
    vectors, bad = check_rows(raw, n, dim, model_id)
    if bad:
        first = min(bad)
        raise BadVectors(
            f"model {model_id} {bad[first]} for {len(bad)} of {n} texts; those were not stored",
            vectors,
            bad,
            hint="a corrupted model gives non-finite output; a text the model cannot embed "
            "fails alone and is listed as failed",
        )
    return vectors


def check_rows(
    raw: NDArray[np.floating], n: int, dim: int, model_id: str
) -> tuple[Vectors, dict[int, str]]:
    """Per-row check of a model's output: the usable rows unit-normalised, and why the others
    are not.

    Returns:
        (float32[n, dim] with unusable rows set to zero, ``{row: reason}`` for each row that
        has NaN or Inf values or zero norm; empty when every row is usable).
    Raises:
        DimensionMismatch: another dimension than ``dim``.
        EmbedderUnavailable: not one row per text.
    """
    if raw.ndim != 2 or raw.shape[0] != n:
        raise EmbedderUnavailable(
            f"model {model_id} returned shape {raw.shape} for {n} texts",
            hint="check the model; expected one vector per text",
        )
    if raw.shape[1] != dim:
        raise DimensionMismatch(
            f"model {model_id} returned {raw.shape[1]}-d vectors, expected {dim}-d",
            hint="the collection was built with another dimension; use the same model",
        )
    vectors = raw.astype(np.float32, copy=True)
    finite = np.isfinite(vectors).all(axis=1)
    vectors[~finite] = 0.0
    norms = np.linalg.norm(vectors, axis=1)
    zero = finite & (norms < 1e-12)
    bad = {int(i): "returned NaN or Inf values" for i in np.flatnonzero(~finite)}
    bad |= {int(i): "returned a zero vector (no direction)" for i in np.flatnonzero(zero)}
    good = ~(zero | ~finite)
    vectors[good] /= norms[good, None]
    vectors[~good] = 0.0
    return vectors, bad


# resolve_embedder and register_provider moved to the registry, which sits above every provider.
__getattr__ = forward(
    __name__,
    {
        "resolve_embedder": "semsearch.embedders.registry",
        "register_provider": "semsearch.embedders.registry",
    },
)
