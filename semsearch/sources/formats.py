"""Which reader turns a file of a folder into a record, by its suffix (any case).

Markdown (``.md``, ``.markdown``) is read by :func:`semsearch.sources.vault.read_note` itself.
The others each have a reader here that returns the record's ``text`` and fields; each
record also gets the field :data:`~semsearch.results.SOURCE_FORMAT`, which tells the chunker
how to cut its text and whether its lines are the file's:

| suffix | reader | chunks carry |
|---|---|---|
| ``.pdf`` | :mod:`~semsearch.sources.pdf` (pypdf, the ``pdf`` extra) | page numbers |
| ``.txt`` | :func:`txt_record` (plain text) | file line numbers |
| ``.org`` | :mod:`~semsearch.sources.org_file` | heading path, file line numbers |
| ``.html``, ``.htm`` | :mod:`~semsearch.sources.html_file` (standard library) | heading path |
| ``.docx`` | :mod:`~semsearch.sources.docx_file` (python-docx, the ``formats`` extra) | heading path |

A reader raises :class:`~semsearch.sources.skipped.FileSkipped` for a file that gives no
record (the reason is reported; nothing stored is touched by it), and ``UnicodeDecodeError``
for a text file that is not UTF-8.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from semsearch.results import SOURCE_FORMAT
from semsearch.sources.docx_file import docx_record
from semsearch.sources.html_file import html_record
from semsearch.sources.org_file import org_record
from semsearch.sources.pdf import pdf_record

__all__ = ["document_record", "reader_for", "txt_record"]

Reader = Callable[[bytes, str], dict[str, Any]]


def txt_record(data: bytes, rel: str) -> dict[str, Any]:
    """A plain text file: ``text`` (the file), ``title`` (the file name without suffix) and
    ``body_line`` (1-based line of its first non-blank line).

    Raises:
        UnicodeDecodeError: the file is not UTF-8.
    """
    text = data.decode("utf-8-sig")
    body_line = 1 + text[: len(text) - len(text.lstrip())].count("\n")
    return {"text": text, "title": Path(rel).stem, "body_line": body_line}


def _org(data: bytes, rel: str) -> dict[str, Any]:
    return org_record(data.decode("utf-8-sig"), rel)


_READERS: dict[str, tuple[str, Reader]] = {
    ".txt": ("txt", txt_record),
    ".org": ("org", _org),
    ".html": ("html", html_record),
    ".htm": ("html", html_record),
    ".docx": ("docx", docx_record),
}


def reader_for(rel: str) -> tuple[str, Reader] | None:
    """(format name, reader) for a path that is not markdown, or None for markdown."""
    suffix = Path(rel).suffix.lower()
    if suffix == ".pdf":
        return "pdf", pdf_record
    return _READERS.get(suffix)


def document_record(data: bytes, rel: str) -> dict[str, Any] | None:
    """The fields of a non-markdown file (with ``source_format``), or None for markdown.

    Raises:
        FileSkipped: the file gives no record (see each reader). UnicodeDecodeError: a text
            format that is not UTF-8.
    """
    found = reader_for(rel)
    if found is None:
        return None
    name, reader = found
    fields = reader(data, rel)
    return fields if name == "pdf" else {**fields, SOURCE_FORMAT: name}
