"""The on-disk sidecar of the HNSW cache: one ``.ann`` file plus one faiss graph file.

Layout, for collection id ``C`` of ``notes.embed.db``:

- ``notes.embed.db.c<C>.ann``: the magic bytes ``SEMSANN1``, a little-endian uint32 header
  length, a JSON header, then 64-byte-aligned arrays: ``chunk_ids`` int64[n],
  ``record_rowids`` int64[n] and ``alive`` uint8[n] (0 = tombstone): no vectors (format 2
  kept a float32 ``vectors`` array for int8/fp16 graphs; an int8 graph now rescores from the
  SQLite file). The header records
  the collection's identity (name, created_at, the precision of the SQLite file's vectors),
  the model id, dim, n, the change counter (``version``) and the
  last change-log sequence number (``last_seq``) the file reflects, the graph file's token,
  size and parameters, the file's own total size, and a CRC-32 of each integer array
  (``crc32``: chunk ids, record rowids, live flags), checked on every open: damaged bytes in
  them would route hits to the wrong chunks or blow up the row-id lookup table.
- ``notes.embed.db.c<C>.<token>.hnsw``: a faiss ``IndexHNSWSQ`` (fp16 by default, or int8) or
  ``IndexHNSWFlat`` written by ``faiss.write_index``; graph id ``i`` is row ``i`` of the
  ``.ann`` arrays. An fp16 graph's codes are the SQLite file's float16 vectors bit for bit, so
  from format 4 the graph file of a float16 SQLite file is written without them (faiss
  ``IO_FLAG_SKIP_STORAGE``; header ``graph.codes_in_sqlite``): on open they are read back from
  the SQLite file into memory, in graph row order, in the read transaction that catches up,
  so the vectors are on disk once. A format-3 graph file (codes included) is memory-mapped as
  it is, and replaced only when the graph is next rebuilt or merged. Beside a graph without
  codes in a SQLite file of format 6 (vectors packed in blocks), the ``.ann`` file also holds
  ``slots`` int64[n] (each row's chunk's ``vector_slot``, -1 for none; CRC-checked), so the
  codes are read block by block, not chunk row by chunk row.

Both are written to a temporary name in the same folder and renamed into place (graph first,
then the ``.ann`` that names it), so a reader sees an old complete pair or a new complete pair.
Any mismatch (bad magic, wrong size, another model or collection, a checksum that fails)
raises :class:`SidecarInvalid` and the caller rebuilds from the SQLite file, which stays the
source of truth. Temporary files are named ``<final name>.tmp-<pid>[-<hex>]``; those whose
writing process is gone (killed mid-write) are removed by :func:`remove_dead_temps`.
"""

from __future__ import annotations

import glob
import json
import os
import struct
import time
import uuid
import zlib
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from semsearch import atomic_file

__all__ = [
    "Sidecar",
    "SidecarInvalid",
    "ann_path",
    "graph_path",
    "new_token",
    "read_header",
    "read_sidecar",
    "remove_dead_temps",
    "remove_stale",
    "write_sidecar",
]

MAGIC = b"SEMSANN1"
# 2: per-array CRC-32 in the header; 3: no vectors array, fp16 graphs by default (older
# files are rebuilt once, never read); 4: an fp16 graph file may leave its codes to the SQLite
# file (header ``graph.codes_in_sqlite``). Format-3 files are read as they are.
FORMAT = 4
READABLE = (3, 4)
_ALIGN = 64
#: Arrays whose CRC-32 is stored and checked (all that format 3 writes).
CHECKED = ("chunk_ids", "record_rowids", "alive")


class SidecarInvalid(Exception):
    """The sidecar is missing, truncated, foreign or from another format; rebuild it."""


@dataclass
class Sidecar:
    """A sidecar's header and its arrays (memory-mapped when read).

    Attributes:
        header: the JSON header (see the module docstring).
        chunk_ids: int64[n]. record_rowids: int64[n]. alive: uint8[n], 0 for tombstones.
        vectors: None (format 3 writes no vectors array; read only if a header names one).
        slots: int64[n] or None: each row's chunk's ``vector_slot`` in the SQLite file when
            the graph was saved (-1: none), written beside an fp16 graph without codes in a
            file of format 6, whose codes are then read block by block on open.
    """

    header: dict[str, Any]
    chunk_ids: NDArray[np.int64]
    record_rowids: NDArray[np.int64]
    alive: NDArray[np.uint8]
    vectors: NDArray[np.float16] | None
    slots: NDArray[np.int64] | None = None


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
    crcs = {name: _crc(arrays[name]) for name in (*CHECKED, "slots") if name in arrays}
    head = dict(header, format=FORMAT, arrays=layout, crc32=crcs)
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


