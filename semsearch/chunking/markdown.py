"""Markdown into chunks that follow its headings, with the heading path and source lines.

Top-level blocks come from markdown-it's line maps and are grouped under their headings; a
fence, indented code block or table that fits the window is never split (see
:func:`chunk_markdown`).
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, replace
from itertools import pairwise
from typing import TYPE_CHECKING

from semsearch.chunking.cutting import (
    ITEM,
    LEAD_LINES,
    LINE,
    PARA,
    SENT,
    Doc,
    Levels,
    Span,
    check_window,
    fit,
)
from semsearch.chunking.spans import ChunkSpan, Tokenizer, embedding_text
from semsearch.progress import note

if TYPE_CHECKING:
    from markdown_it import MarkdownIt

__all__ = ["chunk_markdown"]

_NEWLINE = re.compile(r"\r\n?|\n")  # markdown-it's own line breaks
_PROSE: Levels = (PARA, ITEM, SENT, LINE)
_CODE: Levels = (PARA, LINE)
_ROWS: Levels = (LINE,)
_LEVELS = {"fence": _CODE, "code_block": _CODE, "html_block": _CODE, "table": _ROWS}


@functools.cache
def _markdown_parser() -> MarkdownIt:
    """CommonMark with tables; built on first use, so keyword-only commands never import it."""
    from markdown_it import MarkdownIt

    return MarkdownIt("commonmark").enable("table")


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


def _blocks(doc: Doc) -> list[_Block]:
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


def _frame_parts(doc: Doc, block: _Block) -> tuple[str, Span, str] | None:
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


def _wrapped_pieces(doc: Doc, block: _Block, prefix: str, n_prefix: int) -> list[_Piece] | None:
    """Cut an over-long fence or table between lines, wrapping each part in the fence's
    opening and closing lines or the table's header rows. None if it cannot be wrapped."""
    parts = _frame_parts(doc, block)
    if parts is None or doc.count(prefix + parts[0] + parts[2]) > doc.max_tokens // 2:
        return None
    head, (start, end), tail = parts
    frame = (prefix + head, tail)
    spans = doc.tokenizer.token_spans(frame[0] + doc.text[start:end] + frame[1])
    cuts = fit(doc, start, end, frame, _LEVELS[block.kind], spans)
    block_start, block_end = doc.span(block.first, block.stop)
    pieces = [_Piece(a, b, head + doc.text[a:b] + tail, n - n_prefix, True) for a, b, n in cuts]
    pieces[0] = replace(pieces[0], start=block_start)  # the opening and closing lines
    pieces[-1] = replace(pieces[-1], end=block_end)
    return pieces


def _block_pieces(doc: Doc, block: _Block, prefix: str, n_prefix: int) -> list[_Piece]:
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
    cuts = fit(doc, start, end, (prefix, ""), levels, spans)
    return [_Piece(a, b, doc.text[a:b], n - n_prefix) for a, b, n in cuts]


def _fit_path(doc: Doc, path: tuple[str, ...]) -> tuple[tuple[str, ...], int]:
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


def _pack(doc: Doc, pieces: list[_Piece], path: tuple[str, ...], room: int) -> list[list[_Piece]]:
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


def _verify(doc: Doc, group: list[_Piece], path: tuple[str, ...]) -> list[list[_Piece]]:
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
    check_window(max_tokens)
    if not text.strip():
        return []
    starts = [0, *(found.end() for found in _NEWLINE.finditer(text))]
    doc = Doc(text, tokenizer, max_tokens, LEAD_LINES, starts)
    chunks: list[ChunkSpan] = []
    told = 0
    for full_path, blocks in _sections(_blocks(doc)):
        path, n_prefix = _fit_path(doc, full_path)
        prefix = embedding_text("", path)
        pieces = [p for block in blocks for p in _block_pieces(doc, block, prefix, n_prefix)]
        for group in _pack(doc, pieces, path, max_tokens - n_prefix):
            start, end = group[0].start, group[-1].end
            lines = (doc.line_of(start) + 1 + line_offset, doc.line_of(end - 1) + 1 + line_offset)
            chunks.append(ChunkSpan(_join(text, group), len(chunks), start, end, path, *lines))
        note("cut", len(chunks) - told)  # per section: a huge note's chunking shows progress
        told = len(chunks)
    return chunks
