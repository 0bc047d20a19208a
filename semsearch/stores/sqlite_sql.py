"""Pure SQL builders for the SQLite store: FTS5 query quoting and filter compilation.

Both are pure functions so they can be tested on their own. User text never reaches FTS5 query
syntax raw, and filter values are always bound parameters.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from semsearch.filters import And, Compare, Filter, Not, Or

__all__ = ["compile_filter", "fts_query", "order_by_sql", "trigram_query"]

_HAS_WORD = re.compile(r"\w", re.UNICODE)
_TOKEN = re.compile(r"[^\W_]+", re.UNICODE)
_QUOTES = "\"'()[]{}\u201c\u201d\u2018\u2019\u300c\u300d\u300e\u300f"

_SQL_OPS = {"eq": "=", "ne": "!=", "gt": ">", "gte": ">=", "lt": "<", "lte": "<="}


def fts_query(text: str) -> str | None:
    """Turn arbitrary user text into a safe FTS5 MATCH expression, or None if it has no words.

    For the default ``porter unicode61`` tokenizer. Each word token (a run of letters, digits
    or ``_``) becomes a quoted FTS5 string, so ``AND``, ``OR``, ``NOT`` and ``NEAR`` are plain
    words and quotes, ``*``, ``^``, ``:`` or parentheses in the text are never syntax. Tokens
    are ORed: BM25 ranks documents that match more (and rarer) words higher, like Lucene's
    default disjunctive query. A whitespace-separated piece of several tokens (``ADR-0042``,
    ``state-of-the-art``, ``don't``) also adds itself as a phrase, so documents holding the
    exact identifier rank above those holding its words apart. Stop words are kept: FTS5's
    BM25 gives words in most documents a near-zero IDF, and a stop-word-only query still works.

    Examples:
        ``ADR-0042 C++`` -> ``"adr 0042" OR "adr" OR "0042" OR "c"``
    """
    clauses: list[str] = []
    for piece in text.split():
        tokens = [t.casefold() for t in _TOKEN.findall(piece)]
        if len(tokens) > 1:
            clauses.append('"' + " ".join(tokens) + '"')
        clauses += [f'"{t}"' for t in tokens]
    if not clauses:
        return None
    return " OR ".join(dict.fromkeys(clauses))


#: The trigram tokenizer indexes every 3-character window, so shorter words cannot use it.
TRIGRAM_MIN = 3


def trigram_query(text: str) -> tuple[str | None, list[str]]:
    """Split user text for a ``trigram`` FTS5 table into a MATCH expression and short words.

    Each whitespace-separated piece is a substring to find (case-insensitive). Pieces of at
    least 3 characters become quoted FTS5 strings, ORed (``"机器学习"`` matches any text that
    contains it); quotes and brackets around a piece are dropped. Shorter pieces (``机器``, ``東京``) cannot be answered by the trigram index;
    they are returned separately for a substring scan, which runs only when the query has no
    piece of 3 or more characters.

    Returns:
        (MATCH expression or None, pieces shorter than 3 characters, casefolded and unique).
    """
    stripped = (p.strip(_QUOTES).casefold() for p in text.split())
    pieces = list(dict.fromkeys(p for p in stripped if _HAS_WORD.search(p)))
    long = ['"' + p.replace('"', '""') + '"' for p in pieces if len(p) >= TRIGRAM_MIN]
    short = [p for p in pieces if len(p) < TRIGRAM_MIN]
    return (" OR ".join(long) or None), short


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
