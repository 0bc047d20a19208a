"""A folder of markdown and PDFs answers questions by meaning, with page numbers (real model).

The PDF is made in the test with fpdf2; each question shares no content word with the page that
answers it, so only the meaning can find it.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import semsearch
from semsearch.sources.vault import VAULT_SCHEMA, index_folder
from tests.pdf.make import text_pdf

pytest.importorskip("pypdf")
pytestmark = pytest.mark.slow

PAGES = [
    "Sourdough bread rises slowly because wild yeast ferments the dough overnight.",
    "A car battery that keeps going flat often points to a faulty alternator.",
    "Tomato seedlings need plenty of sunlight and should be watered every morning.",
]


def test_markdown_and_pdf_folder_answers_with_the_page(
    tmp_path: Path, db: semsearch.Database, minilm: object
) -> None:
    (tmp_path / "guide.pdf").write_bytes(text_pdf(PAGES, title="Household guide"))
    (tmp_path / "cats.md").write_text("# Cats\n\nCats sleep most of the day.\n", encoding="utf-8")
    coll = db.collection("docs", schema=VAULT_SCHEMA, embedder=minilm)
    report = index_folder(coll, tmp_path)
    assert (report.new, report.skipped) == (2, [])
    for question, page in [("automobile electrical trouble", 2), ("growing vegetables", 3)]:
        # no floor: this test is about the page a hit shows, not whether it is confident
        hit = coll.search(question, limit=1, min_score=None).hits[0]
        assert hit.id == "guide.pdf" and hit.chunk is not None
        assert (hit.chunk.page_start, hit.chunk.page_end) == (page, page)
    pet = coll.search("a pet that naps a lot", limit=1, min_score=None).hits[0]
    assert pet.id == "cats.md" and pet.chunk is not None and pet.chunk.page_start is None
