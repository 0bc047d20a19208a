"""What every store does the same way when it writes: the shape and dimension checks of new
vectors, and the chunk identity that decides whether an updated record keeps its stored chunk
rows.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from semsearch.errors import DimensionMismatch
from semsearch.stores.base import RecordWrite

__all__ = ["check_vectors_dim", "checked_vectors", "chunk_key"]


def checked_vectors(collection: str, chunk_ids: Sequence[int], vectors: Any) -> NDArray[np.float32]:
    """``vectors`` as float32[len(chunk_ids), dim] (no copy when it already is one), after
    refusing what is not one row per chunk id: ``Store.set_vectors`` takes a 2-d array-like
    (numpy array or list of equal-length lists) with dim >= 1; no chunk ids with no values,
    whatever the shape, is nothing to write (an empty float32[0, 0]).

    Raises:
        DimensionMismatch: another shape (a 1-d vector, ragged rows, a count that differs
            from the chunk ids) or values that are not numbers; callers check before writing
            anything.
    """
    hint = (
        "pass one row per chunk id, e.g. vector.reshape(1, -1) for a single vector; "
        "nothing was written"
    )
    try:
        array = np.asarray(vectors, dtype=np.float32)
    except (TypeError, ValueError):  # ragged rows, words
        raise DimensionMismatch(
            f"vectors for collection {collection!r} are not a 2-d array of numbers [n, dim]",
            hint=hint,
        ) from None
    if len(chunk_ids) == 0 and array.size == 0:
        return np.empty((0, 0), np.float32)
    if array.ndim != 2 or array.shape[1] < 1:
        raise DimensionMismatch(
            f"vectors for collection {collection!r} must be a 2-d array [n, dim]; "
            f"got shape {array.shape}",
            hint=hint,
        )
    if array.shape[0] != len(chunk_ids):
        raise DimensionMismatch(
            f"{len(chunk_ids)} chunk ids but {array.shape[0]} vectors for collection "
            f"{collection!r}",
            hint="pass exactly one vector row per chunk id, in the same order; nothing was written",
        )
    return array


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
