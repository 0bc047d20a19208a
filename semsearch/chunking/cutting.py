"""Cutting a span of text to fit a token window: the core both chunkers share.

How it works: a text (or a markdown block) is tokenized once and cut points are chosen from the
token offsets, preferring paragraph, then list-item, sentence and line boundaries, and token
boundaries only as a last resort. Every piece is then tokenized on its own, exactly as it will be
embedded (breadcrumb included), and cut again if the tokenizer counts it differently in isolation.
"""

from __future__ import annotations

import re
from bisect import bisect_left, bisect_right
from dataclasses import dataclass, field
from itertools import pairwise

from semsearch.chunking.spans import Tokenizer

__all__ = [
    "ITEM",
    "LEAD_ANY",
    "LEAD_LINES",
    "LINE",
    "PARA",
    "SENT",
    "SENTENCE_CUTS",
    "Doc",
    "Levels",
    "Span",
    "check_window",
    "fit",
    "strip_span",
]

Span = tuple[int, int]
Levels = tuple[re.Pattern[str], ...]

PARA = re.compile(r"\n\s*\n")  # blank lines; ends at the last newline, so indentation is kept
ITEM = re.compile(r"\n(?=[ \t]*(?:[-*+]|\d{1,9}[.)])[ \t])")  # before a list item
SENT = re.compile(r"(?<=[.!?\u3002\uff01\uff1f])\s+|(?<=[.!?][\"')\]\u201d\u2019])\s+")
LINE = re.compile(r"\n")
LEAD_ANY = re.compile(r"\s+")
LEAD_LINES = re.compile(r"\s*\n")  # whole blank lines only: a line's indentation is kept

#: The cuts between sentence-like units of prose (paragraph, list item, sentence), as the
#: chunkers prefer them; :mod:`semsearch.windows` splits chunks into sentence windows with them.
SENTENCE_CUTS: Levels = (PARA, ITEM, SENT)


def strip_span(text: str, start: int, end: int, lead: re.Pattern[str]) -> Span:
    """Narrow ``text[start:end]`` past leading ``lead`` and trailing whitespace."""
    start = found.end() if (found := lead.match(text, start, end)) else start
    while end > start and text[end - 1].isspace():
        end -= 1
    return start, end


@dataclass(frozen=True)
class _Cutter:
    """Greedy cuts of a source region, counting tokens from offsets tokenized once."""

    text: str
    starts: list[int]  # sorted token start offsets, in source chars
    budget: int  # tokens per piece
    lead: re.Pattern[str]

    def count(self, start: int, end: int) -> int:
        return bisect_left(self.starts, end) - bisect_left(self.starts, start)

    def split(self, start: int, end: int, levels: Levels) -> list[Span]:
        """Cut an over-long span: pack the parts found at ``levels[0]``, over-long parts go
        down one level; with no level left, cut every ``budget`` tokens."""
        if not levels:
            return self.token_cuts(start, end)
        parts = self.parts(start, end, levels[0])
        if len(parts) < 2:
            return self.split(start, end, levels[1:])
        out: list[Span] = []
        for a, b in parts:
            if out and self.count(out[-1][0], b) <= self.budget:
                out[-1] = (out[-1][0], b)
            elif self.count(a, b) <= self.budget:
                out.append((a, b))
            else:
                out.extend(self.split(a, b, levels[1:]))
        return out

    def parts(self, start: int, end: int, sep: re.Pattern[str]) -> list[Span]:
        cuts = [start, *(i for found in sep.finditer(self.text, start, end) for i in found.span())]
        cuts.append(end)
        spans = [
            strip_span(self.text, cuts[i], cuts[i + 1], self.lead) for i in range(0, len(cuts), 2)
        ]
        return [(a, b) for a, b in spans if a < b]

    def token_cuts(self, start: int, end: int) -> list[Span]:
        first, last = bisect_left(self.starts, start), bisect_left(self.starts, end)
        cuts = [start, *(self.starts[i] for i in range(first + self.budget, last, self.budget))]
        spans = [strip_span(self.text, a, b, self.lead) for a, b in pairwise([*cuts, end])]
        return [(a, b) for a, b in spans if a < b]


@dataclass
class Doc:
    """The input text and what is needed to cut it."""

    text: str
    tokenizer: Tokenizer
    max_tokens: int
    lead: re.Pattern[str]
    line_starts: list[int] = field(default_factory=list)  # markdown only

    def count(self, text: str) -> int:
        return len(self.tokenizer.token_spans(text))

    def span(self, first: int, stop: int) -> Span:
        """Stripped char span of 0-based lines ``first`` to ``stop`` (exclusive)."""
        end = self.line_starts[stop] if stop < len(self.line_starts) else len(self.text)
        return strip_span(self.text, self.line_starts[first], end, self.lead)

    def line_of(self, char: int) -> int:
        """0-based line holding the char at offset ``char``."""
        return bisect_right(self.line_starts, char) - 1


def fit(
    doc: Doc, start: int, end: int, frame: tuple[str, str], levels: Levels, spans: list[Span]
) -> list[tuple[int, int, int]]:
    """Cut ``text[start:end]`` so that ``frame[0] + piece + frame[1]`` fits the window.

    ``spans`` are the tokens of that framed text for the whole region. Returns ``(start, end,
    tokens)`` per piece, tokens counted on the framed piece itself. Raises ValueError if a piece
    cannot be cut any further (a single char needs more tokens than the window leaves).
    """
    if len(spans) <= doc.max_tokens:
        return [(start, end, len(spans))]
    before, after = frame
    shift, body_end = start - len(before), len(before) + end - start
    starts = sorted(a + shift for a, _ in spans if len(before) <= a < body_end)
    budget = doc.max_tokens - (len(spans) - len(starts))
    cutter = _Cutter(doc.text, starts, budget, doc.lead)
    pieces = cutter.split(start, end, levels) if budget > 0 else []
    if len(pieces) < 2:
        raise ValueError(f"max_tokens={doc.max_tokens} cannot hold {doc.text[start:end][:40]!r}")
    out: list[tuple[int, int, int]] = []
    for a, b in pieces:
        sub = doc.tokenizer.token_spans(before + doc.text[a:b] + after)
        out.extend(fit(doc, a, b, frame, levels, sub))
    return out


def check_window(max_tokens: int) -> None:
    """Raise ValueError unless the window holds at least one token."""
    if max_tokens < 1:
        raise ValueError(f"max_tokens must be at least 1, got {max_tokens}")
