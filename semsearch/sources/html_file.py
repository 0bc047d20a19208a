"""HTML files of a folder as records: main text, title, headings as breadcrumbs.

The page is parsed with the standard library's :class:`html.parser.HTMLParser` into
:class:`~semsearch.sources.blocks.Block` lists (headings ``h1``-``h6``, paragraphs and list
items, table rows, ``pre`` as code), written as markdown (:func:`~semsearch.sources.blocks.
to_markdown`) so that chunks carry their heading path. Dropped: ``script``, ``style``,
``template``, ``noscript``, ``svg``, ``nav``, ``aside``, ``form``, elements with
``role="navigation"`` and ``hidden``, and ``header``/``footer`` outside an ``article`` or
``main``. When the page has a ``main`` element (or ``role="main"``), only its content is kept.

Why the standard library: ``benchmarks/html_extract.py`` compared it with lxml and
BeautifulSoup (see docs/benchmarks.md). It kept the same text from well-formed pages and its
time per page is small next to embedding the page; it adds no dependency, and, being pure
Python, a malformed page cannot crash the process that reads it (the watcher runs inside
``semsearch serve``).

A page with no text is skipped with the reason (:class:`~semsearch.sources.skipped.
FileSkipped`); bytes that are not UTF-8 are decoded with the charset the page declares, else
the page is skipped.
"""

from __future__ import annotations

import re
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

from semsearch.sources.blocks import Block, to_markdown
from semsearch.sources.skipped import FileSkipped

__all__ = ["BlockBuilder", "html_record", "html_text", "page_blocks"]

#: Elements whose content is never text of the page.
DROPPED = frozenset(
    {"script", "style", "template", "noscript", "svg", "nav", "aside", "form", "select",
     "button", "iframe", "object", "canvas"}
)  # fmt: skip
_OUTER_ONLY = frozenset({"header", "footer"})  # dropped unless inside article or main
_BREAKS = frozenset(
    {"p", "div", "section", "article", "main", "li", "dt", "dd", "blockquote", "ul", "ol",
     "dl", "table", "figure", "figcaption", "caption", "address", "hr", "header", "footer",
     "body", "details", "summary"}
)  # fmt: skip
_VOID = frozenset(
    {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source",
     "track", "wbr"}
)  # fmt: skip
_HEADING = re.compile(r"h([1-6])")
_CHARSET = re.compile(rb"<meta[^>]+charset\s*=\s*[\"']?([A-Za-z0-9_.:-]+)", re.I)


