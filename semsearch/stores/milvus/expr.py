"""Compile the ``where`` filter AST to a Milvus boolean expression, with every value escaped.

Milvus filters are expression strings (``f_level >= 2 and array_contains(f_tags, "a")``).
Milvus Lite 3.2 has no expression templates (``filter_params``), so values must be written
into the expression; this module is the ONE place that does it, and it does it safely:

- strings become double-quoted literals in which ``\\``, ``"``, ``'``, newline, carriage return
  and tab are backslash-escaped (the escapes both the Milvus server grammar and Milvus Lite's
  tokenizer accept), so a value such as ``x" or f_name != "`` stays one literal;
- numbers are written by Python's ``repr`` after checking they are finite (and, for ints,
  inside int64); booleans become ``true``/``false``;
- field names come from the schema (validated identifiers) and get the ``f_`` prefix, so a
  user field can never name an internal column.

The system semsearch replaces formatted values straight into its expressions; a record whose
name contained ``" or "`` could widen a filter to every row. The tests in
``tests/milvus/test_expr.py`` pin the escaping down.

Null semantics: Milvus uses three-valued logic, so ``not (f == 1)`` would drop rows where ``f``
is null. Every leaf is compiled two-valued (``f is not null and f == v``; ``ne``/``nin`` as
``f is null or ...``), which makes ``not`` the exact complement, matching :mod:`semsearch.filters`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from semsearch.errors import InvalidFilter
from semsearch.filters import And, Compare, Filter, IdMatch, Not, Or
from semsearch.globs import Lit, Many, parse_glob, prefix_end
from semsearch.schema import INT64_RANGE as _INT64

__all__ = ["FIELD_PREFIX", "column", "compile_filter", "compiles_id_match", "literal"]

#: Prefix of the Milvus scalar column holding a declared field (``level`` -> ``f_level``).
FIELD_PREFIX = "f_"

_ESCAPES = {"\\": "\\\\", '"': '\\"', "'": "\\'", "\n": "\\n", "\r": "\\r", "\t": "\\t"}
_ESCAPE_TABLE = str.maketrans(_ESCAPES)
_CMP = {"eq": "==", "ne": "!=", "gt": ">", "gte": ">=", "lt": "<", "lte": "<="}


def column(name: str) -> str:
    """The Milvus column of declared field ``name`` (a validated identifier)."""
    return FIELD_PREFIX + name


def literal(value: Any) -> str:
    """One value as a Milvus expression literal.

    Args:
        value: str, bool, int (int64 range) or finite float.
    Returns:
        The literal text: ``"..."`` with escapes, ``true``/``false``, or a number.
    Raises:
        InvalidFilter: a non-finite float, an int outside int64, or another type.
    """
    if isinstance(value, str):
        return '"' + value.translate(_ESCAPE_TABLE) + '"'
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        if not _INT64[0] <= value <= _INT64[1]:
            raise InvalidFilter(
                f"filter value {value} is outside the 64-bit integer range",
                hint="int fields hold values in [-2**63, 2**63 - 1]",
            )
        return str(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise InvalidFilter(f"filter value {value} is not finite", hint="give a finite number")
        return repr(value)
    raise InvalidFilter(
        f"filter value {value!r} has unsupported type {type(value).__name__}",
        hint="use a string, number or boolean",
    )


def _list(values: Sequence[Any]) -> str:
    return "[" + ", ".join(literal(v) for v in values) + "]"


def compile_filter(f: Filter) -> str:
    """Compile a filter AST to a two-valued Milvus boolean expression.

    Returns:
        An expression over the ``f_*`` columns; absent (null) fields compare as false except
        under ``ne``/``nin``, and ``$not`` is the exact complement of its operand.
    Raises:
        InvalidFilter: a value that cannot be written as a Milvus literal (see :func:`literal`).
    """
    if isinstance(f, And | Or):
        joiner = " and " if isinstance(f, And) else " or "
        return "(" + joiner.join(compile_filter(item) for item in f.items) + ")"
    if isinstance(f, Not):
        return f"(not {compile_filter(f.item)})"
    if isinstance(f, IdMatch):
        expr = _id_match(f)
        if expr is None:
            raise InvalidFilter(
                f"Milvus filters cannot express the path glob {f.pattern!r}",
                hint="check compiles_id_match() first; search does, and checks such globs itself",
            )
        return expr
    return _compare(f)


#: Characters a LIKE pattern cannot hold literally the same way on every Milvus: ``%`` and
#: ``_`` are wildcards, and ``\\`` escapes them on the server and pyarrow but not in Milvus
#: Lite's row-wise evaluator.
_LIKE_UNSAFE = frozenset("%_\\")


def compiles_id_match(m: IdMatch) -> bool:
    """True when :func:`compile_filter` expresses ``m`` exactly (see :func:`_id_match`)."""
    return _id_match(m) is not None


def _id_match(m: IdMatch) -> str | None:
    """A record-id match as an exact Milvus expression, or None if there is none.

    Prefixes and globs of the form ``lit*`` are a string range (``record_id >= "a/" and
    record_id < "a0"``), globs without wildcards are ``==``, and globs of literal text and ``*``
    only are ``like`` with ``%``. ``?`` and ``[...]`` are left out (``_`` in LIKE is not
    documented for every Milvus version, and LIKE has no sets), as is literal text holding
    ``%``, ``_`` or a backslash. Milvus Lite's row-wise LIKE lets ``$`` match before a final
    newline, so a pattern ending in literal text also requires the id not to end in one.
    """
    if "\x00" in m.pattern:
        return None
    tokens = parse_glob(m.pattern) if m.kind == "glob" else (Lit(m.pattern), Many())
    if len(tokens) == 2 and isinstance(tokens[0], Lit) and isinstance(tokens[1], Many):
        end = prefix_end(tokens[0].text)
        low = f"record_id >= {literal(tokens[0].text)}"
        return f"({low} and record_id < {literal(end)})" if end is not None else f"({low})"
    if not tokens or all(isinstance(t, Lit) for t in tokens):
        return f"(record_id == {literal(m.pattern)})"
    if not all(isinstance(t, Lit | Many) for t in tokens):
        return None
    literal_text = "".join(t.text for t in tokens if isinstance(t, Lit))
    last = tokens[-1]
    if _LIKE_UNSAFE & set(literal_text) or (isinstance(last, Lit) and last.text[-1] == "\n"):
        return None
    text = "".join(t.text if isinstance(t, Lit) else "%" for t in tokens)
    if isinstance(last, Many):
        return f"(record_id like {literal(text)})"
    return f"(record_id like {literal(text)} and not (record_id like {literal('%' + chr(10))}))"


def _compare(c: Compare) -> str:
    col = column(c.field)
    values: tuple[Any, ...] = c.value if isinstance(c.value, tuple) else (c.value,)
    if c.type == "list[str]":
        if c.op in ("in", "nin"):
            test = f"array_contains_any({col}, {_list(values)})"
        else:
            test = f"array_contains({col}, {literal(values[0])})"
        if c.op in ("ne", "nin"):
            return f"({col} is null or not {test})"
        return f"({col} is not null and {test})"
    if c.op == "in":
        return f"({col} is not null and {col} in {_list(values)})"
    if c.op == "nin":
        return f"({col} is null or {col} not in {_list(values)})"
    if c.op == "ne":
        return f"({col} is null or {col} != {literal(values[0])})"
    return f"({col} is not null and {col} {_CMP[c.op]} {literal(values[0])})"
