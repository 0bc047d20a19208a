"""What every store does the same way when it writes: the dimension check of new vectors, and
the chunk identity that decides whether an updated record keeps its stored chunk rows.
"""

from __future__ import annotations

from typing import Any

from semsearch.errors import DimensionMismatch
from semsearch.stores.base import RecordWrite

__all__ = ["check_vectors_dim", "chunk_key"]


def check_vectors_dim(collection: str, stored: int | None, dim: int) -> None:
    """Refuse ``dim``-d vectors for a collection that holds ``stored``-d ones (None: it holds
    none yet, and the first vectors fix its dimension).

    Raises:
        DimensionMismatch: ``dim != stored``; callers check before writing anything.
    """
    if stored is not None and int(stored) != dim:
        raise DimensionMismatch(
            f"collection {collection!r} holds {stored}-d vectors; got {dim}-d",
            hint="use the model the collection was built with",
        )


def chunk_key(record: RecordWrite) -> list[tuple[Any, ...]]:
    """Per chunk, in order: ``(content_hash, ordinal, char_start, char_end, line_start,
    line_end)``. An updated record whose key equals its stored chunks' (only non-text fields
    changed) keeps its chunk rows and their vectors."""
    return [
        (c.content_hash, c.chunk.ordinal, c.chunk.char_start, c.chunk.char_end,
         c.chunk.line_start, c.chunk.line_end)
        for c in record.chunks
    ]  # fmt: skip
