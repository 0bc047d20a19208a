"""The ``where`` filter language: parse and validate a JSON filter into a small AST.

Syntax (MongoDB/chroma style), over a collection's declared fields:

    {"level": 3}                                  equality by plain value
    {"level": {"$gte": 2, "$lt": 5}}              operators: $eq $ne $gt $gte $lt $lte $in $nin
    {"classes": {"$contains": "Wizard"}}          list[str] fields ({"classes": "Wizard"} too)
    {"level_min": 2, "level_max": 4}              range suffixes (>= and <=)
    {"$and": [...]}, {"$or": [...]}, {"$not": {...}}

A float field also takes a fraction written as a string, ``{"challenge_rating": "1/4"}`` (as
players write D&D challenge ratings), read here once for every face. Several keys in one object
are ANDed. An empty object ``{}`` matches every record, at the top
and inside ``$and``, ``$or`` and ``$not`` (so ``{"$not": {}}`` matches none). A filter nests at
most :data:`MAX_FILTER_DEPTH` logical operators deep and holds at most
:data:`MAX_FILTER_LEAVES` comparisons (the deepest filter SQLite's parser accepts with a path
scope added, with margin); larger ones are InvalidFilter. ``$ne`` and ``$nin`` also match
records where the field is absent (as in MongoDB); ``$not`` is the exact complement of its
operand. Backends compile the AST with bound parameters only; values never reach query text.

Path scopes (a search's ``folder=``, ``include=`` and ``exclude=``) become the same AST through
:func:`path_filter`, with :class:`IdMatch` leaves on the record id, so every store applies them
before ranking exactly as it applies ``where``.
"""

from __future__ import annotations

import fnmatch
import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Literal

from semsearch.errors import InvalidFilter
from semsearch.globs import Lit, Many, parse_glob
from semsearch.schema import Field, FieldType, Schema

__all__ = [
    "FLOAT_VALUES",
    "MAX_FILTER_DEPTH",
    "MAX_FILTER_LEAVES",
    "OPERATORS",
    "And",
    "Compare",
    "Filter",
    "IdMatch",
    "Not",
    "Op",
    "Or",
    "conjoin",
    "parse_filter",
    "path_filter",
    "read_fraction",
    "split_path_pattern",
]

