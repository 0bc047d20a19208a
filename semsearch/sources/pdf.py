"""PDF files of a folder as records: text per page with pypdf, page offsets for page numbers.

A PDF's record text is its pages' text (each stripped) joined by blank lines; the record field
``page_starts`` (:data:`semsearch.results.PAGE_STARTS`) holds where each page begins in that
text, so every chunk can say which pages it comes from (``Chunk.page_start``/``page_end``).

Why pypdf: ``benchmarks/pdf_extract.py`` measured it against pypdfium2 and pdfminer.six (see
docs/benchmarks.md). Text quality was the same as pypdfium2's, pdfminer.six was several times
slower, and pypdfium2 about twice as fast as pypdf, whose time per page is still about half
that of embedding the page with the local model. pypdf is pure Python: a malformed file cannot crash the process that reads it (the
watcher runs inside ``semsearch serve``), and its readers are safe to use from several threads,
which PDFium's global state is not.

A file that yields no record is skipped with a reason (:class:`PdfSkipped`), never an error and
never an empty record: no text layer (image only or scanned), encrypted with a password, or
not a readable PDF. Without pypdf installed every PDF is skipped, with the install command.
"""

from __future__ import annotations

import io
import logging
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from semsearch.results import PAGE_STARTS
from semsearch.sources.skipped import FileSkipped, extra_hint

__all__ = ["INSTALL_HINT", "PdfSkipped", "is_pdf", "pdf_record"]

log = logging.getLogger(__name__)

INSTALL_HINT = extra_hint("PDF", "pdf")
PAGE_SEPARATOR = "\n\n"


class PdfSkipped(FileSkipped):
    """A PDF that gives no record: ``reason`` says why (shown in the index summary)."""


def is_pdf(rel: str) -> bool:
    """True when the relative path names a PDF (by its suffix, any case)."""
    return rel.lower().endswith(".pdf")


def pdf_record(data: bytes, rel: str) -> dict[str, Any]:
    """The record fields of one PDF: ``text``, ``title``, ``pages`` and ``page_starts``.

    Args:
        data: the file's bytes.
        rel: its path relative to the folder (the title falls back to its stem).
    Returns:
        ``text``: pages' text joined by blank lines; ``page_starts``: per page (1-based page n at
        index n - 1) the char offset in ``text`` where it begins (an empty page begins where the
        next text does); ``pages``: the page count; ``title``: the document's Title, else the
        file name without suffix.
    Raises:
        PdfSkipped: pypdf is not installed, the file is encrypted with a password, is not a
            readable PDF, or has no text on any page.
    """
    try:
        import pypdf
    except ImportError:
        raise PdfSkipped(INSTALL_HINT) from None
    pages, title = _read(pypdf, data)
    text, starts = join_pages(pages)
    if not text:
        raise PdfSkipped("no text layer (an image-only or scanned PDF); not indexed")
    return {
        "text": text,
        "title": title or Path(rel).stem,
        "pages": len(pages),
        PAGE_STARTS: starts,
    }


def _read(pypdf: Any, data: bytes) -> tuple[list[str], str]:
    """(text of each page, document title or ""). pypdf raises many exception types on a broken
    file (its own, ValueError, KeyError, RecursionError, ...), and a broken file must be a skip,
    never an error, so any exception while reading is one."""
    try:
        with _quiet_pypdf():
            return _pages_and_title(pypdf, data)
    except PdfSkipped:
        raise
    except Exception as exc:
        log.info("unreadable PDF", exc_info=exc)
        raise PdfSkipped(f"not a readable PDF ({type(exc).__name__}); not indexed") from None


def _pages_and_title(pypdf: Any, data: bytes) -> tuple[list[str], str]:
    """(text of each page, document title or ""); raises what pypdf raises, or PdfSkipped."""
    reader = pypdf.PdfReader(io.BytesIO(data))
    if reader.is_encrypted and not reader.decrypt(""):  # "" opens owner-password-only PDFs
        raise PdfSkipped("encrypted (a password is needed to read it); not indexed")
    pages = [clean(page.extract_text() or "") for page in reader.pages]
    title = clean(str((reader.metadata or {}).get("/Title") or ""))
    return pages, title


_PYPDF_LOGGER = logging.getLogger("pypdf")
_quiet_lock = threading.Lock()
_quiet_readers = 0
_saved_level = logging.NOTSET


@contextmanager
def _quiet_pypdf() -> Iterator[None]:
    """Hold back pypdf's own log warnings ("invalid pdf header", "EOF marker not found") while a
    file is read: a file pypdf cannot read is reported once, as a ``skipped`` line. The "pypdf" logger's level is raised to ERROR while any thread reads (its
    child loggers inherit it) and restored by the last reader."""
    global _quiet_readers, _saved_level
    with _quiet_lock:
        if _quiet_readers == 0:
            _saved_level = _PYPDF_LOGGER.level
            _PYPDF_LOGGER.setLevel(logging.ERROR)
        _quiet_readers += 1
    try:
        yield
    finally:
        with _quiet_lock:
            _quiet_readers -= 1
            if _quiet_readers == 0:
                _PYPDF_LOGGER.setLevel(_saved_level)


def clean(text: str) -> str:
    """``text`` stripped, without NUL and lone surrogates (which a record's text may not hold)."""
    return text.replace("\x00", "").encode("utf-8", "replace").decode("utf-8").strip()


def join_pages(pages: list[str]) -> tuple[str, list[int]]:
    """(the non-empty pages joined by blank lines, the char offset where each page begins)."""
    text = ""
    starts = []
    for page in pages:
        if page and text:
            text += PAGE_SEPARATOR
        starts.append(len(text))
        text += page
    return text, starts