class BlockBuilder:
    """Turns a stream of start tags, end tags and text into :class:`Block` s.

    Any parser can drive it (the standard library's here; lxml's and BeautifulSoup's trees in
    ``benchmarks/html_extract.py``), so that parsers are compared on the same rules.

    When the page has a ``main`` element (or ``role="main"``), :meth:`finish` keeps only the
    blocks inside it.
    """

    def __init__(self) -> None:
        self.blocks: list[Block] = []
        self.title = ""
        self._main_blocks: list[Block] = []
        self._stack: list[tuple[str, bool, bool]] = []  # (tag, drops, is main)
        self._dropping = 0
        self._mains = 0
        self._articles = 0
        self._in_title = False
        self._text: list[str] = []
        self._heading = 0
        self._pre = 0
        self._cells: list[str] | None = None
        self._tables = 0

    def start(self, tag: str, attrs: dict[str, str | None]) -> None:
        """An element opens (``tag`` lower case)."""
        if tag in _VOID:
            if tag == "br" and not self._dropping:
                self._text.append("\n")
            elif tag == "hr" and not self._dropping:
                self._flush()
            return
        role = (attrs.get("role") or "").lower()
        drops = (
            tag in DROPPED
            or role == "navigation"
            or "hidden" in attrs
            or (tag in _OUTER_ONLY and not (self._articles or self._mains))
        )
        is_main = tag == "main" or role == "main"
        self._stack.append((tag, drops, is_main))
        self._dropping += drops
        self._mains += is_main
        self._articles += tag == "article"
        if tag == "title":
            self._in_title = True
        self._open(tag)

    def _open(self, tag: str) -> None:
        heading = _HEADING.fullmatch(tag)
        if heading or tag in _BREAKS or tag == "pre":
            self._flush()
        if heading:
            self._heading = int(heading.group(1))
        elif tag == "pre":
            self._pre += 1
        elif tag == "table":
            self._tables += 1
        elif tag == "tr":
            self._end_row()  # the previous row, when its </tr> was left out (legal HTML)
            self._flush()
            self._cells = []
        elif tag in ("td", "th") and self._cells is not None:
            self._flush_cell()

    def end(self, tag: str) -> None:
        """An element closes; unmatched end tags are ignored, unclosed ones closed with it."""
        if tag in _VOID or not any(t == tag for t, _, _ in self._stack):
            return
        while self._stack:
            open_tag, drops, is_main = self._stack.pop()
            self._dropping -= drops
            self._mains -= is_main
            self._articles -= open_tag == "article"
            self._close(open_tag)
            if open_tag == tag:
                return

    def _close(self, tag: str) -> None:
        if tag == "title":
            self._in_title = False
        elif _HEADING.fullmatch(tag):
            self._flush()
            self._heading = 0
        elif tag == "pre":
            self._flush()
            self._pre = max(self._pre - 1, 0)
        elif tag in ("td", "th") and self._cells is not None:
            self._flush_cell()
        elif tag == "tr":
            self._end_row()
        elif tag in _BREAKS:
            self._flush()

    def data(self, text: str) -> None:
        """Text of the page (entities already decoded)."""
        if self._dropping:
            return
        if self._in_title:
            self.title += text
        else:
            self._text.append(text)

    def _add(self, block: Block) -> None:
        self.blocks.append(block)
        if self._mains:
            self._main_blocks.append(block)

    def _end_row(self) -> None:
        if self._cells is None:
            return
        self._flush_cell()
        cells = tuple(self._cells)
        self._cells = None
        self._add(Block("row", " | ".join(cells), cells=cells, table=self._tables))

    def _flush_cell(self) -> None:
        if self._cells is not None and self._text:
            self._cells.append(" ".join("".join(self._text).split()))
        self._text = []

    def _flush(self) -> None:
        if self._cells is not None:  # text between cells of an open row belongs to a cell
            return
        raw = "".join(self._text)
        self._text = []
        if self._pre:
            if raw.strip():
                self._add(Block("code", raw))
            return
        lines = [" ".join(line.split()) for line in raw.split("\n")]
        text = "\n".join(line for line in lines if line)
        if not text:
            return
        if self._heading:
            self._add(Block("heading", " ".join(text.split()), level=self._heading))
            self._heading = 0
        else:
            self._add(Block("para", text))

    def finish(self) -> list[Block]:
        """Close what is still open and return the blocks (those inside ``main`` if any)."""
        while self._stack:
            self.end(self._stack[-1][0])
        self._flush()
        self.title = " ".join(self.title.split())
        return self._main_blocks or self.blocks


class _StdlibParser(HTMLParser):
    def __init__(self, builder: BlockBuilder) -> None:
        super().__init__(convert_charrefs=True)
        self.builder = builder

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.builder.start(tag, dict(attrs))

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.builder.start(tag, dict(attrs))
        self.builder.end(tag)

    def handle_endtag(self, tag: str) -> None:
        self.builder.end(tag)

    def handle_data(self, data: str) -> None:
        self.builder.data(data)


def html_text(data: bytes) -> str:
    """The page decoded: UTF-8 (a BOM is dropped), else the charset its ``meta`` declares.

    Raises:
        FileSkipped: not UTF-8 and no known charset declared.
    """
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        declared = _CHARSET.search(data[:4096])
        if declared:
            try:
                return data.decode(declared.group(1).decode("ascii"))
            except (LookupError, UnicodeDecodeError):
                pass
    raise FileSkipped("not valid UTF-8 and no charset declared in a <meta> tag; not indexed")


def page_blocks(data: bytes) -> tuple[list[Block], str]:
    """(the page's blocks, its ``<title>``) read with the standard library's parser."""
    builder = BlockBuilder()
    parser = _StdlibParser(builder)
    parser.feed(html_text(data))
    parser.close()
    return builder.finish(), builder.title


def html_record(data: bytes, rel: str) -> dict[str, Any]:
    """The record fields of one HTML page: ``text`` (markdown) and ``title``.

    ``title``: the page's ``<title>``, else its first ``h1``, else the file name without
    suffix.

    Raises:
        FileSkipped: not UTF-8 and no charset declared, or no text outside what is dropped.
    """
    blocks, title = page_blocks(data)
    text = to_markdown(blocks)
    if not text:
        raise FileSkipped("no text (only scripts, styles or navigation); not indexed")
    h1 = next((b.text for b in blocks if b.kind == "heading" and b.level == 1), "")
    return {"text": text, "title": title or h1 or Path(rel).stem}
