"""Which record ids may appear in results: the path scope (``folder``, ``include``, ``exclude``).

A scope travels to the store inside the filter (:meth:`PathScope.as_filter`), so the store drops
hidden paths before ranking, as it does for ``where``; :meth:`PathScope.allows` is the safety net
that search and listing apply again to what comes back.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Callable
from dataclasses import dataclass

from semsearch.filters import Filter, IdMatch, conjoin, path_filter, split_path_pattern
from semsearch.stores.base import PartialIdFilters, Store

__all__ = ["PathScope", "has_dot_segment", "path_matches", "store_filter"]


@dataclass(frozen=True)
class PathScope:
    """Which record ids (paths) may appear in results: inside ``folder``, matching one ``include``
    glob when any are given (an allowlist), and matching no ``exclude`` glob.

    Patterns are fnmatch globs on the record id, where ``*`` also crosses ``/`` (so ``private/*``
    hides everything below ``private/``); a bare folder name matches its subtree. ``exclude`` wins
    over ``include``.
    """

    folder: str | None = None
    exclude: tuple[str, ...] = ()
    include: tuple[str, ...] = ()

    def allows(self, record_id: str) -> bool:
        """True when ``record_id`` may be shown."""
        if self.folder:
            prefix = self.folder.strip("/") + "/"
            if prefix != "/" and not record_id.startswith(prefix):
                return False
        if self.include and not any(path_matches(record_id, p) for p in self.include):
            return False
        return not any(path_matches(record_id, pattern) for pattern in self.exclude)

    def as_filter(self, compiles: Callable[[IdMatch], bool] | None = None) -> Filter | None:
        """The scope as a filter AST that selects exactly the ids :meth:`allows` (None: all).

        ``compiles`` (a store's test of which id matches it can compile) leaves out what the
        store cannot express, giving a superset; see :func:`semsearch.filters.path_filter`.
        """
        return path_filter(self.folder, self.include, self.exclude, compiles)


def has_dot_segment(record_id: str) -> bool:
    """True when one of the ``/``-separated segments of ``record_id`` is ``.`` or ``..``: such
    an id reads as another path (``public/../private/a.md``) than the string globs match."""
    return any(part in (".", "..") for part in record_id.split("/"))


def path_matches(path: str, pattern: str) -> bool:
    """True when a relative POSIX ``path`` matches an fnmatch glob or lies under a folder.

    ``*`` also crosses ``/``, so ``private/*`` matches ``private/a/b.md``; ``private`` and
    ``private/`` match everything below ``private/``.
    """
    split = split_path_pattern(pattern)
    if split is None:
        return False
    glob, prefix = split
    return fnmatch.fnmatchcase(path, glob) or path.startswith(prefix)


def store_filter(store: Store, where: Filter | None, scope: PathScope) -> Filter | None:
    """``where`` AND the path scope: what the store applies before ranking (None: nothing).

    A store that is :class:`~semsearch.stores.base.PartialIdFilters` gets only the parts of the
    scope it can compile; :func:`collect` applies the rest.
    """
    compiles = store.compiles_id_match if isinstance(store, PartialIdFilters) else None
    return conjoin(where, scope.as_filter(compiles))
