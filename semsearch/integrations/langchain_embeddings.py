"""Embedders across the LangChain boundary, both ways.

- :class:`LangChainEmbedder` wraps a LangChain ``Embeddings`` object as a semsearch embedder with
  a ``model_id``, so the id is stored with the collection and a later open with another model
  raises ModelMismatch, as for any semsearch embedder.
- :class:`SemsearchEmbeddings` shows a semsearch embedder to LangChain as ``Embeddings``.
"""

from __future__ import annotations

import threading
from typing import Any

import numpy as np
from langchain_core.embeddings import Embeddings
from numpy.typing import NDArray

from semsearch.embedders.base import BaseEmbedder, Embedder, EmbedKind
from semsearch.embedders.remote import approx_token_spans
from semsearch.errors import EmbedderUnavailable, InvalidRecord, SemsearchError
from semsearch.validation import check_text

__all__ = ["LangChainEmbedder", "SemsearchEmbeddings", "langchain_model_id"]

_MODEL_ATTRIBUTES = ("model", "model_name", "model_id", "deployment")


def langchain_model_id(embeddings: Embeddings) -> str:
    """``langchain:<module>.<class>``, plus ``/<model>`` when the object names its model in one
    of the attributes ``model``, ``model_name``, ``model_id`` or ``deployment`` (as
    OpenAIEmbeddings, HuggingFaceEmbeddings and most others do)."""
    kind = type(embeddings)
    base = f"langchain:{kind.__module__}.{kind.__qualname__}"
    for name in _MODEL_ATTRIBUTES:
        value = getattr(embeddings, name, None)
        if isinstance(value, str) and value:
            return f"{base}/{value}"
    return base


class LangChainEmbedder(BaseEmbedder):
    """A LangChain ``Embeddings`` object as a semsearch embedder.

    Args:
        embeddings: any LangChain ``Embeddings``.
        model_id: the id stored with the collection; default :func:`langchain_model_id`. Give
            your own when the object does not name its model (two objects of one class with
            different models would otherwise share an id).
        dim: the output dimension; None probes it with one ``embed_query`` call on first use.
        max_tokens: the chunker's window in approximate tokens (about 4 characters each, see
            :func:`semsearch.embedders.remote.approx_token_spans`); longer texts are chunked.
        batch_size: texts per ``embed_documents`` call.
    Raises:
        EmbedderUnavailable: (when embedding) the LangChain object raised, or returned other
            than one vector per text.
    """

    def __init__(
        self,
        embeddings: Embeddings,
        *,
        model_id: str | None = None,
        dim: int | None = None,
        max_tokens: int = 256,
        batch_size: int = 32,
    ) -> None:
        super().__init__(batch_size=batch_size)
        self.embeddings = embeddings
        self.model_id = model_id or langchain_model_id(embeddings)
        self._dim = dim
        self._max_tokens = max_tokens
        self._lock = threading.Lock()

    @property
    def dim(self) -> int:
        """Output dimension: as given, or probed once with ``embed_query`` and cached."""
        if self._dim is None:
            with self._lock:
                if self._dim is None:
                    self._dim = len(self._call(lambda: [self.embeddings.embed_query("probe")])[0])
        return self._dim

    @property
    def max_tokens(self) -> int:
        return self._max_tokens

    def token_spans(self, text: str) -> list[tuple[int, int]]:
        """Approximate token offsets (the LangChain object's tokenizer is unknown)."""
        return approx_token_spans(text)

    def _embed_batch(self, texts: list[str], kind: EmbedKind) -> NDArray[np.floating]:
        if kind == "query":
            rows = self._call(lambda: [self.embeddings.embed_query(t) for t in texts])
        else:
            rows = self._call(lambda: self.embeddings.embed_documents(texts))
        return np.asarray(rows, dtype=np.float64)

    def _call(self, run: Any) -> list[list[float]]:
        try:
            rows: list[list[float]] = run()
        except SemsearchError:
            raise
        except Exception as exc:  # any provider error: the records stay stored and pending
            raise EmbedderUnavailable(
                f"LangChain embeddings {self.model_id} failed: {type(exc).__name__}: {exc}",
                hint="fix the embeddings object, then run reindex",
            ) from exc
        return rows


class SemsearchEmbeddings(Embeddings):
    """A semsearch embedder as LangChain ``Embeddings``: unit-normalised float lists.

    Args:
        embedder: a semsearch embedder (e.g. ``collection.embedder``).
    """

    def __init__(self, embedder: Embedder) -> None:
        self.embedder = embedder

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        """float[len(texts)][dim], each row unit-normalised.

        Raises:
            InvalidRecord: a text that is not a str or not valid Unicode (a lone surrogate).
        """
        texts = list(texts)
        for i, text in enumerate(texts):
            check_text(f"texts[{i}]", text, InvalidRecord)
        vectors = self.embedder.embed_documents(texts)
        return [[float(x) for x in row] for row in vectors]

    def embed_query(self, text: str) -> list[float]:
        """float[dim], unit-normalised.

        Raises:
            InvalidQuery: ``text`` is not a str or not valid Unicode (a lone surrogate).
        """
        check_text("query", text)
        return [float(x) for x in self.embedder.embed_query(text)]


def as_embedder(embedding: Embeddings | Embedder | str | None, model_id: str | None) -> Any:
    """A semsearch embedder (or spec/None) for ``Database.collection``: a LangChain
    ``Embeddings`` is wrapped (a :class:`SemsearchEmbeddings` unwrapped), others pass through."""
    if isinstance(embedding, SemsearchEmbeddings):
        return embedding.embedder
    if isinstance(embedding, Embeddings):
        return LangChainEmbedder(embedding, model_id=model_id)
    return embedding
