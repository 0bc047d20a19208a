"""Exact nearest-neighbour search over an in-memory float32 matrix (a derived cache).

The cache is rebuilt from the store whenever the collection's change counter moves, so another
process's writes are seen by the next search.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

__all__ = ["VectorMatrix", "clamp_cosine", "dot_rows", "top_k"]

#: Rows upcast at a time by :func:`dot_rows` (24 MiB of float32 at 384-d): bounds the memory
#: a scan of float16 rows takes, instead of a float32 copy of the whole matrix.
_BLOCK = 16_384


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
    # np.minimum/np.maximum: the same values (NaN kept) without np.clip's Python-level wrapper
    return np.minimum(np.maximum(np.asarray(scores, dtype=np.float32), -1.0), 1.0)


def dot_rows(matrix: NDArray[np.floating], vector: NDArray[np.float32]) -> NDArray[np.float32]:
    """float32[n] dot products of each row of ``matrix`` with ``vector``.

    Args:
        matrix: float32 or float16 [n, dim] (e.g. a memory-mapped fp16 graph's codes); float16
            rows are upcast exactly to float32, a block at a time, before the product, so the
            result is the stored values' cosine with float32 arithmetic.
        vector: float32[dim].
    """
    if matrix.dtype == np.float32:
        return np.asarray(matrix @ vector, dtype=np.float32)
    out = np.empty(matrix.shape[0], np.float32)
    for start in range(0, matrix.shape[0], _BLOCK):
        block = np.asarray(matrix[start : start + _BLOCK], dtype=np.float32)
        out[start : start + block.shape[0]] = block @ vector
    return out


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
