"""The filter AST: the small tree every ``where`` filter and path scope becomes.

:mod:`semsearch.filters.parse` builds it from a ``where`` object, :mod:`semsearch.filters.paths`
from a search's path scope; every backend compiles it with bound parameters only.
"""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass
from typing import Any, Literal

from semsearch.schema import FieldType

__all__ = ["NOTHING", "And", "Compare", "Filter", "IdMatch", "Not", "Op", "Or", "conjoin"]

Op = Literal["eq", "ne", "gt", "gte", "lt", "lte", "in", "nin", "contains"]


@dataclass(frozen=True)
class Compare:
    """``field <op> value`` on a declared field of type ``type``.

    For list[str] fields, ``eq``/``contains`` mean "the list holds value", ``ne`` means it does
    not, ``in`` means "holds any of", ``nin`` "holds none of".
    """

    field: str
    op: Op
    value: Any
    type: FieldType


@dataclass(frozen=True)
class And:
    """All of ``items``."""

    items: tuple[Filter, ...]


@dataclass(frozen=True)
class Or:
    """Any of ``items``."""

    items: tuple[Filter, ...]


@dataclass(frozen=True)
class Not:
    """The exact complement of ``item``."""

    item: Filter


@dataclass(frozen=True)
class IdMatch:
    """The record id starts with ``pattern`` (``kind="prefix"``: literal text, ``""`` matches
    every id) or matches it as a glob (``kind="glob"``: :func:`fnmatch.fnmatchcase`, where ``*``
    also crosses ``/``, with ``?``, ``[seq]`` and ``[!seq]``; no escaping). Built by
    :func:`~semsearch.filters.path_filter`; the ``where`` language has no syntax for it."""

    kind: Literal["prefix", "glob"]
    pattern: str

    def matches(self, record_id: str) -> bool:
        """The reference semantics every store's compiler reproduces."""
        if self.kind == "prefix":
            return record_id.startswith(self.pattern)
        return fnmatch.fnmatchcase(record_id, self.pattern)


Filter = Compare | And | Or | Not | IdMatch

#: A filter no record passes (every id starts with "", so its complement is empty).
NOTHING: Filter = Not(IdMatch("prefix", ""))


def conjoin(*filters: Filter | None) -> Filter | None:
    """The AND of the given filters, skipping None; None when none is given."""
    items = tuple(f for f in filters if f is not None)
    return None if not items else items[0] if len(items) == 1 else And(items)
