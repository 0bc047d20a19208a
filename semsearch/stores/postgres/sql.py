"""Pure SQL builders for the PostgreSQL store: table names, filters, keyword queries, ordering.

Every function here is pure, so it can be tested without a server. Filter values and user text
are always bound parameters (psycopg ``%s`` placeholders); only validated identifiers (declared
field names match ``[A-Za-z_][A-Za-z0-9_]*``, collection ids are integers) are inlined.

Filter semantics match the SQLite store exactly: an absent field (SQL NULL) never matches,
``$ne``/``$nin`` also match records where the field is absent, ``$not`` is the exact complement,
and strings compare byte-wise (the columns use ``COLLATE "C"``, which is code-point order for
UTF-8, the same as SQLite's BINARY collation and Python's ``str`` ordering).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from semsearch.filters import And, Compare, Filter, IdMatch, Not, Or
from semsearch.globs import CharSet, Lit, Many, One, Token, parse_glob, prefix_end
from semsearch.schema import FieldType

__all__ = [
    "COLUMN_TYPES",
    "TS_CONFIG",
    "Tables",
    "column",
    "compile_filter",
    "compile_id_match",
    "ef_search_for",
    "glob_regex",
    "order_by_sql",
    "websearch_text",
    "where_sql",
]

#: PostgreSQL column type of each declared field type.
COLUMN_TYPES: dict[FieldType, str] = {
    "str": 'text COLLATE "C"',
    "int": "bigint",
    "float": "double precision",
    "bool": "boolean",
    "list[str]": 'text[] COLLATE "C"',
}

#: Text search configuration of the keyword index (Snowball English stemmer, English stop words).
TS_CONFIG = "english"

_SQL_OPS = {"eq": "=", "ne": "<>", "gt": ">", "gte": ">=", "lt": "<", "lte": "<="}
_HAS_WORD = re.compile(r"\w", re.UNICODE)
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


@dataclass(frozen=True)
class Tables:
    """Names of one collection's tables and indexes, derived from its integer id."""

    cid: int

    @property
    def records(self) -> str:
        """The records table: one row per record, declared fields as ``f_<name>`` columns."""
        return f"semsearch_c{int(self.cid)}_records"

    @property
    def chunks(self) -> str:
        """The chunks table: text, vector, embedding status and the tsvector column."""
        return f"semsearch_c{int(self.cid)}_chunks"

    @property
    def kw_terms(self) -> str:
        """BM25 postings: one row per (term, record) with its weighted frequency and positions."""
        return f"semsearch_c{int(self.cid)}_kw_terms"

    @property
    def kw_df(self) -> str:
        """BM25 document frequencies: records and chunks holding each term."""
        return f"semsearch_c{int(self.cid)}_kw_df"

    @property
    def kw_docs(self) -> str:
        """BM25 lengths: each record's tokens, its chunks and their tokens."""
        return f"semsearch_c{int(self.cid)}_kw_docs"

    @property
    def kw_stats(self) -> str:
        """BM25 totals: one row with N, the total length, the chunks and their total length."""
        return f"semsearch_c{int(self.cid)}_kw_stats"

    @property
    def hnsw(self) -> str:
        """The HNSW index on ``chunks.embedding``."""
        return f"semsearch_c{int(self.cid)}_hnsw"

    def field_index(self, name: str) -> str:
        """The B-tree (or GIN, for list[str]) index on a declared field's column."""
        return f"semsearch_c{int(self.cid)}_f_{_checked(name)}"


def _checked(name: str) -> str:
    if not _IDENT.fullmatch(name):
        raise ValueError(f"not an identifier: {name!r}")
    return name


def column(name: str) -> str:
    """The quoted column of declared field ``name`` (``"f_<name>"``)."""
    return f'"f_{_checked(name)}"'


def compile_filter(f: Filter, alias: str = "r") -> tuple[str, list[Any]]:
    """Compile a filter AST to a SQL boolean over ``<records table> AS alias``.

    Comparisons are left plain (``r."f_level" = %s``) so the planner can estimate them and use
    the field's B-tree or GIN index. An absent field makes a comparison NULL, which ``WHERE``
    treats as false, and ``$not`` compiles to ``(...) IS NOT TRUE``, the exact complement under
    SQL's three-valued logic; so absent fields never match, as on SQLite.

    Returns:
        (sql, params): ``sql`` uses ``%s`` placeholders; use it only as a ``WHERE`` condition
        (its value may be NULL, meaning "no match").
    """
    if isinstance(f, And | Or):
        parts = [compile_filter(item, alias) for item in f.items]
        joiner = " AND " if isinstance(f, And) else " OR "
        return joiner.join(f"({p})" for p, _ in parts), [v for _, ps in parts for v in ps]
    if isinstance(f, Not):
        sql, params = compile_filter(f.item, alias)
        return f"({sql}) IS NOT TRUE", params
    if isinstance(f, IdMatch):
        return compile_id_match(f, f"{alias}.id")
    return _compile_compare(f, alias)


def where_sql(where: Filter | None, alias: str = "r") -> tuple[str, list[Any]]:
    """:func:`compile_filter` of ``where``, or ``("true", [])`` for no filter."""
    return compile_filter(where, alias) if where is not None else ("true", [])