Op = Literal["eq", "ne", "gt", "gte", "lt", "lte", "in", "nin", "contains"]
OPERATORS: dict[str, Op] = {
    "$eq": "eq",
    "$ne": "ne",
    "$gt": "gt",
    "$gte": "gte",
    "$lt": "lt",
    "$lte": "lte",
    "$in": "in",
    "$nin": "nin",
    "$contains": "contains",
}
_LOGICAL = ("$and", "$or", "$not")
#: Most nested ``$and``/``$or``/``$not`` levels in one filter. SQLite's parser stack (100
#: entries) overflowed at 10 nested ``$not`` (each beside other conditions) with a path scope;
#: 9 passed (measured, SQLite 3 with the default YYSTACKDEPTH).
MAX_FILTER_DEPTH = 8
#: Most comparisons (field conditions) in one filter; SQLite refuses expression trees deeper
#: than 1000, which a long ``$or`` builds. Use ``$in`` for long lists of values.
MAX_FILTER_LEAVES = 512
_ORDERED_TYPES: tuple[FieldType, ...] = ("int", "float", "str")


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
    :func:`path_filter`; the ``where`` language has no syntax for it."""

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


def parse_filter(where: Mapping[str, Any] | None, schema: Schema) -> Filter | None:
    """Parse and validate a ``where`` object against ``schema``.

    Returns:
        The AST, or None for an empty or missing filter.
    Raises:
        InvalidFilter: unknown field or operator (naming the valid choices), or a value whose
            type does not match the field.
    """
    if where is None:
        return None
    if not isinstance(where, Mapping):
        raise InvalidFilter(
            f"a filter must be a JSON object, got {type(where).__name__}",
            hint='write it like {"level": 3} or {"level": {"$gte": 2}}',
        )
    parsed = _parse_object(where, schema, 0)
    if parsed is None:  # {} or only empty sub-filters: every record
        return None
    leaves = _count_leaves(parsed)
    if leaves > MAX_FILTER_LEAVES:
        raise InvalidFilter(
            f"the filter holds {leaves} conditions; the maximum is {MAX_FILTER_LEAVES}",
            hint='match many values of one field with $in: {"field": {"$in": [...]}}',
        )
    return parsed


def _count_leaves(f: Filter) -> int:
    if isinstance(f, And | Or):
        return sum(_count_leaves(item) for item in f.items)
    return _count_leaves(f.item) if isinstance(f, Not) else 1


def _parse_object(obj: Mapping[str, Any], schema: Schema, depth: int) -> Filter | None:
    """One filter object as an AST; None means "every record" (``{}``, or keys that all are)."""
    parsed = [_parse_key(key, value, schema, depth) for key, value in obj.items()]
    return conjoin(*parsed)


def _parse_key(key: str, value: Any, schema: Schema, depth: int) -> Filter | None:
    """One key of a filter object; None (every record) for a logical operator over ``{}``:
    ``$and`` of only match-alls, ``$or`` with one. ``$not {}`` matches no record."""
    if key in _LOGICAL and depth >= MAX_FILTER_DEPTH:
        raise InvalidFilter(
            f"the filter nests $and/$or/$not more than {MAX_FILTER_DEPTH} levels deep",
            hint="flatten it: several keys in one object are ANDed, and $in matches a list",
        )
    if key in ("$and", "$or"):
        if not isinstance(value, list) or not value:
            raise InvalidFilter(
                f"{key} takes a non-empty list of filters", hint=f'{{"{key}": [...]}}'
            )
        if len(value) > MAX_FILTER_LEAVES:
            raise InvalidFilter(
                f"{key} holds {len(value)} filters; the maximum is {MAX_FILTER_LEAVES}",
                hint='match many values of one field with $in: {"field": {"$in": [...]}}',
            )
        parts = [_parse_object(_need_object(v, key), schema, depth + 1) for v in value]
        if key == "$and":
            return conjoin(*parts)
        if any(p is None for p in parts):  # one branch matches every record
            return None
        alts = tuple(p for p in parts if p is not None)
        return alts[0] if len(alts) == 1 else Or(alts)
    if key == "$not":
        inner = _parse_object(_need_object(value, key), schema, depth + 1)
        return NOTHING if inner is None else Not(inner)
    if key.startswith("$"):
        raise InvalidFilter(
            f"unknown logical operator {key!r}", hint=f"use one of: {', '.join(_LOGICAL)}"
        )
    field = schema.field(key)
    if field is None:
        return _parse_suffix(key, value, schema)
    if isinstance(value, Mapping):
        if not value:
            raise InvalidFilter(f"empty operator object for field {key!r}", hint='{"$eq": ...}')
        compares = tuple(_compare(field, op, v) for op, v in value.items())
        return compares[0] if len(compares) == 1 else And(compares)
    return _compare(field, "$eq", value)


def _parse_suffix(key: str, value: Any, schema: Schema) -> Filter:
    for suffix, op in (("_min", "$gte"), ("_max", "$lte")):
        base = schema.field(key.removesuffix(suffix)) if key.endswith(suffix) else None
        if base is not None:
            return _compare(base, op, value)
    valid = sorted(f.name for f in schema.fields)
    raise InvalidFilter(
        f"unknown field {key!r} in filter",
        hint=f"filterable fields: {', '.join(valid)}"
        if valid
        else "this collection declares no fields",
    )


def _need_object(value: Any, where: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise InvalidFilter(f"{where} expects filter objects, got {value!r}", hint='{"level": 3}')
    return value


def _compare(field: Field, op_name: str, value: Any) -> Compare:
    op = OPERATORS.get(op_name)
    if op is None:
        raise InvalidFilter(
            f"unknown operator {op_name!r} on field {field.name!r}",
            hint=f"use one of: {', '.join(OPERATORS)}",
        )
    if op in ("gt", "gte", "lt", "lte") and field.type not in _ORDERED_TYPES:
        raise InvalidFilter(
            f"operator {op_name} does not apply to {field.type} field {field.name!r}",
            hint="ranges work on int, float and str fields",
        )
    if op == "contains" and field.type != "list[str]":
        raise InvalidFilter(
            f"$contains applies to list[str] fields; {field.name!r} is {field.type}",
            hint=f'use {{"{field.name}": value}} for equality',
        )
    if op in ("in", "nin"):
        if not isinstance(value, list) or not value:
            raise InvalidFilter(
                f"{op_name} on {field.name!r} takes a non-empty list", hint="[1, 2]"
            )
        return Compare(field.name, op, tuple(_scalar(field, v) for v in value), field.type)
    return Compare(field.name, op, _scalar(field, value), field.type)


#: What a float field's filter value may be (said in the hint of a wrong one).
FLOAT_VALUES = 'a number, or a fraction such as "1/4"'
#: A fraction as players write challenge ratings ("1/4", "1/2"); a float field takes it.
_FRACTION = re.compile(r"\s*([+-]?\d{1,18})\s*/\s*(\d{1,18})\s*")


def read_fraction(value: Any) -> Any:
    """``"p/q"`` (q > 0) as the float p/q; anything else unchanged (then checked as given)."""
    match = _FRACTION.fullmatch(value) if isinstance(value, str) else None
    if match is None or int(match.group(2)) == 0:
        return value
    return float(Fraction(int(match.group(1)), int(match.group(2))))


def _scalar(field: Field, value: Any) -> Any:
    element = "str" if field.type == "list[str]" else field.type
    if element == "float":
        value = read_fraction(value)  # the one place fractions become numbers, for every face
    ok = {
        "str": isinstance(value, str),
        "bool": isinstance(value, bool),
        "int": isinstance(value, int) and not isinstance(value, bool),
        "float": isinstance(value, int | float) and not isinstance(value, bool),
    }[element]
    if not ok:
        raise InvalidFilter(
            f"field {field.name!r} is {field.type}; the filter value {value!r} is "
            f"{type(value).__name__}",
            hint=f"give {'an' if element == 'int' else 'a'} {element} value"
            + (f" ({FLOAT_VALUES})" if element == "float" else ""),
        )
    if element == "str":
        _check_unicode(field, value)
    if element in ("int", "float"):
        _check_number(field, value)
    return float(value) if element == "float" else value


_INT64 = (-(2**63), 2**63 - 1)


def _check_number(field: Field, value: int | float) -> None:
    """Raise InvalidFilter for NaN, infinity, or an int no store can bind (outside int64).

    A float compare would be wrong for equality past 2**53, so such ints are refused, not rounded.
    """
    if isinstance(value, float) and not math.isfinite(value):
        raise InvalidFilter(
            f"the filter value for {field.name!r} is {value}, which matches nothing",
            hint="give a finite number",
        )
    if isinstance(value, int) and not _INT64[0] <= value <= _INT64[1]:
        raise InvalidFilter(
            f"the filter value for {field.name!r} ({_short_int(value)}) is outside the 64-bit integer "
            f"range [{_INT64[0]}, {_INT64[1]}] that stored numbers use",
            hint="give a smaller number",
        )


def _short_int(value: int) -> str:
    """An int for a message: its digits, or its size when too long to print (str() limits)."""
    return str(value) if value.bit_length() < 200 else f"a {value.bit_length()}-bit integer"


def _check_unicode(field: Field, value: str) -> None:
    """Raise InvalidFilter for a lone surrogate, which no store can bind as UTF-8 text."""
    from semsearch.validation import surrogate_at

    position = surrogate_at(value)
    if position is not None:
        raise InvalidFilter(
            f"the filter value for {field.name!r} holds a lone surrogate at character {position}",
            hint="it is not valid Unicode (an unpaired \\uD800-\\uDFFF escape); remove it",
        )


def split_path_pattern(pattern: str) -> tuple[str, str] | None:
    """A path pattern's two ways to match: ``(glob, folder prefix)``, or None when blank.

    A record id matches the pattern when ``fnmatchcase(id, glob)`` or ``id.startswith(prefix)``:
    surrounding whitespace is ignored, and a bare folder, ``folder/``, ``folder/*`` and
    ``folder/**`` all match everything below ``folder/`` (the prefix is literal text).
    """
    pattern = pattern.strip()
    if not pattern:
        return None
    return pattern, pattern.rstrip("/").removesuffix("/**").removesuffix("/*") + "/"


def path_filter(
    folder: str | None,
    include: tuple[str, ...] = (),
    exclude: tuple[str, ...] = (),
    compiles: Callable[[IdMatch], bool] | None = None,
) -> Filter | None:
    """A path scope as a filter: inside ``folder``, matching an ``include`` pattern when any
    are given, and matching no ``exclude`` pattern (see :func:`split_path_pattern`).

    Args:
        compiles: for a store that cannot compile every :class:`IdMatch`: the test of one. A
            pattern it refuses is left out (for ``include``, the whole allowlist), so the
            filter selects a superset of the scope and the caller must check the rest.
    Returns:
        The filter, or None when the scope (or what the store can compile of it) allows all.
    Raises:
        InvalidFilter: a pattern or folder that is not valid UTF-8 text (a lone surrogate).
    """
    ok = compiles or (lambda _: True)
    parts: list[Filter] = []
    prefix = (folder or "").strip("/") + "/"
    if folder and prefix != "/":
        parts.append(_checked(IdMatch("prefix", prefix)))
    if include:
        alts = [m for p in include for m in _pattern_matches(p)]
        if all(ok(m) for m in alts):
            parts.append(_any(alts))
    for pattern in exclude:
        alts = _pattern_matches(pattern)
        if alts and all(ok(m) for m in alts):
            parts.append(Not(_any(alts)))
    return conjoin(*parts)


def conjoin(*filters: Filter | None) -> Filter | None:
    """The AND of the given filters, skipping None; None when none is given."""
    items = tuple(f for f in filters if f is not None)
    return None if not items else items[0] if len(items) == 1 else And(items)


def _pattern_matches(pattern: str) -> list[IdMatch]:
    """The leaves one path pattern matches through; a glob that is a prefix becomes one."""
    split = split_path_pattern(pattern)
    if split is None:
        return []
    glob, prefix = split
    tokens = parse_glob(glob)
    if len(tokens) == 2 and isinstance(tokens[0], Lit) and isinstance(tokens[1], Many):
        glob_prefix = tokens[0].text  # "notes/*": a prefix, which an index can answer
        short, long = sorted((glob_prefix, prefix), key=len)
        if long.startswith(short):
            return [_checked(IdMatch("prefix", short))]
        return [_checked(IdMatch("prefix", glob_prefix)), _checked(IdMatch("prefix", prefix))]
    return [_checked(IdMatch("glob", glob)), _checked(IdMatch("prefix", prefix))]


def _any(alts: list[IdMatch]) -> Filter:
    return NOTHING if not alts else alts[0] if len(alts) == 1 else Or(tuple(alts))


def _checked(match: IdMatch) -> IdMatch:
    try:
        match.pattern.encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidFilter(
            f"path pattern {match.pattern!r} is not valid text (it holds a lone surrogate)",
            hint="give folder, include and exclude patterns as plain UTF-8 text",
        ) from None
    return match
