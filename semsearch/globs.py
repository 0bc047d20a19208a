"""fnmatch globs as tokens, so every store can compile a record-id glob with the same meaning.

Path scopes (``folder=``, ``include=``, ``exclude=``) match record ids with
:func:`fnmatch.fnmatchcase`: ``*`` matches any run of characters (``/`` and newlines too), ``?``
one character, ``[seq]`` one character of a set and ``[!seq]`` one outside it; there is no
escaping, and a ``[`` without a closing ``]`` is a plain character. SQLite's GLOB, PostgreSQL's
regular expressions and Milvus' LIKE each spell these differently (GLOB negates with ``[^..]``,
LIKE has no sets), so :func:`parse_glob` turns a pattern into tokens once and each backend
renders the tokens in its own syntax.

A character set becomes explicit code-point ranges. They are computed by asking
:func:`fnmatch.fnmatchcase` itself, once per interval between the characters the set names
(membership can only change at those characters), so set semantics (ranges, reversed ranges,
a leading ``]``, ``-`` at either end) are Python's by construction, not re-implemented.
"""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass

__all__ = ["MAX_CODE_POINT", "CharSet", "Lit", "Many", "One", "Token", "parse_glob", "prefix_end"]

#: The largest Unicode code point.
MAX_CODE_POINT = 0x10FFFF
_SURROGATES = (0xD800, 0xDFFF)


@dataclass(frozen=True)
class Lit:
    """Characters that must appear literally (one or more)."""

    text: str


@dataclass(frozen=True)
class One:
    """``?``: exactly one character, any (newline included)."""


@dataclass(frozen=True)
class Many:
    """``*``: any run of characters, empty included (``/`` and newline included)."""


@dataclass(frozen=True)
class CharSet:
    """One character from a set: ``ranges`` are sorted, disjoint, inclusive code-point ranges
    ``(lo, hi)`` of the set as written; ``negated`` (``[!...]``) means one character outside
    them. Empty ``ranges`` never match, unless negated, when any one character matches."""

    ranges: tuple[tuple[int, int], ...]
    negated: bool


Token = Lit | One | Many | CharSet


def parse_glob(pattern: str) -> tuple[Token, ...]:
    """Split an fnmatch pattern into tokens, with exactly :func:`fnmatch.fnmatchcase`'s meaning.

    Consecutive literal characters merge into one :class:`Lit` and runs of ``*`` into one
    :class:`Many`. Bracket expressions are found as :func:`fnmatch.translate` finds them: after
    ``[``, an optional ``!`` and then an optional ``]`` belong to the set, which ends at the next
    ``]``; without one, the ``[`` is literal.
    """
    tokens: list[Token] = []
    i, n = 0, len(pattern)
    while i < n:
        c = pattern[i]
        i += 1
        if c == "*":
            if not tokens or not isinstance(tokens[-1], Many):
                tokens.append(Many())
        elif c == "?":
            tokens.append(One())
        elif c == "[" and (end := _bracket_end(pattern, i)) is not None:
            tokens.append(_char_set(pattern[i - 1 : end + 1]))
            i = end + 1
        elif tokens and isinstance(tokens[-1], Lit):
            tokens[-1] = Lit(tokens[-1].text + c)
        else:
            tokens.append(Lit(c))
    return tuple(tokens)


def _bracket_end(pattern: str, i: int) -> int | None:
    """Index of the ``]`` closing the bracket opened just before ``i``, or None."""
    j, n = i, len(pattern)
    if j < n and pattern[j] == "!":
        j += 1
    if j < n and pattern[j] == "]":
        j += 1
    while j < n and pattern[j] != "]":
        j += 1
    return j if j < n else None


def _char_set(bracket: str) -> CharSet:
    """The ranges of a closed bracket expression ``[...]``, probed through fnmatchcase."""
    negated = bracket[1] == "!"
    cuts = {0} | {ord(c) for c in bracket} | {ord(c) + 1 for c in bracket}
    points = sorted(p for p in cuts if p <= MAX_CODE_POINT)
    ranges: list[tuple[int, int]] = []
    for k, start in enumerate(points):
        stop = points[k + 1] - 1 if k + 1 < len(points) else MAX_CODE_POINT
        if fnmatch.fnmatchcase(chr(start), bracket) != negated:
            if ranges and ranges[-1][1] == start - 1:
                ranges[-1] = (ranges[-1][0], stop)
            else:
                ranges.append((start, stop))
    return CharSet(tuple(ranges), negated)


def prefix_end(prefix: str) -> str | None:
    """The least string above every string that starts with ``prefix``, or None if none is.

    So ``s.startswith(prefix)`` is exactly ``prefix <= s < prefix_end(prefix)`` in code-point
    order (which is UTF-8 byte order: SQLite's BINARY collation, PostgreSQL's ``"C"``, Milvus):
    an index-friendly range. ``"notes/"`` gives ``"notes0"``. Surrogates are skipped: stored
    text is UTF-8 and cannot hold them.
    """
    chars = list(prefix)
    while chars:
        code = ord(chars.pop())
        if code < MAX_CODE_POINT:
            code += 1
            if _SURROGATES[0] <= code <= _SURROGATES[1]:
                code = _SURROGATES[1] + 1
            return "".join(chars) + chr(code)
    return None
