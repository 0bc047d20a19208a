"""Whether a Database and the Collection handles it gave out may still be used.

A handle used after ``Database.close()`` or after ``Database.drop_collection(name)`` raises
instead of answering empty results. The check runs at the start of every Collection verb and
costs two attribute reads and a dict lookup: no query, on every backend alike.
"""

from __future__ import annotations

from semsearch.errors import BackendUnavailable, IndexNotFound

__all__ = ["Lifecycle"]


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
            raise BackendUnavailable(
                "this database is closed",
                hint="reopen it with semsearch.connect(location) and open the collection again",
            )

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
