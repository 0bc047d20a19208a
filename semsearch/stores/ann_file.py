"""The on-disk sidecar of the HNSW cache: one ``.ann`` file plus one faiss graph file.

Layout, for collection id ``C`` of ``notes.embed.db``:

- ``notes.embed.db.c<C>.ann``: the magic bytes ``SEMSANN1``, a little-endian uint32 header
  length, a JSON header, then 64-byte-aligned arrays: ``chunk_ids`` int64[n],
  ``record_rowids`` int64[n], ``alive`` uint8[n] (0 = tombstone) and, unless the graph keeps
  float32 vectors itself, ``vectors`` float32[n, dim]. The header records the collection's
  identity (name, created_at), the model id, dim, n, the change counter (``version``) and the
  last change-log sequence number (``last_seq``) the file reflects, the graph file's token,
  size and parameters, and the file's own total size.
- ``notes.embed.db.c<C>.<token>.hnsw``: a faiss ``IndexHNSWFlat``/``IndexHNSWSQ`` written by
  ``faiss.write_index``; graph id ``i`` is row ``i`` of the ``.ann`` arrays.

Both are written to a temporary name in the same folder and renamed into place (graph first,
then the ``.ann`` that names it), so a reader sees an old complete pair or a new complete pair.
Any mismatch (bad magic, wrong size, another model or collection) raises :class:`SidecarInvalid`
and the caller rebuilds from the SQLite file, which stays the source of truth.
"""

from __future__ import annotations

import glob
import json
import os
import struct
import time
import uuid
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

__all__ = [
    "Sidecar",
    "SidecarInvalid",
    "ann_path",
    "graph_path",
    "new_token",
    "read_sidecar",
    "remove_stale",
    "write_sidecar",
]

MAGIC = b"SEMSANN1"
FORMAT = 1
_ALIGN = 64


class SidecarInvalid(Exception):
    """The sidecar is missing, truncated, foreign or from another format; rebuild it."""


@dataclass
class Sidecar:
    """A sidecar's header and its arrays (memory-mapped when read).

    Attributes:
        header: the JSON header (see the module docstring).
        chunk_ids: int64[n]. record_rowids: int64[n]. alive: uint8[n], 0 for tombstones.
        vectors: float32[n, dim], or None when the graph holds the float32 vectors.
    """

    header: dict[str, Any]
    chunk_ids: NDArray[np.int64]
    record_rowids: NDArray[np.int64]
    alive: NDArray[np.uint8]
    vectors: NDArray[np.float32] | None


def ann_path(db_path: str, collection_id: int) -> str:
    """Path of a collection's ``.ann`` file next to the SQLite file."""
    return f"{db_path}.c{int(collection_id)}.ann"


def graph_path(db_path: str, collection_id: int, token: str) -> str:
    """Path of a collection's graph file for one build ``token`` (hex)."""
    return f"{db_path}.c{int(collection_id)}.{token}.hnsw"


def new_token() -> str:
    """A fresh random build token (16 hex digits)."""
    return uuid.uuid4().hex[:16]


def _temp(path: str) -> str:
    return f"{path}.tmp-{os.getpid()}-{uuid.uuid4().hex[:8]}"


