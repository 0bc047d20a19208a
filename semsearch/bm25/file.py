"""The on-disk keyword sidecar: a collection's posting arrays in one ``.kw`` file.

For collection id ``C`` of ``notes.embed.db`` the file is ``notes.embed.db.c<C>.kw``: an
uncompressed numpy ``.npz`` archive holding ``header`` (UTF-8 JSON as uint8), ``terms`` (the
terms, newline-separated UTF-8: no FTS5 term holds whitespace), the arrays of
:class:`~semsearch.bm25.postings.Postings`, and per record (in rowid order) its id
(``names``: UTF-8 bytes cut at ``name_offsets`` int64[N + 1]) and its first chunk's id
(``first_chunks`` int64[N], -1 for none). The header names the collection (id,
created_at), the FTS5 tokenizer, the title weight, the SQLite file it was built from (``file``:
:func:`file_identity`), the snapshot it was built from (``stamp``, see bm25/sidecar.py, and
``seq``, its position in the record change log: stores/sqlite/record_changes.py, null for a
file without the log) and a CRC-32 of every array, checked on every load.

The ``file`` identity ties a ``.kw`` file to the SQLite file it was built from: a copy of an
index that took other writes reaches the same log positions with other text, so a ``.kw`` file
put beside the wrong copy would otherwise be caught up from a log that does not describe it.
A copy, a restore from a backup or a move to another file system makes the next search
rebuild the file once.

It is written to a temporary name and renamed into place, so a reader sees an old complete
file or a new complete one. A missing, truncated, foreign or damaged file raises
:class:`KeywordFileInvalid`; the caller rebuilds it from the SQLite file, the source of truth.
"""

from __future__ import annotations

import json
import os
import zipfile
import zlib
from itertools import pairwise
from typing import Any, cast

import numpy as np
from numpy.typing import NDArray

from semsearch.atomic_file import write_atomically
from semsearch.bm25.postings import Postings

__all__ = [
    "KeywordFileInvalid",
    "file_identity",
    "keyword_path",
    "read_header",
    "read_postings",
    "record_log_horizon",
    "write_postings",
]

FORMAT = 2  # 2: record ids, first chunks, chunk frequencies
_ARRAYS = (
    "terms", "offsets", "docs", "freqs", "rowids", "lengths", "chunk_df", "names",
    "name_offsets", "first_chunks",
)  # fmt: skip


class KeywordFileInvalid(Exception):
    """The keyword sidecar is missing, truncated, foreign or damaged; rebuild it."""


def keyword_path(db_path: str, collection_id: int) -> str:
    """Path of a collection's ``.kw`` file next to the SQLite file."""
    return f"{db_path}.c{int(collection_id)}.kw"


def file_identity(db_path: str) -> str | None:
    """The SQLite file's identity on this machine, ``"<device>:<inode>"``, or None when it
    cannot be read (no file yet, ``:memory:``). A copy of the file has another identity; the
    file keeps its own while it is written, vacuumed or renamed within its file system."""
    try:
        st = os.stat(db_path)
    except OSError:
        return None
    return f"{st.st_dev}:{st.st_ino}"


def _crc(arr: NDArray[Any]) -> int:
    return zlib.crc32(np.ascontiguousarray(arr).data.cast("B")) if arr.size else 0


def write_postings(
    path: str,
    header: dict[str, Any],
    postings: Postings,
    names: list[str],
    first_chunks: NDArray[np.int64],
) -> int:
    """Write ``postings``, the records' ids and first chunk ids, with ``header``
    (JSON-serialisable), atomically. Returns the file's bytes.

    Raises:
        OSError: the folder is not writable (the temporary file is removed).
    """
    encoded = [n.encode() for n in names]
    arrays: dict[str, NDArray[Any]] = {
        "terms": np.frombuffer("\n".join(postings.terms).encode(), dtype=np.uint8),
        "offsets": postings.offsets,
        "docs": postings.docs,
        "freqs": postings.freqs,
        "rowids": postings.rowids,
        "lengths": postings.lengths,
        "chunk_df": postings.chunk_df,
        "names": np.frombuffer(b"".join(encoded), dtype=np.uint8),
        "name_offsets": np.cumsum([0, *map(len, encoded)], dtype=np.int64),
        "first_chunks": first_chunks,
    }
    head = dict(header, format=FORMAT, crc32={k: _crc(v) for k, v in arrays.items()})
    blob = np.frombuffer(json.dumps(head).encode(), dtype=np.uint8)

    def write(tmp: str) -> None:
        with open(tmp, "wb") as out:
            cast(Any, np.savez)(out, header=blob, **arrays)  # names as keywords

    return write_atomically(path, write)


