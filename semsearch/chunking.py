"""Token-aware chunkers for plain text and markdown.

A chunk never exceeds the embedder's token window, counted with the model's own tokenizer:
text past the window would be silently dropped by the model, so it goes into the next chunk.

How it works: a text (or a markdown block) is tokenized once and cut points are chosen from the
token offsets, preferring paragraph, then list-item, sentence and line boundaries, and token
boundaries only as a last resort. Every piece is then tokenized on its own, exactly as it will be
embedded (breadcrumb included), and cut again if the tokenizer counts it differently in isolation.
"""

from __future__ import annotations

import functools
import re
from bisect import bisect_left, bisect_right
from dataclasses import dataclass, field, replace
from itertools import pairwise
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from markdown_it import MarkdownIt

__all__ = [
    "SENTENCE_CUTS",
    "ChunkSpan",
    "Tokenizer",
    "chunk_markdown",
    "chunk_text",
    "embedding_text",
]


class Tokenizer(Protocol):
    """Anything that can split text into tokens and tell where each token lies."""

    def token_spans(self, text: str) -> list[tuple[int, int]]:
        """Char offsets ``(start, end)`` of each token of ``text``, special tokens excluded."""
        ...


@dataclass(frozen=True)
class ChunkSpan:
    """One chunk of a text.

    Attributes:
        text: the chunk's text as stored and shown.
        ordinal: 0-based position of the chunk within its record.
        char_start, char_end: offsets of the chunk's source span in the input text (end exclusive).
        heading_path: markdown headings above the chunk, outermost first; () for plain text.
        line_start, line_end: 1-based inclusive line range in the original file (markdown only).
    """

    text: str
    ordinal: int
    char_start: int
    char_end: int
    heading_path: tuple[str, ...] = ()
    line_start: int | None = None
    line_end: int | None = None


def embedding_text(text: str, heading_path: tuple[str, ...]) -> str:
    """The text that is embedded for a chunk: its heading breadcrumb, a blank line, its text."""
    if not heading_path:
        return text
    return " > ".join(heading_path) + "\n\n" + text


Span = tuple[int, int]
Levels = tuple[re.Pattern[str], ...]

_PARA = re.compile(r"\n\s*\n")  # blank lines; ends at the last newline, so indentation is kept
_ITEM = re.compile(r"\n(?=[ \t]*(?:[-*+]|\d{1,9}[.)])[ \t])")  # before a list item
_SENT = re.compile(r"(?<=[.!?\u3002\uff01\uff1f])\s+|(?<=[.!?][\"')\]\u201d\u2019])\s+")
_LINE = re.compile(r"\n")
_NEWLINE = re.compile(r"\r\n?|\n")  # markdown-it's own line breaks
_LEAD_ANY = re.compile(r"\s+")
_LEAD_LINES = re.compile(r"\s*\n")  # whole blank lines only: a line's indentation is kept

_PLAIN: Levels = (_PARA, _SENT, _LINE)
_PROSE: Levels = (_PARA, _ITEM, _SENT, _LINE)
_CODE: Levels = (_PARA, _LINE)
#: The cuts between sentence-like units of prose (paragraph, list item, sentence), as the
#: chunkers prefer them; :mod:`semsearch.windows` splits chunks into sentence windows with them.
SENTENCE_CUTS: Levels = (_PARA, _ITEM, _SENT)
_ROWS: Levels = (_LINE,)
_LEVELS = {"fence": _CODE, "code_block": _CODE, "html_block": _CODE, "table": _ROWS}


@functools.cache
def _markdown_parser() -> MarkdownIt:
    """CommonMark with tables; built on first use, so keyword-only commands never import it."""
    from markdown_it import MarkdownIt

    return MarkdownIt("commonmark").enable("table")


