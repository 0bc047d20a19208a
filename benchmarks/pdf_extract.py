"""PDF text extraction: pypdf against pypdfium2 and pdfminer.six, on speed and text quality.

The PDFs are made here with fpdf2 from SciFact abstracts (../shared/data/scifact), so the true
text of every page is known: each page holds ``--per-page`` abstracts set as wrapped paragraphs
in a core font. Quality is measured per page against that truth, on words (lower-cased runs of
letters and digits):

- word F1: the harmonic mean of precision and recall of the page's word multiset;
- order: difflib's ``SequenceMatcher.ratio`` over the word sequences (1.0 = same words in the
  same order), since a chunker needs reading order, not just the words.

Speed is pages per second over all the PDFs (each file opened and every page read), best of
``--repeat`` runs. The machine may be loaded: compare the libraries within one run.

Usage: .venv/bin/python benchmarks/pdf_extract.py [--docs 20] [--pages 10] [--per-page 3]
Needs: pip install pypdf pypdfium2 pdfminer.six fpdf2
"""

from __future__ import annotations

import argparse
import collections
import difflib
import io
import json
import re
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
_WORD = re.compile(r"[a-z0-9]+")

Extractor = Callable[[bytes], list[str]]


def words(text: str) -> list[str]:
    """Lower-cased runs of ASCII letters and digits (the unit of the quality measures)."""
    return _WORD.findall(text.lower())


def abstracts(limit: int) -> Iterator[str]:
    """The first ``limit`` SciFact abstracts, as Latin-1 text (the core fonts' range)."""
    with (DATA / "scifact" / "corpus.jsonl").open(encoding="utf-8") as fh:
        for n, line in enumerate(fh):
            if n >= limit:
                return
            doc = json.loads(line)
            text = f"{doc['title']}. {doc['text']}"
            yield text.encode("latin-1", "replace").decode("latin-1")


def make_pdf(pages: list[list[str]]) -> bytes:
    """A PDF with one page per entry, each paragraph wrapped in Helvetica 10 pt."""
    from fpdf import FPDF

    pdf = FPDF()
    pdf.set_font("Helvetica", size=10)
    for paragraphs in pages:
        pdf.add_page()
        for paragraph in paragraphs:
            pdf.multi_cell(0, 5, paragraph)
            pdf.ln(3)
    return bytes(pdf.output())


def with_pypdf(data: bytes) -> list[str]:
    """Page texts by pypdf (pure Python)."""
    import pypdf

    return [page.extract_text() or "" for page in pypdf.PdfReader(io.BytesIO(data)).pages]


def with_pypdfium2(data: bytes) -> list[str]:
    """Page texts by pypdfium2 (Google's PDFium, C++)."""
    import pypdfium2

    doc = pypdfium2.PdfDocument(data)
    try:
        return [doc[i].get_textpage().get_text_range() for i in range(len(doc))]
    finally:
        doc.close()


def with_pdfminer(data: bytes) -> list[str]:
    """Page texts by pdfminer.six (pure Python, layout analysis)."""
    from pdfminer.high_level import extract_text

    text = extract_text(io.BytesIO(data))
    return text.split("\f")[:-1] if text.endswith("\f") else text.split("\f")


EXTRACTORS: dict[str, Extractor] = {
    "pypdf": with_pypdf,
    "pypdfium2": with_pypdfium2,
    "pdfminer.six": with_pdfminer,
}


def f1(truth: list[str], got: list[str]) -> float:
    """Word-multiset F1 of ``got`` against ``truth`` (1.0 when both are empty)."""
    common = sum((collections.Counter(truth) & collections.Counter(got)).values())
    if not truth and not got:
        return 1.0
    if common == 0:
        return 0.0
    precision, recall = common / len(got), common / len(truth)
    return 2 * precision * recall / (precision + recall)


def measure(
    name: str, extract: Extractor, pdfs: list[bytes], truth: list[list[str]], repeat: int
) -> dict[str, float]:
    """Pages/s (best of ``repeat``), mean word F1 and mean order ratio over every page."""
    best = float("inf")
    pages: list[list[str]] = []
    for _ in range(repeat):
        start = time.perf_counter()
        pages = [extract(data) for data in pdfs]
        best = min(best, time.perf_counter() - start)
    got = [page for doc in pages for page in doc]
    want = [page for doc in truth for page in doc]
    if len(got) != len(want):
        raise SystemExit(f"{name}: {len(got)} pages extracted, {len(want)} made")
    f1s = [f1(words(w), words(g)) for w, g in zip(want, got, strict=True)]
    order = [
        difflib.SequenceMatcher(None, words(w), words(g), autojunk=False).ratio()
        for w, g in zip(want, got, strict=True)
    ]
    return {
        "pages_per_s": len(want) / best,
        "word_f1": sum(f1s) / len(f1s),
        "order": sum(order) / len(order),
    }


def main(argv: list[str] | None = None) -> int:
    """Make the PDFs, run each extractor, print a markdown table."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--docs", type=int, default=20, help="PDF files to make")
    parser.add_argument("--pages", type=int, default=10, help="pages per PDF")
    parser.add_argument("--per-page", type=int, default=3, help="abstracts per page")
    parser.add_argument("--repeat", type=int, default=3, help="timed runs; the best is kept")
    args = parser.parse_args(argv)
    texts = list(abstracts(args.docs * args.pages * args.per_page))
    per_pdf = args.pages * args.per_page
    layouts = [
        [texts[d + p : d + p + args.per_page] for p in range(0, per_pdf, args.per_page)]
        for d in range(0, len(texts), per_pdf)
    ]
    pdfs = [make_pdf(layout) for layout in layouts]
    truth = [["\n".join(page) for page in layout] for layout in layouts]
    print(f"{len(pdfs)} PDFs x {args.pages} pages, {args.per_page} SciFact abstracts a page\n")
    print("| library | pages/s | word F1 | order |")
    print("|---|---:|---:|---:|")
    for name, extract in EXTRACTORS.items():
        row = measure(name, extract, pdfs, truth, args.repeat)
        print(f"| {name} | {row['pages_per_s']:.0f} | {row['word_f1']:.4f} | {row['order']:.4f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