def write_sidecar(path: str, header: dict[str, Any], arrays: dict[str, NDArray[Any]]) -> int:
    """Write header and arrays to a temporary file and rename it onto ``path`` atomically.

    Args:
        path: the ``.ann`` path.
        header: JSON-serialisable header; ``arrays`` and ``file_size`` are filled in here.
        arrays: name -> C-contiguous array, written in the given order.
    Returns:
        The file's size in bytes.
    Raises:
        OSError: the folder is not writable (the temporary file is removed).
    """
    layout: dict[str, Any] = {}
    offset = 0
    for name, arr in arrays.items():
        layout[name] = [offset, arr.dtype.str, list(arr.shape)]
        offset += _aligned(arr.nbytes)
    head = dict(header, format=FORMAT, arrays=layout)
    for _ in range(2):  # file_size depends on the header's own length
        blob = json.dumps(dict(head, file_size=head.get("file_size", 0))).encode()
        start = _aligned(len(MAGIC) + 4 + len(blob))
        head["file_size"] = start + offset
    blob = json.dumps(head).encode()
    tmp = _temp(path)
    try:
        with open(tmp, "wb") as out:
            out.write(MAGIC + struct.pack("<I", len(blob)) + blob)
            out.write(b"\0" * (start - len(MAGIC) - 4 - len(blob)))
            for arr in arrays.values():
                out.write(np.ascontiguousarray(arr).tobytes())
                out.write(b"\0" * (_aligned(arr.nbytes) - arr.nbytes))
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    return int(head["file_size"])


def _aligned(n: int) -> int:
    return (n + _ALIGN - 1) // _ALIGN * _ALIGN


def read_sidecar(path: str, expect: dict[str, Any]) -> Sidecar:
    """Memory-map a ``.ann`` file and check it against ``expect``.

    Args:
        path: the ``.ann`` path.
        expect: header values that must match (collection, created_at, model_id, dim).
    Raises:
        SidecarInvalid: missing, truncated, not a sidecar, another format, or a header value
            that differs from ``expect`` (the message says which).
    """
    try:
        with open(path, "rb") as f:
            magic = f.read(len(MAGIC) + 4)
            if len(magic) < len(MAGIC) + 4 or magic[: len(MAGIC)] != MAGIC:
                raise SidecarInvalid("not a semsearch ANN sidecar")
            (length,) = struct.unpack("<I", magic[len(MAGIC) :])
            header = json.loads(f.read(length))
        size = os.path.getsize(path)
    except FileNotFoundError as exc:
        raise SidecarInvalid("missing") from exc
    except (OSError, ValueError) as exc:
        raise SidecarInvalid(f"unreadable header ({exc})") from exc
    if not isinstance(header, dict) or header.get("format") != FORMAT:
        raise SidecarInvalid("another sidecar format")
    if header.get("file_size") != size:
        raise SidecarInvalid(f"truncated: {size} bytes, header says {header.get('file_size')}")
    for key, value in expect.items():
        if header.get(key) != value:
            raise SidecarInvalid(f"foreign: {key} is {header.get(key)!r}, expected {value!r}")
    start = _aligned(len(MAGIC) + 4 + length)
    arrays = {
        name: np.memmap(path, np.dtype(dtype), "r", start + off, tuple(shape))
        if int(np.prod(shape)) > 0
        else np.empty(tuple(shape), np.dtype(dtype))
        for name, (off, dtype, shape) in header["arrays"].items()
    }
    vectors = arrays.get("vectors")
    return Sidecar(
        header,
        arrays["chunk_ids"],
        arrays["record_rowids"],
        arrays["alive"],
        vectors,
    )


def remove_stale(
    db_path: str, collection_id: int, keep_token: str | None, tmp_age: float = 3600.0
) -> None:
    """Delete this collection's graph files other than ``keep_token``'s, and stale temp files.

    Another process may still have an old graph memory-mapped; on POSIX its mapping stays valid.
    If another process was between writing its graph and renaming the ``.ann`` naming it, the
    next reader finds that graph missing and rebuilds (logged), so the race only costs time.
    Temporary files younger than ``tmp_age`` seconds may be writes in progress and are kept.
    """
    prefix = f"{db_path}.c{int(collection_id)}."
    keep = graph_path(db_path, collection_id, keep_token) if keep_token else None
    for path in glob.glob(glob.escape(prefix) + "*"):
        try:
            if ".tmp-" in path:
                if time.time() - os.path.getmtime(path) >= tmp_age:
                    os.unlink(path)
            elif path.endswith(".hnsw") and path != keep:
                os.unlink(path)
        except OSError:
            pass
