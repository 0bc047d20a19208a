"""The files of a SQLite store's derived caches, beside it: ``<file>.c<collection id>.ann``
(the ANN sidecar, :mod:`semsearch.ann.file`), ``<file>.c<id>.<token>.hnsw`` (its graphs),
``<file>.c<id>.kw`` (the keyword sidecar, :mod:`semsearch.bm25.file`) and their temporaries
(``<name>.tmp-<pid>[-<hex>]``).

They are derived from the SQLite file, so deleting one only costs a rebuild. A dropped (or
replaced) collection's files are deleted with it: at 1M chunks they are over a gigabyte. A
process that was still building a cache for it may write a file again after that; such a file
is never read (collection ids are never given again: ``schema.next_collection_id``), and
``semsearch compact`` deletes it (:func:`remove_orphans`), and the temporary files of writers
that were killed mid-write (:func:`remove_dead_temps`).
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Collection

from semsearch import atomic_file

__all__ = ["remove_collection_files", "remove_dead_temps", "remove_orphans"]

log = logging.getLogger(__name__)

#: The cache files' names after the SQLite file's: the collection id, then one of the kinds
#: (graph tokens: ann/file.py ``new_token``; temporaries: atomic_file.py).
_NAME = re.compile(r"\.c([1-9]\d*)\.(?:ann|kw|[0-9a-f]{16}\.hnsw)(?:\.tmp-\d+(?:-[0-9a-f]+)?)?")


def _files(db_path: str) -> dict[int, list[str]]:
    """``{collection id: [paths]}`` of the cache files beside ``db_path`` (matched by name in
    its folder, so ``a//b.db`` or ``./b.db`` find the same files as ``a/b.db``)."""
    folder, base = os.path.split(db_path)
    found: dict[int, list[str]] = {}
    try:
        names = os.listdir(folder or ".")
    except OSError:  # the folder is gone or unreadable: nothing to delete
        return found
    for name in names:
        match = _NAME.fullmatch(name[len(base) :]) if name.startswith(base) else None
        if match is not None:
            found.setdefault(int(match.group(1)), []).append(os.path.join(folder, name))
    return found


def _unlink(paths: list[str]) -> int:
    removed = 0
    for path in paths:
        try:
            os.unlink(path)
            removed += 1
        except FileNotFoundError:  # another process removed it first
            pass
        except OSError as exc:  # the drop itself is done: only disk is wasted
            log.warning("could not delete cache file %s (%s); delete it by hand", path, exc)
    return removed


def remove_collection_files(db_path: str, collection_id: int) -> int:
    """Delete the cache files of collection ``collection_id`` (dropped). Returns how many;
    never raises (a file that cannot be deleted is logged as a warning and left)."""
    return _unlink(_files(db_path).get(int(collection_id), []))


def remove_orphans(db_path: str, live: Collection[int], newest: int) -> int:
    """Delete the cache files of every collection id up to ``newest`` that is not ``live``
    (dropped ones); ids above ``newest`` may belong to a collection created since ``live``
    was read, so they are kept. Returns how many files were deleted; never raises (as
    :func:`remove_collection_files`)."""
    gone = [p for cid, paths in _files(db_path).items() if cid <= newest and cid not in live
            for p in paths]  # fmt: skip
    return _unlink(gone)


def remove_dead_temps(db_path: str) -> int:
    """Delete the temporary cache files of every collection whose writing process is gone
    (:func:`semsearch.atomic_file.remove_dead_temps`); those of running processes may be writes
    in progress and are kept. Returns how many were deleted; never raises."""
    return sum(atomic_file.remove_dead_temps(f"{db_path}.c{cid}.") for cid in _files(db_path))
