"""Queries longer than the model's window: embedded in windows and combined, not cut.

A model embeds at most ``max_tokens`` tokens; the tokenizer silently drops the rest. Documents
are chunked to fit, but a pasted question of 500 tokens with the real question at its end used
to embed to exactly the vector of its opening part. :func:`embed_query_windows` cuts such a query
at token boundaries into consecutive windows of at most ``max_tokens`` tokens, embeds each as a
query, and combines them by their token-weighted mean, re-normalised to unit length: the same
rule API providers' oversized texts follow (``semsearch.embedders.remote``). Every part of the
query then counts in proportion to its length.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from semsearch.embedders.base import Embedder

__all__ = ["QueryVector", "embed_query_windows"]


@dataclass(frozen=True)
class QueryVector:
    """A query's vector and how it was made.

    Attributes:
        vector: float32[dim], unit-normalised.
        windows: how many windows were embedded (1 when the query fits the window).
        tokens: the query's token count under the model's tokenizer (specials excluded).
    """

    vector: NDArray[np.float32]
    windows: int
    tokens: int

    def note(self, window: int) -> str | None:
        """One sentence for ``SearchResult.notes`` when the query was windowed, else None."""
        if self.windows <= 1:
            return None
        return (
            f"the query is {self.tokens} tokens, longer than the model's window of {window}: "
            f"embedded in {self.windows} windows and combined (token-weighted mean)"
        )


def embed_query_windows(embedder: Embedder, text: str) -> QueryVector:
    """Embed ``text`` as a query, in windows of ``embedder.max_tokens`` tokens when longer.

    Returns:
        The unit-normalised float32[dim] vector: ``embed_query(text)`` when it fits, else the
        token-weighted mean of the windows' query vectors, re-normalised.
    Raises:
        EmbedderUnavailable: the embedder fails on any window.
    """
    spans = embedder.token_spans(text)
    limit = max(1, embedder.max_tokens)
    if len(spans) <= limit:
        return QueryVector(embedder.embed_query(text), 1, len(spans))
    vectors, weights = [], []
    for first in range(0, len(spans), limit):
        group = spans[first : first + limit]
        vectors.append(embedder.embed_query(text[group[0][0] : group[-1][1]]))
        weights.append(len(group))
    mean = np.average(np.stack(vectors), axis=0, weights=np.asarray(weights, dtype=np.float64))
    norm = float(np.linalg.norm(mean))
    combined = (mean / norm if norm > 1e-12 else vectors[0]).astype(np.float32)
    return QueryVector(combined, len(vectors), len(spans))
