"""The folder a collection of notes was indexed from, and the refusal to sync another into it.

A folder sync makes the collection hold exactly the folder's notes: a note with the same
relative path replaces the stored one and every other record is removed. Syncing another
folder into a collection would therefore silently replace one vault by another. So each sync
that completes stores the folder's resolved absolute path in the collection's options (key
:data:`FOLDER_OPTION`, through ``Store.update_collection``, so every backend keeps it), and
:func:`check_folder` refuses, before anything is written, a sync of another folder unless the
caller re-points the collection (``new_folder=True``, ``--new-folder``).

A collection indexed by an older semsearch has no stored folder: the sync is refused when the
collection holds records and at most half of their ids are note paths of the new folder (a
sync of the same folder removes only the notes deleted since, rarely most of them; --new-folder
lets it through). The folder is stored before the sync's first write, so an interrupted first
sync leaves it known too.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Iterable
from pathlib import Path

from semsearch.collection import Collection
from semsearch.errors import FolderMismatch

__all__ = ["FOLDER_OPTION", "check_folder", "indexed_folder", "remember_folder"]

#: The key in ``CollectionInfo.options`` that holds the folder a collection was synced from.
FOLDER_OPTION = "folder"


def resolved(root: str | Path) -> str:
    """``root`` as an absolute path with every symbolic link resolved."""
    return os.path.realpath(Path(root).expanduser())


def indexed_folder(collection: Collection) -> str | None:
    """The folder ``collection`` was last synced from (as stored), or None when unknown."""
    info = collection.store.get_collection(collection.name) or collection.info
    folder = info.options.get(FOLDER_OPTION)
    return folder if isinstance(folder, str) and folder else None


def check_folder(
    collection: Collection,
    root: str | Path,
    notes: Callable[[], Iterable[str]],
    *,
    new_folder: bool = False,
) -> None:
    """Raise FolderMismatch when syncing ``root`` would replace another folder's notes.

    Args:
        notes: gives the relative paths of the notes under ``root`` (called only when needed).
        new_folder: re-point the collection at ``root``: never refuse.
    Raises:
        FolderMismatch: the collection holds records and either its stored folder is another
            one, or (no stored folder) at most half of its record ids are note paths under
            ``root`` (a shared README.md does not make another folder the same one).
    """
    if new_folder:
        return
    here = resolved(root)
    stored = indexed_folder(collection)
    if stored == here:
        return
    existing = collection.ids()
    if not existing:
        return
    paths = set(notes())
    kept = sum(1 for i in existing if i in paths)
    if stored is None and 2 * kept > len(existing):
        return  # indexed by an older version, from this folder (most notes are still here)
    raise _refusal(collection.name, stored, here, len(existing), kept)


def _refusal(name: str, stored: str | None, here: str, total: int, kept: int) -> FolderMismatch:
    removed = total - kept
    source = (
        f"the notes of {stored}"
        if stored is not None
        else f"{total} records from another folder (none is a note of {here}; the folder was "
        "not recorded by the older semsearch that indexed it)"
    )
    replaced = f", and replace {kept} with notes of the same path" if kept else ""
    return FolderMismatch(
        f"collection {name!r} holds {source}; indexing {here} into it would remove {removed} of "
        f"its {total} records{replaced}; nothing was changed",
        hint=f"to keep both, index {here} into another collection (--collection NAME); to "
        f"point {name!r} at {here} instead (e.g. the folder moved: unchanged notes are not "
        "re-embedded), run again with --new-folder (Python: new_folder=True)",
    )


def remember_folder(collection: Collection, root: str | Path) -> None:
    """Store ``root`` (resolved) as the folder ``collection`` was synced from (one store write,
    none when it is already stored); the other options are re-read first."""
    here = resolved(root)
    info = collection.store.get_collection(collection.name)
    if info is None or info.options.get(FOLDER_OPTION) == here:
        return
    updated = dataclasses.replace(info, options={**info.options, FOLDER_OPTION: here})
    collection.store.update_collection(updated)
    collection.info = updated
