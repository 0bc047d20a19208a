"""Pure SQL builders for the SQLite store: FTS5 query quoting and filter compilation.

Both are pure functions so they can be tested on their own. User text never reaches FTS5 query
syntax raw, and filter values are always bound parameters. :data:`Rows` names how the modules
that read the file run the SQL built here.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from semsearch.filters import And, Compare, Filter, IdMatch, Not, Or
from semsearch.globs import CharSet, Lit, Many, One, Token, parse_glob, prefix_end

__all__ = [
    "CASEFOLD_FUNCTION",
    "FNMATCH_FUNCTION",
    "Rows",
    "batches",
    "compile_filter",
    "compile_id_match",
    "fnmatch_function",
    "fts_clauses",
    "fts_query",
    "glob_text",
    "marks",
    "order_by_sql",
    "trigram_clauses",
    "trigram_query",
]

#: Runs one SELECT with bound parameters and returns its rows: the store's reader (inside the
#: caller's read transaction when there is one) or a lambda over one connection.
Rows = Callable[[str, Sequence[Any]], list[Any]]

#: Name of the SQL function ``semsearch_fnmatch(id, pattern)`` (fnmatch.fnmatchcase) that the
#: SQLite store registers on its connection; see :func:`fnmatch_function`.
FNMATCH_FUNCTION = "semsearch_fnmatch"
#: SQL name of Python's ``str.casefold`` on the store's connections: SQLite's own ``lower()``
#: folds ASCII letters only (``lower('ÜBER')`` is ``'Über'``).
CASEFOLD_FUNCTION = "semsearch_casefold"


def casefold_function(text: str | None) -> str | None:
    """``str.casefold`` for SQL (``ß`` -> ``ss``, ``Ü`` -> ``ü``); NULL stays NULL."""
    return text.casefold() if isinstance(text, str) else None


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
    clauses = fts_clauses(text)
    return " OR ".join(clauses) if clauses else None


def fts_clauses(text: str) -> list[str]:
    """The quoted FTS5 strings that :func:`fts_query` ORs together, unique, in query order."""
    clauses: list[str] = []
    for piece in text.split():
        tokens = [t.casefold() for t in _TOKEN.findall(piece)]
        if len(tokens) > 1:
            clauses.append('"' + " ".join(tokens) + '"')
        clauses += [f'"{t}"' for t in tokens]
    return list(dict.fromkeys(clauses))


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
    long, short = trigram_clauses(text)
    return (" OR ".join(long) or None), short


def trigram_clauses(text: str) -> tuple[list[str], list[str]]:
    """The quoted FTS5 strings that :func:`trigram_query` ORs together, and the short pieces."""
    stripped = (p.strip(_QUOTES).casefold() for p in text.split())
    pieces = list(dict.fromkeys(p for p in stripped if _HAS_WORD.search(p)))
    long = ['"' + p.replace('"', '""') + '"' for p in pieces if len(p) >= TRIGRAM_MIN]
    short = [p for p in pieces if len(p) < TRIGRAM_MIN]
    return long, short


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
    if isinstance(f, IdMatch):
        return compile_id_match(f)
    return _compile_compare(f)


def compile_id_match(m: IdMatch, col: str = "r.id") -> tuple[str, list[Any]]:
    """Compile a record-id match to SQL over ``col`` with exactly :meth:`IdMatch.matches`' meaning.

    A prefix is an index-friendly range (``id >= 'notes/' AND id < 'notes0'``, see
    :func:`semsearch.globs.prefix_end`); LIKE would be case-insensitive and treat ``%`` and
    ``_`` as wildcards. A glob without wildcards is ``=``; others are SQLite's GLOB, spelled by
    :func:`glob_text`. GLOB stops at a NUL character, so the rare id (or pattern) holding one is
    matched by the Python function instead; GLOB measured 2-7x faster than that function on
    100,000 ids (docs/benchmarks.md, "path scope").
    """
    if m.kind == "prefix":
        if not m.pattern:
            return "1", []
        end = prefix_end(m.pattern)
        if end is None:
            return f"{col} >= ?", [m.pattern]
        return f"({col} >= ? AND {col} < ?)", [m.pattern, end]
    tokens = parse_glob(m.pattern)
    if all(isinstance(t, Lit) for t in tokens):
        return f"{col} = ?", [m.pattern]
    if "\x00" in m.pattern:
        return f"{FNMATCH_FUNCTION}({col}, ?)", [m.pattern]
    glob = glob_text(tokens)
    if glob is None:
        return "0", []
    return (
        f"(CASE WHEN instr({col}, char(0)) > 0 THEN {FNMATCH_FUNCTION}({col}, ?) "
        f"ELSE {col} GLOB ? END)"
    ), [m.pattern, glob]


def fnmatch_function(name: str | None, pattern: str | None) -> bool:
    """``fnmatch.fnmatchcase(name, pattern)``; False for NULL. Register it on a connection with
    ``conn.create_function(FNMATCH_FUNCTION, 2, fnmatch_function, deterministic=True)``."""
    return name is not None and pattern is not None and fnmatch.fnmatchcase(name, pattern)


_GLOB_SPECIAL = (ord("-"), ord("]"), ord("^"))


def glob_text(tokens: Sequence[Token]) -> str | None:
    """The SQLite GLOB pattern of fnmatch tokens, or None when they can never match.

    GLOB is case-sensitive like fnmatchcase and shares ``*``, ``?`` and ``[...]``, but negates a
    set with ``[^...]`` and has no escapes: a literal ``*``, ``?`` or ``[`` is written as a
    one-character set (``[*]``), and sets are written from their code-point ranges so that
    ``]`` comes first, ``-`` next (both literal there) and ``^`` last.
    """
    out: list[str] = []
    for t in tokens:
        if isinstance(t, Lit):
            out.append("".join(f"[{c}]" if c in "*?[" else c for c in t.text))
        elif isinstance(t, One | Many):
            out.append("?" if isinstance(t, One) else "*")
        else:
            piece = _glob_set(t)
            if piece is None:
                return None
            out.append(piece)
    return "".join(out)


def _glob_set(s: CharSet) -> str | None:
    if not s.ranges:
        return "?" if s.negated else None
    special = {c for c in _GLOB_SPECIAL if any(lo <= c <= hi for lo, hi in s.ranges)}
    pieces = []
    for lo, hi in s.ranges:
        for a, b in _without(lo, hi, special):
            pieces.append(chr(a) if a == b else f"{chr(a)}-{chr(b)}")
    body = "".join(chr(c) for c in (ord("]"), ord("-")) if c in special) + "".join(pieces)
    body += "^" if ord("^") in special else ""
    if body == "^" and not s.negated:
        return "^"  # a set of just the caret: "[^]" would read as a negation
    return "[" + ("^" if s.negated else "") + body + "]"


def _without(lo: int, hi: int, points: set[int]) -> list[tuple[int, int]]:
    """The range [lo, hi] split around ``points``."""
    out: list[tuple[int, int]] = []
    start = lo
    for p in sorted(x for x in points if lo <= x <= hi):
        if start <= p - 1:
            out.append((start, p - 1))
        start = p + 1
    if start <= hi:
        out.append((start, hi))
    return out


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


def marks(items: Sequence[Any]) -> str:
    """``?, ?, ...``: one bound parameter per item, for ``IN (...)``."""
    return ", ".join("?" for _ in items)


def batches(items: list[Any], size: int = 500) -> Iterator[list[Any]]:
    """``items`` in slices of ``size``, below SQLite's limit on bound parameters per statement."""
    for start in range(0, len(items), size):
        yield items[start : start + size]
