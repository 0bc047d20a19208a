"""Exact nearest-neighbour search over an in-memory float32 matrix (a derived cache).

The cache is rebuilt from the store whenever the collection's change counter moves, so another
process's writes are seen by the next search.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

__all__ = ["VectorMatrix", "clamp_cosine", "top_k"]


@dataclass(frozen=True)
class VectorMatrix:
    """One collection's embedded chunks, row-aligned.

    Attributes:
        version: the collection change counter this snapshot reflects.
        chunk_ids: int64[n] store chunk ids.
        record_rowids: int64[n] store row ids of each chunk's record.
        record_ids: the record id (str) of each row.
        matrix: float32[n, dim], unit-normalised rows.
    """

    version: int
    chunk_ids: NDArray[np.int64]
    record_rowids: NDArray[np.int64]
    record_ids: list[str]
    matrix: NDArray[np.float32]


def clamp_cosine(scores: NDArray[np.floating]) -> NDArray[np.float32]:
    """Dot products of unit vectors as cosine similarities: float32, clipped to [-1, 1].

    float32 rounding lets the dot product of two unit vectors pointing the same way come out
    as 1.0000007 (and -1.0000007 for opposite ones); every cosine score the exact scan and the
    HNSW graph make passes through here, once, so the documented range holds.
    """
    return np.clip(np.asarray(scores, dtype=np.float32), -1.0, 1.0)


def top_k(
    matrix: NDArray[np.float32],
    vector: NDArray[np.float32],
    k: int,
    mask: NDArray[np.bool_] | None = None,
) -> tuple[NDArray[np.int64], NDArray[np.float32]]:
    """Indices and scores of the ``k`` rows with the highest dot product with ``vector``.

    Args:
        matrix: float32[n, dim], unit-normalised, so the dot product is cosine similarity.
        vector: float32[dim], unit-normalised.
        k: how many rows to return (fewer if fewer rows, or fewer pass ``mask``).
        mask: bool[n]; rows where it is False are never returned.
    Returns:
        (indices int64[m], scores float32[m] in [-1, 1]) with m <= k, best first (order among equal scores
        is settled by the caller, which breaks ties by record id).
    """
    if matrix.shape[0] == 0 or k <= 0:
        return np.empty(0, dtype=np.int64), np.empty(0, dtype=np.float32)
    if mask is not None:
        candidates = np.flatnonzero(mask)
        scores = matrix[candidates] @ vector
    else:
        candidates = None
        scores = matrix @ vector
    m = min(k, scores.shape[0])
    if m == 0:
        return np.empty(0, dtype=np.int64), np.empty(0, dtype=np.float32)
    part = np.argpartition(-scores, m - 1)[:m] if m < scores.shape[0] else np.arange(m)
    order = part[np.argsort(-scores[part], kind="stable")]
    rows = order if candidates is None else candidates[order]
    return rows.astype(np.int64), clamp_cosine(scores[order])