def _strip(text: str, start: int, end: int, lead: re.Pattern[str]) -> Span:
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
        spans = [_strip(self.text, cuts[i], cuts[i + 1], self.lead) for i in range(0, len(cuts), 2)]
        return [(a, b) for a, b in spans if a < b]

    def token_cuts(self, start: int, end: int) -> list[Span]:
        first, last = bisect_left(self.starts, start), bisect_left(self.starts, end)
        cuts = [start, *(self.starts[i] for i in range(first + self.budget, last, self.budget))]
        spans = [_strip(self.text, a, b, self.lead) for a, b in pairwise([*cuts, end])]
        return [(a, b) for a, b in spans if a < b]


@dataclass
class _Doc:
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
        return _strip(self.text, self.line_starts[first], end, self.lead)

    def line_of(self, char: int) -> int:
        """0-based line holding the char at offset ``char``."""
        return bisect_right(self.line_starts, char) - 1


def _fit(
    doc: _Doc, start: int, end: int, frame: tuple[str, str], levels: Levels, spans: list[Span]
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
        out.extend(_fit(doc, a, b, frame, levels, sub))
    return out


def _check_window(max_tokens: int) -> None:
    if max_tokens < 1:
        raise ValueError(f"max_tokens must be at least 1, got {max_tokens}")


def chunk_text(text: str, tokenizer: Tokenizer, max_tokens: int) -> list[ChunkSpan]:
    """Cut plain text into chunks of at most ``max_tokens`` tokens each.

    Paragraphs (split on blank lines) are packed while they fit; a paragraph too long alone is
    cut between sentences, then lines, and a sentence too long alone on token boundaries. Every
    chunk is an exact slice ``text[char_start:char_end]`` (char offsets, end exclusive) stripped
    of surrounding whitespace; no non-whitespace char is dropped. Whitespace-only text gives [].

    Args:
        text: the text to cut.
        tokenizer: the embedding model's tokenizer; tokens are counted with its ``token_spans``.
        max_tokens: the model's window in tokens, special tokens excluded.

    Raises:
        ValueError: if ``max_tokens`` < 1, or one char alone needs more than ``max_tokens``.
    """
    _check_window(max_tokens)
    start, end = _strip(text, 0, len(text), _LEAD_ANY)
    if start >= end:
        return []
    doc = _Doc(text, tokenizer, max_tokens, _LEAD_ANY)
    spans = tokenizer.token_spans(text[start:end])
    pieces = _fit(doc, start, end, ("", ""), _PLAIN, spans)
    return [ChunkSpan(text[a:b], i, a, b) for i, (a, b, _) in enumerate(pieces)]


@dataclass(frozen=True)
class _Block:
    """A top-level markdown block: 0-based lines ``first`` to ``stop`` (exclusive)."""

    kind: str  # markdown-it token type without "_open": heading, fence, table, paragraph, ...
    first: int
    stop: int
    level: int = 0  # heading level 1..6
    title: str = ""  # heading text without the #s
    markup: str = ""  # fence marker: ``` or ~~~ (or longer)


@dataclass(frozen=True)
class _Piece:
    """A run of source that goes whole into one chunk."""

    start: int  # source char span
    end: int
    text: str  # the exact slice, or a re-wrapped fence or table part
    tokens: int  # tokens of ``text`` alone (breadcrumb excluded)
    wrapped: bool = False


def _blocks(doc: _Doc) -> list[_Block]:
    """Top-level blocks from markdown-it's line maps; uncovered non-blank lines become blocks."""
    tokens = _markdown_parser().parse(doc.text)
    found: list[_Block] = []
    for i, tok in enumerate(tokens):
        if tok.level or tok.map is None:  # nested tokens belong to their top-level block
            continue
        first, stop = tok.map[0], min(tok.map[1], len(doc.line_starts))
        kind = tok.type.removesuffix("_open")
        level = int(tok.tag[1:]) if kind == "heading" else 0
        title = tokens[i + 1].content.strip() if level else ""
        found.append(_Block(kind, first, stop, level, title, tok.markup))
    out, line = [], 0
    for block in [*found, _Block("end", len(doc.line_starts), len(doc.line_starts))]:
        gap = doc.span(line, block.first) if line < block.first else (0, 0)
        if gap[0] < gap[1]:  # link reference definitions, for instance, have no token
            out.append(_Block("paragraph", line, block.first))
        out.append(block)
        line = block.stop
    return out[:-1]


def _sections(blocks: list[_Block]) -> list[tuple[tuple[str, ...], list[_Block]]]:
    """Group blocks under their headings. A heading with no body of its own (directly followed
    by a deeper heading) stays with the subsection's blocks, under the deeper path."""
    sections: list[tuple[tuple[str, ...], list[_Block]]] = []
    path: list[tuple[int, str]] = []
    current: list[_Block] = []
    for block in blocks:
        if block.kind == "heading":
            has_body = any(b.kind != "heading" for b in current)
            if current and (has_body or block.level <= path[-1][0]):
                sections.append((tuple(t for _, t in path), current))
                current = []
            while path and path[-1][0] >= block.level:
                path.pop()
            path.append((block.level, block.title))
        current.append(block)
    if current:
        sections.append((tuple(t for _, t in path), current))
    return sections


def _frame_parts(doc: _Doc, block: _Block) -> tuple[str, Span, str] | None:
    """Head, body span and tail of a fence or table, so that each part can be re-wrapped."""
    head_lines, body_stop, tail = 2, block.stop, ""  # a table's header and delimiter rows
    if block.kind == "fence":
        last = doc.text[slice(*doc.span(block.stop - 1, block.stop))]
        marks, fence = last.strip(), block.markup
        closed = block.stop - block.first > 1 and marks.count(fence[0]) == len(marks) >= len(fence)
        head_lines, body_stop = 1, block.stop - 1 if closed else block.stop
        tail = "\n" + (last if closed else fence)
    body_first = block.first + head_lines
    if body_first >= body_stop:
        return None
    head = doc.text[doc.line_starts[block.first] : doc.line_starts[body_first]]
    return head, doc.span(body_first, body_stop), tail


def _wrapped_pieces(doc: _Doc, block: _Block, prefix: str, n_prefix: int) -> list[_Piece] | None:
    """Cut an over-long fence or table between lines, wrapping each part in the fence's
    opening and closing lines or the table's header rows. None if it cannot be wrapped."""
    parts = _frame_parts(doc, block)
    if parts is None or doc.count(prefix + parts[0] + parts[2]) > doc.max_tokens // 2:
        return None
    head, (start, end), tail = parts
    frame = (prefix + head, tail)
    spans = doc.tokenizer.token_spans(frame[0] + doc.text[start:end] + frame[1])
    cuts = _fit(doc, start, end, frame, _LEVELS[block.kind], spans)
    block_start, block_end = doc.span(block.first, block.stop)
    pieces = [_Piece(a, b, head + doc.text[a:b] + tail, n - n_prefix, True) for a, b, n in cuts]
    pieces[0] = replace(pieces[0], start=block_start)  # the opening and closing lines
    pieces[-1] = replace(pieces[-1], end=block_end)
    return pieces


def _block_pieces(doc: _Doc, block: _Block, prefix: str, n_prefix: int) -> list[_Piece]:
    """The block whole if it fits the window under ``prefix``, else its parts."""
    start, end = doc.span(block.first, block.stop)
    spans = doc.tokenizer.token_spans(prefix + doc.text[start:end])
    if len(spans) <= doc.max_tokens:
        return [_Piece(start, end, doc.text[start:end], len(spans) - n_prefix)]
    if block.kind in ("fence", "table"):
        wrapped = _wrapped_pieces(doc, block, prefix, n_prefix)
        if wrapped:
            return wrapped
    levels = _LEVELS.get(block.kind, _PROSE)
    cuts = _fit(doc, start, end, (prefix, ""), levels, spans)
    return [_Piece(a, b, doc.text[a:b], n - n_prefix) for a, b, n in cuts]


def _fit_path(doc: _Doc, path: tuple[str, ...]) -> tuple[tuple[str, ...], int]:
    """Drop outer headings until the breadcrumb takes at most half the window; its tokens."""
    while path:
        n_prefix = doc.count(embedding_text("", path))
        if n_prefix <= doc.max_tokens // 2:
            return path, n_prefix
        path = path[1:]
    return path, 0


def _join(text: str, group: list[_Piece]) -> str:
    """The pieces' texts with the source between them (a newline next to re-wrapped parts)."""
    out = [group[0].text]
    for prev, cur in pairwise(group):
        gap = text[prev.end : cur.start]
        out += [gap if gap or not (prev.wrapped or cur.wrapped) else "\n", cur.text]
    return "".join(out)


def _pack(doc: _Doc, pieces: list[_Piece], path: tuple[str, ...], room: int) -> list[list[_Piece]]:
    """Greedily pack consecutive pieces while their token sum fits ``room``; verify each."""
    groups: list[list[_Piece]] = []
    total = 0
    for piece in pieces:
        if groups and total + piece.tokens <= room:
            groups[-1].append(piece)
            total += piece.tokens
        else:
            groups.append([piece])
            total = piece.tokens
    return [checked for group in groups for checked in _verify(doc, group, path)]


def _verify(doc: _Doc, group: list[_Piece], path: tuple[str, ...]) -> list[list[_Piece]]:
    """Count the embedded text of a packed group; halve the group while it overflows.
    A single piece was already counted as embedded when it was cut."""
    if len(group) == 1 or doc.count(embedding_text(_join(doc.text, group), path)) <= doc.max_tokens:
        return [group]
    mid = len(group) // 2
    return _verify(doc, group[:mid], path) + _verify(doc, group[mid:], path)


def chunk_markdown(
    text: str, tokenizer: Tokenizer, max_tokens: int, *, line_offset: int = 0
) -> list[ChunkSpan]:
    """Cut a markdown body into chunks that follow its headings.

    Consecutive top-level blocks of a section are packed while ``embedding_text(chunk.text,
    chunk.heading_path)`` stays within ``max_tokens`` tokens. A fence, indented code block or
    table that fits the window is never split; one that does not is cut between lines (fences
    re-wrapped in their opening and closing lines, tables repeating their header and delimiter
    rows); paragraphs and lists between items, sentences or lines; a line too long alone on
    token boundaries. Heading lines stay in the chunk text; a breadcrumb longer than half the
    window loses its outermost headings. Text comes from the source lines.

    Args:
        text: the markdown body, front matter already removed.
        tokenizer: the embedding model's tokenizer; tokens are counted with its ``token_spans``.
        max_tokens: the model's window in tokens, special tokens excluded.
        line_offset: lines of the file before ``text``; line_start/line_end are 1-based file
            lines. char_start/char_end are char offsets into ``text``.

    Raises:
        ValueError: if ``max_tokens`` < 1, or one char alone needs more than the window leaves.
    """
    _check_window(max_tokens)
    if not text.strip():
        return []
    starts = [0, *(found.end() for found in _NEWLINE.finditer(text))]
    doc = _Doc(text, tokenizer, max_tokens, _LEAD_LINES, starts)
    chunks: list[ChunkSpan] = []
    for full_path, blocks in _sections(_blocks(doc)):
        path, n_prefix = _fit_path(doc, full_path)
        prefix = embedding_text("", path)
        pieces = [p for block in blocks for p in _block_pieces(doc, block, prefix, n_prefix)]
        for group in _pack(doc, pieces, path, max_tokens - n_prefix):
            start, end = group[0].start, group[-1].end
            lines = (doc.line_of(start) + 1 + line_offset, doc.line_of(end - 1) + 1 + line_offset)
            chunks.append(ChunkSpan(_join(text, group), len(chunks), start, end, path, *lines))
    return chunks
