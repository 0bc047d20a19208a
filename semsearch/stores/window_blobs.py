"""The byte layout of a chunk's sentence windows, shared by the stores that keep them as blobs
(SQLite ``BLOB``, PostgreSQL ``bytea``): see docs/storage.md.

- spans: int32[m, 2] little-endian, ``(start, end)`` char offsets into the chunk's text;
- vectors: float16[m, dim] little-endian, row-major, one unit vector per window.
"""

from __future__ import annotations

import numpy as np

from semsearch.errors import StoreCorrupted
from semsearch.stores.base import WindowSet

__all__ = ["pack_windows", "unpack_windows"]


def pack_windows(windows: WindowSet) -> tuple[bytes, bytes]:
    """``(spans blob, vectors blob)`` of ``windows``."""
    spans = np.ascontiguousarray(windows.spans, dtype="<i4")
    vectors = np.ascontiguousarray(windows.vectors, dtype="<f2")
    return spans.tobytes(), vectors.tobytes()


def unpack_windows(spans: bytes, vectors: bytes) -> WindowSet:
    """The WindowSet stored as ``(spans, vectors)`` blobs.

    Raises:
        StoreCorrupted: the blobs' sizes do not fit the layout.
    """
    m = len(spans) // 8
    if m == 0 or len(spans) % 8 or len(vectors) % (2 * m):
        raise StoreCorrupted(
            f"a chunk's sentence windows are damaged ({len(spans)} span bytes, "
            f"{len(vectors)} vector bytes)",
            hint="re-index the collection (`semsearch reindex`) or restore a backup",
        )
    span_rows = np.frombuffer(spans, dtype="<i4").reshape(m, 2).astype(np.int32)
    vector_rows = np.frombuffer(vectors, dtype="<f2").reshape(m, -1).astype(np.float16)
    return WindowSet(span_rows, vector_rows)