def read_header(path: str) -> dict[str, Any]:
    """The header of a ``.kw`` file (only that member of the archive is read).

    Raises:
        KeywordFileInvalid: missing, not a keyword sidecar, truncated or another format.
    """
    try:
        with np.load(path, allow_pickle=False) as archive:
            return _header(archive)
    except FileNotFoundError as exc:
        raise KeywordFileInvalid("missing") from exc
    except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile) as exc:
        raise KeywordFileInvalid(f"unreadable ({exc})") from exc


def _header(archive: Any) -> dict[str, Any]:
    header = json.loads(bytes(archive["header"]).decode())
    if not isinstance(header, dict) or header.get("format") != FORMAT:
        raise KeywordFileInvalid("another keyword sidecar format")
    return header


def record_log_horizon(db_path: str, cid: int, top: int) -> int:
    """How far the record change log of collection ``cid`` may be pruned, given its last
    ``seq`` ``top``: the log position its ``.kw`` file was built at (never past ``top``), so any
    process can load the file and catch up from it; ``top`` when there is no usable file
    (missing, damaged, or built from another copy of the index: every reader rebuilds anyway).
    A :data:`~semsearch.stores.sqlite.changes.Horizon` once ``db_path`` is bound
    (stores/sqlite/record_changes.py prunes with it)."""
    if db_path == ":memory:":
        return top
    try:
        header = read_header(keyword_path(db_path, cid))
    except KeywordFileInvalid:
        return top
    seq = header.get("seq")
    if header.get("file") != file_identity(db_path) or not isinstance(seq, int):
        return top
    return min(top, seq)


def read_postings(
    path: str, expect: dict[str, Any]
) -> tuple[dict[str, Any], Postings, list[str], NDArray[np.int64]]:
    """(header, postings, record ids, first chunk ids) of a ``.kw`` file whose header matches
    ``expect`` (every key equal).

    Raises:
        KeywordFileInvalid: missing, not a keyword sidecar, truncated, another format, a
            header value that differs from ``expect``, or an array failing its CRC-32.
    """
    try:
        with np.load(path, allow_pickle=False) as archive:
            header = _header(archive)
            for key, value in expect.items():
                if header.get(key) != value:
                    raise KeywordFileInvalid(f"stale or foreign: {key} differs")
            arrays = {name: archive[name] for name in _ARRAYS}
    except FileNotFoundError as exc:
        raise KeywordFileInvalid("missing") from exc
    except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile) as exc:
        raise KeywordFileInvalid(f"unreadable ({exc})") from exc
    crcs = header.get("crc32") or {}
    for name, arr in arrays.items():
        if _crc(arr) != crcs.get(name):
            raise KeywordFileInvalid(f"damaged: the {name} array fails its checksum")
    terms = bytes(arrays["terms"]).decode().split("\n") if arrays["terms"].size else []
    postings = Postings(
        terms,
        arrays["offsets"].astype(np.int64, copy=False),
        arrays["docs"].astype(np.int32, copy=False),
        arrays["freqs"].astype(np.float32, copy=False),
        arrays["rowids"].astype(np.int64, copy=False),
        arrays["lengths"].astype(np.int32, copy=False),
        arrays["chunk_df"].astype(np.int64, copy=False),
    )
    _check_shapes(postings)
    blob, cuts = bytes(arrays["names"]), arrays["name_offsets"].astype(np.int64, copy=False)
    first = arrays["first_chunks"].astype(np.int64, copy=False)
    if len(cuts) != len(postings.rowids) + 1 or len(first) != len(postings.rowids):
        raise KeywordFileInvalid("damaged: the record arrays do not fit together")
    try:
        names = [blob[a:b].decode() for a, b in pairwise(cuts.tolist())]
    except UnicodeDecodeError as exc:
        raise KeywordFileInvalid("damaged: a record id is not UTF-8") from exc
    return header, postings, names, first


def _check_shapes(p: Postings) -> None:
    """Reject arrays that agree with their checksums but not with each other."""
    nnz, n = len(p.docs), len(p.rowids)
    ok = (
        len(p.offsets) == len(p.terms) + 1
        and len(p.freqs) == nnz
        and len(p.lengths) == n
        and len(p.chunk_df) == len(p.terms)
        and (len(p.offsets) == 0 or (int(p.offsets[0]) == 0 and int(p.offsets[-1]) == nnz))
        and bool(np.all(np.diff(p.offsets) >= 0))
        and (nnz == 0 or (int(p.docs.min()) >= 0 and int(p.docs.max()) < n))
    )
    if not ok:
        raise KeywordFileInvalid("damaged: the arrays do not fit together")