def compile_id_match(m: IdMatch, col: str) -> tuple[str, list[Any]]:
    """Compile a record-id match over ``col`` (``text COLLATE "C"``) with exactly
    :meth:`IdMatch.matches`' meaning; the pattern is always a bound parameter.

    A prefix is a range on the id's B-tree index (``id >= %s AND id < %s``, see
    :func:`semsearch.globs.prefix_end`), a glob without wildcards is ``=``, and other globs are
    an anchored POSIX regular expression from :func:`glob_regex` (``~``, case-sensitive).
    PostgreSQL text cannot hold NUL, so a pattern that needs one never matches.
    """
    if m.kind == "prefix":
        if not m.pattern:
            return "true", []
        if "\x00" in m.pattern:
            return "false", []
        end = prefix_end(m.pattern)
        if end is None:
            return f"{col} >= %s", [m.pattern]
        return f"({col} >= %s AND {col} < %s)", [m.pattern, end]
    tokens = parse_glob(m.pattern)
    if all(isinstance(t, Lit) for t in tokens):
        return (f"{col} = %s", [m.pattern]) if "\x00" not in m.pattern else ("false", [])
    regex = glob_regex(tokens)
    return (f"{col} ~ %s", [regex]) if regex is not None else ("false", [])


def glob_regex(tokens: Sequence[Token]) -> str | None:
    """An anchored PostgreSQL regular expression (ARE) for fnmatch tokens; None: never matches.

    ``?`` is ``.`` and ``*`` is ``.*`` (both cross newlines: ARE matching is not
    newline-sensitive by default); letters and digits stay as they are and every other
    character is a ``\\Uhhhhhhhh`` code-point escape, inside sets too, so no character of a
    pattern is regex syntax. Sets become ranges of code points, ``[^...]`` when negated.
    """
    out = ["^"]
    for t in tokens:
        if isinstance(t, Lit):
            if "\x00" in t.text:
                return None
            out += [_regex_char(ord(c)) for c in t.text]
        elif isinstance(t, One | Many):
            out.append("." if isinstance(t, One) else ".*")
        else:
            piece = _regex_set(t)
            if piece is None:
                return None
            out.append(piece)
    return "".join(out) + "$"


def _regex_char(code: int) -> str:
    c = chr(code)
    return c if c.isascii() and c.isalnum() else f"\\U{code:08X}"


def _regex_set(s: CharSet) -> str | None:
    ranges = [(max(lo, 1), hi) for lo, hi in s.ranges if hi >= 1]  # no NUL in PostgreSQL text
    if not ranges:
        return "." if s.negated else None
    body = "".join(
        _regex_char(lo) if lo == hi else f"{_regex_char(lo)}-{_regex_char(hi)}" for lo, hi in ranges
    )
    return "[" + ("^" if s.negated else "") + body + "]"


def _compile_compare(c: Compare, alias: str) -> tuple[str, list[Any]]:
    col = f"{alias}.{column(c.field)}"
    values = list(c.value) if isinstance(c.value, tuple) else [c.value]
    if c.type == "list[str]":
        # && ("overlaps") serves eq/contains (one value) and in; the GIN index answers it.
        test = f"{col} && %s::text[]"
        return (f"({test}) IS NOT TRUE" if c.op in ("ne", "nin") else test), [values]
    if c.op in ("in", "nin"):
        marks = ", ".join("%s" for _ in values)
        if c.op == "in":
            return f"{col} IN ({marks})", values
        return f"({col} IS NULL OR {col} NOT IN ({marks}))", values
    if c.op == "ne":
        return f"({col} IS NULL OR {col} <> %s)", values
    return f"{col} {_SQL_OPS[c.op]} %s", values


def websearch_text(text: str) -> str | None:
    """Turn arbitrary user text into input for ``websearch_to_tsquery``, or None if no words.

    Mirrors the SQLite store's FTS5 quoting: each whitespace-separated piece becomes a quoted
    phrase (so ``ADR-0042`` keeps its parts together and ``or``/``-`` are plain text), and the
    pieces are ORed, so a chunk matching more of them ranks higher. Pieces without any word
    character are dropped; double quotes inside a piece become spaces.
    """
    pieces = [p.replace('"', " ") for p in text.split() if _HAS_WORD.search(p)]
    pieces = [p for p in dict.fromkeys(pieces) if _HAS_WORD.search(p)]
    if not pieces:
        return None
    return " or ".join(f'"{p.strip()}"' for p in pieces)


def order_by_sql(order_by: Sequence[tuple[str, bool]], alias: str = "r") -> str:
    """``ORDER BY`` over declared fields, then record id, with NULLs sorting as in SQLite.

    SQLite orders NULL before every value; PostgreSQL's default puts NULLs last when ascending,
    so ascending terms say ``NULLS FIRST`` and descending ones ``NULLS LAST``.
    """
    terms = [
        f"{alias}.{column(name)} {'DESC NULLS LAST' if desc else 'ASC NULLS FIRST'}"
        for name, desc in order_by
    ]
    return "ORDER BY " + ", ".join([*terms, f"{alias}.id ASC"])


def ef_search_for(k: int, minimum: int = 40) -> int:
    """``hnsw.ef_search`` for a top-``k`` query: at least ``k`` and ``minimum``, at most 1000.

    pgvector returns at most ef_search rows from one index pass (its documented limit is 1000),
    so ef_search below k would truncate the result; ``minimum`` (pgvector's default is 40) keeps
    recall for small k.
    """
    return max(1, min(1000, max(int(k), int(minimum))))
