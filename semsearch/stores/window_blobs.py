"""The byte layout of a chunk's sentence windows, shared by the stores that keep them as blobs
(SQLite ``BLOB``, PostgreSQL ``bytea``, Milvus base64 text): see docs/storage.md.

- spans: int32[m, 2] little-endian, ``(start, end)`` char offsets into the chunk's text;
- vectors, written since SQLite format 7 / PostgreSQL format 2: the two bytes ``08 7f``, then
  int8[m, dim] row-major, each row a window's unit vector scaled so that its largest component
  is ±127 and rounded. The scale is not stored: a unit vector is its direction, so a row is
  decoded (to float32) as ``codes / ||codes||``. That is half the bytes of float16; the
  rounding moves a window's cosine with a unit query by about 4.5e-4 (sd) at 384 dimensions,
  at most about 2e-3 (tests/unit/test_window_blobs.py);
- vectors written before: float16[m, dim] little-endian, row-major. Such a blob never starts
  with ``08 7f``: that is the float16 ``0x7f08``, a NaN, and window vectors are finite unit
  vectors. Both layouts are read, also mixed in one collection.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
from numpy.typing import NDArray

from semsearch.errors import StoreCorrupted
from semsearch.stores.base import WindowSet

__all__ = ["INT8_HEADER", "pack_windows", "unpack_many", "unpack_windows"]

#: The first bytes of an int8 vectors blob (a float16 NaN, which no float16 blob starts with).
INT8_HEADER = b"\x08\x7f"
_DAMAGED_HINT = "re-index the collection (`semsearch reindex`) or restore a backup"


def pack_windows(windows: WindowSet) -> tuple[bytes, bytes]:
    """``(spans blob, vectors blob)`` of ``windows``, vectors as int8 codes (module docstring)."""
    spans = np.ascontiguousarray(windows.spans, dtype="<i4")
    vectors = np.asarray(windows.vectors, dtype=np.float32)
    peak = np.abs(vectors).max(axis=1, keepdims=True)
    scaled = vectors * (127.0 / np.where(peak > 0, peak, 1.0))
    codes = np.clip(np.rint(scaled), -127, 127).astype(np.int8)
    return spans.tobytes(), INT8_HEADER + codes.tobytes()


def _layout(spans: bytes, vectors: bytes) -> tuple[int, int, bool]:
    """``(m, dim, int8?)`` of a row's blobs, m >= 1.

    Raises:
        StoreCorrupted: the blobs' sizes do not fit either layout.
    """
    m = len(spans) // 8
    coded = vectors[:2] == INT8_HEADER
    payload = len(vectors) - 2 if coded else len(vectors)
    per_value = 1 if coded else 2
    if m == 0 or len(spans) % 8 or payload % (per_value * m) or payload == 0:
        raise StoreCorrupted(
            f"a chunk's sentence windows are damaged ({len(spans)} span bytes, "
            f"{len(vectors)} vector bytes)",
            hint=_DAMAGED_HINT,
        )
    return m, payload // (per_value * m), coded


def _decoded(codes: NDArray[np.int8]) -> NDArray[np.float32]:
    """int8[n, dim] codes as unit float32[n, dim] (an all-zero row stays zero). float32, not
    float16: the cast to float16 cost 5x the decoding, and rescoring computes in float32."""
    rows = codes.astype(np.float32)
    norms = np.sqrt(np.einsum("ij,ij->i", rows, rows))
    rows *= (1.0 / np.where(norms > 0, norms, 1.0))[:, None]
    return rows


def unpack_windows(spans: bytes, vectors: bytes) -> WindowSet:
    """The WindowSet stored as ``(spans, vectors)`` blobs, in either layout.

    Raises:
        StoreCorrupted: the blobs' sizes do not fit the layout.
    """
    return unpack_many([(0, spans, vectors)])[0]


def unpack_many(rows: Iterable[tuple[int, bytes, bytes]]) -> dict[int, WindowSet]:
    """``{chunk id: WindowSet}`` of ``(chunk id, spans blob, vectors blob)`` rows, decoded in
    one pass per layout: each WindowSet is a view into arrays shared by all rows (a search
    rescoring 200 records reads about 300 chunks; decoding them one by one cost about 0.6 ms).

    Raises:
        StoreCorrupted: a row's blobs do not fit the layout, or rows differ in dimension.
    """
    width = 0
    # per layout (int8?): chunk ids, window counts, span blobs, vector payloads
    parts: dict[bool, tuple[list[int], list[int], list[bytes], list[bytes]]] = {
        True: ([], [], [], []),
        False: ([], [], [], []),
    }
    for chunk_id, spans, vectors in rows:
        m, dim, coded = _layout(spans, vectors)
        if width == 0:
            width = dim
        elif dim != width:
            raise StoreCorrupted(
                f"chunk {chunk_id}'s sentence windows have another dimension than the others",
                hint=_DAMAGED_HINT,
            )
        ids, counts, span_parts, vector_parts = parts[coded]
        ids.append(int(chunk_id))
        counts.append(m)
        span_parts.append(spans)
        vector_parts.append(vectors[2:] if coded else vectors)
    out: dict[int, WindowSet] = {}
    for coded, (ids, counts, span_parts, vector_parts) in parts.items():
        if not ids:
            continue
        joined = b"".join(span_parts)
        all_spans = np.frombuffer(joined, dtype="<i4").astype(np.int32).reshape(-1, 2)
        payload = b"".join(vector_parts)
        all_vectors: NDArray[np.floating]
        if coded:
            all_vectors = _decoded(np.frombuffer(payload, dtype=np.int8).reshape(-1, width))
        else:
            all_vectors = np.frombuffer(payload, dtype="<f2").astype(np.float16)
            all_vectors = all_vectors.reshape(-1, width)
        start = 0
        for chunk_id, end in zip(ids, np.cumsum(counts).tolist(), strict=True):
            out[chunk_id] = WindowSet(all_spans[start:end], all_vectors[start:end])
            start = end
    return out
