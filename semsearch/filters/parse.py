"""The ``where`` language: parse and validate a JSON filter object into the filter AST.

The syntax, the limits and the meaning of each operator are described in
:mod:`semsearch.filters`; the value checks each comparison makes are in
:mod:`semsearch.filters.values`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from semsearch.errors import InvalidFilter
from semsearch.filters.nodes import NOTHING, And, Compare, Filter, Not, Op, Or, conjoin
from semsearch.filters.values import scalar
from semsearch.schema import Field, FieldType, Schema

__all__ = ["MAX_FILTER_DEPTH", "MAX_FILTER_LEAVES", "OPERATORS", "parse_filter"]

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
        return Compare(field.name, op, tuple(scalar(field, v) for v in value), field.type)
    return Compare(field.name, op, scalar(field, value), field.type)
