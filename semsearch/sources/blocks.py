"""A document's text as blocks (headings, paragraphs, table rows, code), written as markdown.

HTML and .docx files have no lines of their own worth citing, but they have headings,
paragraphs and tables. Their readers turn them into :class:`Block` lists, and
:func:`to_markdown` writes those as markdown, so the markdown chunker of a folder's collection
cuts them by their headings (``Chunk.heading_path``), keeps table rows with their header and
never splits a code block that fits the window.

The text of each block is kept as it is; only what would change the markdown structure is
escaped: a paragraph line that would read as a heading, a setext underline or a fence gets a
backslash in front, and a ``|`` in a table cell becomes ``\\|``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

__all__ = ["Block", "to_markdown"]

BlockKind = Literal["heading", "para", "row", "code"]
_STRUCTURE = re.compile(r"^(#{1,6}(?:[ \t]|$)|=+[ \t]*$|-+[ \t]*$|```|~~~)")


@dataclass(frozen=True)
class Block:
    """One block of a document.

    Attributes:
        kind: ``heading`` (``level`` 1..6), ``para`` (text, lines kept), ``row`` (``cells``
            of one table row; rows with the same ``table`` number form one table) or
            ``code`` (preformatted text, kept verbatim).
        text: the block's text (for a row: its cells joined by " | ").
    """

    kind: BlockKind
    text: str
    level: int = 0
    cells: tuple[str, ...] = ()
    table: int = 0


def _para(text: str) -> str:
    return "\n".join("\\" + ln if _STRUCTURE.match(ln) else ln for ln in text.split("\n"))


def _row(cells: tuple[str, ...]) -> str:
    return "| " + " | ".join(c.replace("|", "\\|").replace("\n", " ") for c in cells) + " |"


def _code(text: str) -> str:
    ticks = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, ticks + 1)
    return f"{fence}\n{text}\n{fence}"


def to_markdown(blocks: list[Block]) -> str:
    """The blocks as markdown: blocks apart by a blank line, a table's rows on consecutive
    lines with a delimiter row after its first (header) row; headings as ``#`` lines (level
    clamped to 1..6). Empty blocks are dropped."""
    out: list[str] = []
    table = None
    for block in blocks:
        if block.kind == "row":
            if not any(c.strip() for c in block.cells):
                continue
            if block.table == table:
                out[-1] += "\n" + _row(block.cells)
            else:
                delimiter = "| " + " | ".join("---" for _ in block.cells) + " |"
                out.append(_row(block.cells) + "\n" + delimiter)
            table = block.table
            continue
        table = None
        text = block.text.strip("\n") if block.kind == "code" else block.text.strip()
        if not text.strip():
            continue
        if block.kind == "heading":
            level = min(max(block.level, 1), 6)
            out.append("#" * level + " " + " ".join(text.split()))
        elif block.kind == "code":
            out.append(_code(text))
        else:
            out.append(_para(text))
    return "\n\n".join(out)
