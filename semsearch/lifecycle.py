"""Whether a Database and the Collection handles it gave out may still be used.

A handle used after ``Database.close()`` or after ``Database.drop_collection(name)`` raises
instead of answering empty results. The check runs at the start of every Collection verb and
costs two attribute reads and a dict lookup: no query, on every backend alike.

A drop by ANOTHER connection or process is invisible to that check; :func:`check_stored` finds
it with one ``get_collection`` query, comparing the stored creation stamp with the handle's. A
Collection runs it before every write and after a read that came back empty (a dropped
collection reads as empty), so reads with results cost nothing extra.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from semsearch.errors import BackendUnavailable, IndexNotFound

if TYPE_CHECKING:
    from semsearch.stores.base import CollectionInfo, Store

__all__ = ["Lifecycle", "check_stored"]


def check_stored(store: Store, info: CollectionInfo) -> CollectionInfo:
    """The stored collection ``info.name``; raise when it is gone or is another collection.

    Another one: its creation stamp differs from ``info.created_at`` (it was dropped and created
    again, e.g. by another process). A stamp that is None on either side is not compared.

    Raises:
        IndexNotFound: with a hint to open the collection again.
    """
    found = store.get_collection(info.name)
    if found is not None and (
        found.created_at is None or info.created_at is None or found.created_at == info.created_at
    ):
        return found
    what = "no longer exists" if found is None else "was dropped and created again"
    raise IndexNotFound(
        f"collection {info.name!r} {what} (by another connection or process); "
        "this handle can no longer be used",
        hint=f"open it again with db.collection({info.name!r})"
        if found is not None
        else f"create it again with db.collection({info.name!r}), or re-run the import",
    )


class Lifecycle:
    """The closed flag of one Database and a drop counter per collection name.

    A Collection remembers the counter of its name when it is opened (:meth:`generation`); a
    drop bumps it, so a handle opened before the drop stays unusable even if a collection of the
    same name is created again (open a new handle for that one).
    """

    def __init__(self) -> None:
        self.closed = False
        self._drops: dict[str, int] = {}

    def generation(self, name: str) -> int:
        """How often ``name`` was dropped through this Database."""
        return self._drops.get(name, 0)

    def dropped(self, name: str) -> None:
        """Record that collection ``name`` was dropped."""
        self._drops[name] = self._drops.get(name, 0) + 1

    def check_open(self) -> None:
        """Raise BackendUnavailable when the Database was closed."""
        if self.closed:
            raise database_closed()

    def check(self, name: str, generation: int) -> None:
        """Raise when the Database was closed or collection ``name`` dropped since ``generation``.

        Raises:
            BackendUnavailable: the Database was closed.
            IndexNotFound: the collection was dropped (its records are gone).
        """
        self.check_open()
        if self._drops.get(name, 0) != generation:
            raise IndexNotFound(
                f"collection {name!r} was dropped; this handle can no longer be used",
                hint=f"create it again with db.collection({name!r}) and use the new handle",
            )


def database_closed() -> BackendUnavailable:
    """The error for any use of a closed Database or of a handle opened from it."""
    return BackendUnavailable(
        "this database is closed",
        hint="reopen it with semsearch.connect(location) and open the collection again",
    )