def _crc(arr: NDArray[Any]) -> int:
    """CRC-32 of an array's bytes (C order), read in place (a memory map is not copied)."""
    flat = np.ascontiguousarray(arr)
    return zlib.crc32(flat.data.cast("B")) if flat.size else 0


def read_header(path: str) -> tuple[dict[str, Any], int, int]:
    """A ``.ann`` file's JSON header, its length in bytes and the file's size (no arrays read).

    Raises:
        SidecarInvalid: missing, not a sidecar, another format, or truncated.
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
    if not isinstance(header, dict) or header.get("format") not in READABLE:
        raise SidecarInvalid("another sidecar format")
    if header.get("file_size") != size:
        raise SidecarInvalid(f"truncated: {size} bytes, header says {header.get('file_size')}")
    return header, length, size


def read_sidecar(path: str, expect: dict[str, Any]) -> Sidecar:
    """Memory-map a ``.ann`` file and check it against ``expect``.

    Args:
        path: the ``.ann`` path.
        expect: header values that must match (collection, created_at, model_id, dim).
    Raises:
        SidecarInvalid: missing, truncated, not a sidecar, another format, a header value
            that differs from ``expect``, or damaged contents: an array whose layout does not
            fit the file or whose CRC-32 differs from the header's (the message says which).
    """
    header, length, size = read_header(path)
    for key, value in expect.items():
        if header.get(key) != value:
            raise SidecarInvalid(f"foreign: {key} is {header.get(key)!r}, expected {value!r}")
    start = _aligned(len(MAGIC) + 4 + length)
    arrays = _map_arrays(path, start, size, header)
    for name in (*CHECKED, "slots") if "slots" in arrays else CHECKED:
        if _crc(arrays[name]) != (header.get("crc32") or {}).get(name):
            raise SidecarInvalid(f"damaged: the {name} array fails its checksum")
    vectors = arrays.get("vectors")
    return Sidecar(
        header,
        arrays["chunk_ids"],
        arrays["record_rowids"],
        arrays["alive"],
        vectors,
        arrays.get("slots"),
    )


def _map_arrays(path: str, start: int, size: int, header: dict[str, Any]) -> dict[str, Any]:
    """Memory-map each array the header lays out, after checking it lies inside the file."""
    arrays: dict[str, Any] = {}
    try:
        for name, (off, dtype, shape) in header["arrays"].items():
            kind, dims = np.dtype(dtype), tuple(int(d) for d in shape)
            count = int(np.prod(dims))
            if off < 0 or min(dims, default=0) < 0 or start + off + count * kind.itemsize > size:
                raise SidecarInvalid(f"damaged: the {name} array lies outside the file")
            # a plain ndarray view of the map (it keeps the map open): indexing a np.memmap
            # goes through Python-level __getitem__/__array_finalize__, ~1 us a search each
            arrays[name] = (
                np.memmap(path, kind, "r", start + off, dims).view(np.ndarray)
                if count
                else np.empty(dims, kind)
            )
    except (KeyError, TypeError, ValueError) as exc:
        raise SidecarInvalid(f"damaged array layout ({exc})") from exc
    if any(name not in arrays for name in CHECKED):
        raise SidecarInvalid("damaged: an array is missing")
    return arrays


def remove_dead_temps(db_path: str, collection_id: int) -> int:
    """Delete this collection's temporary files whose writing process is gone.

    A process killed while writing a graph or a ``.ann`` file leaves ``….tmp-<pid>``
    behind (at 1M vectors, gigabytes). A temporary file of a process that no longer runs on
    this machine can never be renamed into place, so it is removed; files of running
    processes (this one included) are left alone (see
    :func:`semsearch.atomic_file.remove_dead_temps`).

    Returns:
        How many files were removed.
    """
    return atomic_file.remove_dead_temps(f"{db_path}.c{int(collection_id)}.")


def remove_stale(
    db_path: str, collection_id: int, keep_token: str | None, tmp_age: float = 3600.0
) -> None:
    """Delete this collection's graph files other than ``keep_token``'s, and stale temp files.

    Another process may still have an old graph memory-mapped; on POSIX its mapping stays valid.
    If another process was between writing its graph and renaming the ``.ann`` naming it, the
    next reader finds that graph missing and rebuilds (logged), so the race only costs time.
    Temporary files of processes that are gone are removed at once (:func:`remove_dead_temps`);
    others younger than ``tmp_age`` seconds may be writes in progress and are kept.
    """
    remove_dead_temps(db_path, collection_id)
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
