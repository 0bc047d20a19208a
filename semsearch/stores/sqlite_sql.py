"""Pure SQL builders for the SQLite store: FTS5 query quoting and filter compilation.

Both are pure functions so they can be tested on their own. User text never reaches FTS5 query
syntax raw, and filter values are always bound parameters.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from semsearch.filters import And, Compare, Filter, Not, Or

__all__ = ["compile_filter", "fts_query", "order_by_sql"]

_HAS_WORD = re.compile(r"\w", re.UNICODE)

_SQL_OPS = {"eq": "=", "ne": "!=", "gt": ">", "gte": ">=", "lt": "<", "lte": "<="}


def fts_query(text: str) -> str | None:
    """Turn arbitrary user text into a safe FTS5 MATCH expression, or None if it has no words.

    Each whitespace-separated piece becomes a quoted FTS5 string (a phrase of its tokens, so
    ``ADR-0042`` and ``state-of-the-art`` keep their words together and ``AND``/``OR``/``NEAR``
    are plain words); pieces are ORed, and BM25 ranks documents that match more of them higher.
    A piece without any word character (a lone ``"``, ``++``) is dropped.
    """
    pieces = [p for p in text.split() if _HAS_WORD.search(p)]
    if not pieces:
        return None
    quoted = ['"' + p.replace('"', '""') + '"' for p in dict.fromkeys(pieces)]
    return " OR ".join(quoted)


def _value_sql(field: str) -> str:
    # Field names are validated identifiers (schema.Field), so inlining the JSON path is safe
    # and lets SQLite use the expression index built on exactly this expression.
    return f"json_extract(r.attrs, '$.{field}')"


def compile_filter(f: Filter) -> tuple[str, list[Any]]:
    """Compile a filter AST to a SQL boolean over ``records AS r``, with bound parameters.

    Returns:
        (sql, params). Comparisons stay bare (``json_extract(...) = ?``) so SQLite can use the
        field's expression index; an absent field makes them NULL, which WHERE treats as false.
        ``$not`` wraps its operand in ``COALESCE(..., 0)`` so it is the exact complement.
    """
    if isinstance(f, And | Or):
        parts = [compile_filter(item) for item in f.items]
        joiner = " AND " if isinstance(f, And) else " OR "
        sql = joiner.join(f"({p})" for p, _ in parts)
        return sql, [v for _, params in parts for v in params]
    if isinstance(f, Not):
        sql, params = compile_filter(f.item)
        return f"NOT COALESCE(({sql}), 0)", params
    return _compile_compare(f)


def _compile_compare(c: Compare) -> tuple[str, list[Any]]:
    col = _value_sql(c.field)
    if c.type == "list[str]":
        return _compile_list(c)
    values = list(c.value) if isinstance(c.value, tuple) else [c.value]
    if c.op in ("in", "nin"):
        marks = ", ".join("?" for _ in values)
        if c.op == "in":
            return f"{col} IN ({marks})", values
        return f"({col} IS NULL OR {col} NOT IN ({marks}))", values
    if c.op == "ne":
        return f"({col} IS NULL OR {col} != ?)", values
    return f"{col} {_SQL_OPS[c.op]} ?", values


def _compile_list(c: Compare) -> tuple[str, list[Any]]:
    values = list(c.value) if isinstance(c.value, tuple) else [c.value]
    marks = ", ".join("?" for _ in values)
    exists = (
        f"EXISTS (SELECT 1 FROM json_each(r.attrs, '$.{c.field}') AS e WHERE e.value IN ({marks}))"
    )
    if c.op in ("ne", "nin"):
        return f"NOT {exists}", values
    return exists, values


def order_by_sql(order_by: Sequence[tuple[str, bool]]) -> str:
    """``ORDER BY`` over declared fields (validated names), then record id for determinism."""
    terms = [f"{_value_sql(name)} {'DESC' if desc else 'ASC'}" for name, desc in order_by]
    return "ORDER BY " + ", ".join([*terms, "r.id ASC"])
