"""Word (.docx) files of a folder as records: paragraphs, headings as breadcrumbs, tables.

Read with python-docx (the ``formats`` extra): the body's paragraphs and tables in document
order become :class:`~semsearch.sources.blocks.Block` s, written as markdown so that chunks
carry their heading path. A paragraph styled "Heading 1" .. "Heading 9" is a heading of that
level (markdown stops at 6: deeper ones are level 6); a table is one row per line, cells
apart by " | " (a merged cell once). The title is the document's Title property, else its
first "Title"-styled paragraph, else its first level-1 heading, else the file name; its
Author property, when set, is the field ``author``.

A file that gives no record is skipped with the reason (:class:`~semsearch.sources.skipped.
FileSkipped`): python-docx not installed, encrypted with a password (Word then writes an
OLE container, not a zip), a legacy binary .doc renamed, not a readable .docx, a Word lock
file (``~$name.docx``), or no text.
"""

from __future__ import annotations

import io
import logging
import re
from pathlib import Path
from typing import Any

from semsearch.sources.blocks import Block, to_markdown
from semsearch.sources.skipped import FileSkipped, extra_hint

__all__ = ["docx_record"]

log = logging.getLogger(__name__)

INSTALL_HINT = extra_hint(".docx", "formats")
_OLE = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"  # compound file: encrypted OOXML or a binary .doc
_HEADING = re.compile(r"Heading ([1-9])")


def docx_record(data: bytes, rel: str) -> dict[str, Any]:
    """The record fields of one .docx file: ``text`` (markdown), ``title`` and maybe ``author``.

    Raises:
        FileSkipped: see the module docstring.
    """
    if Path(rel).name.startswith("~$"):
        raise FileSkipped("a Word lock file (Word writes it while the document is open)")
    try:
        import docx
    except ImportError:
        raise FileSkipped(INSTALL_HINT) from None
    if data.startswith(_OLE):
        raise FileSkipped(
            "encrypted with a password, or a legacy binary .doc (not a .docx); not indexed"
        )
    try:  # a broken zip or XML raises many types (BadZipFile, KeyError, XMLSyntaxError, ...)
        document = docx.Document(io.BytesIO(data))
        blocks, title_para = _blocks(document)
        props = document.core_properties
        title, author = (props.title or "").strip(), (props.author or "").strip()
    except Exception as exc:
        log.info("unreadable .docx", exc_info=exc)
        raise FileSkipped(f"not a readable .docx ({type(exc).__name__}); not indexed") from None
    text = to_markdown(blocks)
    if not text:
        raise FileSkipped("no text in the document body; not indexed")
    h1 = next((b.text for b in blocks if b.kind == "heading" and b.level == 1), "")
    fields: dict[str, Any] = {"text": text, "title": title or title_para or h1 or Path(rel).stem}
    if author:
        fields["author"] = author
    return fields


def _blocks(document: Any) -> tuple[list[Block], str]:
    """(the body's blocks in order, the text of its first "Title" paragraph or "")."""
    from docx.table import Table

    blocks: list[Block] = []
    title = ""
    tables = 0
    for item in document.iter_inner_content():
        if isinstance(item, Table):
            tables += 1
            blocks += [Block("row", " | ".join(c), cells=c, table=tables) for c in _rows(item)]
            continue
        text = item.text.strip()
        style = item.style.name if item.style is not None else ""
        heading = _HEADING.fullmatch(style or "")
        if style == "Title" and not title:
            title = " ".join(text.split())
        if heading:
            blocks.append(Block("heading", text, level=int(heading.group(1))))
        else:
            blocks.append(Block("para", text))
    return blocks, title


def _rows(table: Any) -> list[tuple[str, ...]]:
    """Each row's cell texts; a cell merged across columns comes once."""
    rows = []
    for row in table.rows:
        cells: list[str] = []
        last = None
        for cell in row.cells:
            if cell._tc is last:  # python-docx repeats a merged cell for each grid column
                continue
            last = cell._tc
            cells.append(" ".join(cell.text.split()))
        rows.append(tuple(cells))
    return rows
