"""Vectors another index already holds, reused by text: an embedder that answers the texts it
has vectors for from a table and asks its model for the rest.

``semsearch eval --location`` builds the same corpus in another store; with the cached SQLite
index of that corpus and model at hand, its chunks' vectors are read from there
(:func:`vectors_by_text`) instead of being embedded again, so the stores compare on the same
vectors (and a SciFact run takes seconds rather than ten minutes). Texts the table lacks (a
chunk the other index did not embed, sentence windows) go to the model.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol

import numpy as np
from numpy.typing import NDArray

from semsearch.chunking import embedding_text
from semsearch.embedders.base import Embedder
from semsearch.results import Chunk, Record

__all__ = ["ChunkSource", "TableEmbedder", "vectors_by_text"]


class ChunkSource(Protocol):
    """What :func:`vectors_by_text` reads: a collection's records, its chunker, its vectors
    (``semsearch.Collection`` has them)."""

    def ids(self) -> list[str]: ...

    def get(self, ids: str | Sequence[str]) -> list[Record]: ...

    def chunk(self, text: str, fields: Mapping[str, Any] | None = None) -> list[Chunk]: ...

    def vectors(self, ids: str | Sequence[str]) -> dict[str, list[NDArray[np.float32] | None]]: ...


def vectors_by_text(source: ChunkSource, batch: int = 500) -> dict[str, NDArray[np.float32]]:
    """``{embedding text: vector}`` of every embedded chunk of ``source``: its records chunked
    again (same chunker, so the same chunks by ordinal), each chunk's text as the model was
    given it (:func:`semsearch.chunking.embedding_text`) with its stored vector, float32[dim]."""
    table: dict[str, NDArray[np.float32]] = {}
    ids = source.ids()
    for start in range(0, len(ids), batch):
        wanted = ids[start : start + batch]
        vectors = source.vectors(wanted)
        for record in source.get(wanted):
            chunks = source.chunk(record.text, record.fields)
            for chunk, vector in zip(chunks, vectors.get(record.id, []), strict=False):
                if vector is not None:
                    table[embedding_text(chunk.text, chunk.heading_path)] = vector
    return table


class TableEmbedder:
    """``inner`` with the vectors of ``table`` (``{text: float32[dim]}``, unit-normalised)
    reused: texts found there are not embedded again. Same model id, dimension, token window
    and tokenizer as ``inner`` (the collection sees the same model); queries always go to
    ``inner``.

    Attributes:
        reused, embedded: texts answered from the table and by the model so far.
    """

    def __init__(self, inner: Embedder, table: Mapping[str, NDArray[np.float32]]) -> None:
        self.inner = inner
        self.table = table
        self.reused = 0
        self.embedded = 0

    @property
    def model_id(self) -> str:
        return self.inner.model_id

    @property
    def dim(self) -> int:
        return int(self.inner.dim)

    @property
    def max_tokens(self) -> int:
        return int(self.inner.max_tokens)

    def __getattr__(self, name: str) -> Any:  # default_min_score, min_score_is_guess, ...
        return getattr(self.inner, name)

    def token_spans(self, text: str) -> list[tuple[int, int]]:
        """The model's token spans of ``text``."""
        return list(self.inner.token_spans(text))

    def embed_documents(self, texts: Sequence[str]) -> NDArray[np.float32]:
        """float32[n, dim]: the table's vector of each text it holds, the model's for the
        others (one call for all of them)."""
        missing = list(dict.fromkeys(t for t in texts if t not in self.table))
        fresh = (
            dict(zip(missing, self.inner.embed_documents(missing), strict=True)) if missing else {}
        )
        self.embedded += len(missing)
        self.reused += len(texts) - sum(1 for t in texts if t in fresh)
        rows = [self.table[t] if t in self.table else fresh[t] for t in texts]
        return np.asarray(rows, dtype=np.float32).reshape(len(texts), self.dim)

    def embed_query(self, text: str) -> NDArray[np.float32]:
        """The model's query vector (never from the table)."""
        return self.inner.embed_query(text)
