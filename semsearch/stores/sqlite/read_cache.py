"""Values read from an SQLite file, kept while nothing commits to it.

A server answers the same questions of the file again and again between writes: the
collection's row (its options hold the index health every search checks) and the sentence
windows of the chunks a semantic search rescores. :class:`ReadCache` keeps such values under the
reader's ``(connection, data_version)`` pair
(:meth:`~semsearch.stores.sqlite.connection.SQLiteConnections._file_version`): a commit by any
connection, in this process or another, moves ``data_version``, and the next lookup starts
afresh. A store in memory has no such pair (its reader is its writer), and is never cached.
"""

from __future__ import annotations

import sqlite3
from collections import OrderedDict
from collections.abc import Callable, Hashable, Sequence
from typing import Generic, TypeVar

__all__ = ["ReadCache"]

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")

#: The reader's (connection, data_version), or None when nothing may be cached.
Seen = tuple[sqlite3.Connection, int] | None
_ABSENT = object()  # read, and not in the file
_UNKNOWN = object()  # not read yet


class ReadCache(Generic[K, V]):
    """At most ``max_items`` values by key, valid for one state of the file (module docstring).
    Not thread-safe: callers hold the store's read lock."""

    def __init__(self, max_items: int) -> None:
        self.max_items = max_items
        self._seen: Seen = None
        self._items: OrderedDict[K, object] = OrderedDict()

    def get_many(
        self, seen: Seen, keys: Sequence[K], read: Callable[[list[K]], dict[K, V]]
    ) -> dict[K, V]:
        """``{key: value}`` for the ``keys`` that have one: cached values, the others from
        ``read(missing keys)``, which returns those it found (the rest are kept as absent).
        With ``seen`` None everything is read and nothing kept."""
        if seen is None:
            return read(list(keys))
        if seen != self._seen:
            self._items.clear()
            self._seen = seen
        out: dict[K, V] = {}
        missing: list[K] = []
        for key in dict.fromkeys(keys):
            value = self._items.get(key, _UNKNOWN)
            if value is _UNKNOWN:
                missing.append(key)
                continue
            self._items.move_to_end(key)
            if value is not _ABSENT:
                out[key] = value  # type: ignore[assignment]
        if missing:
            found = read(missing)
            out.update(found)
            for key in missing:
                self._items[key] = found.get(key, _ABSENT)
            while len(self._items) > self.max_items:
                self._items.popitem(last=False)
        return out
