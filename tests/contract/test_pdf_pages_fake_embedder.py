"""A folder of markdown and a PDF indexes and answers with page numbers on every store.

Plumbing with the deterministic fake embedder (keyword search finds the page); the PDF is made
in the test with fpdf2. Pages live in the record's ``page_starts`` field, so no store needs a
column for them: this checks that each store keeps that field and the chunk offsets exact.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from semsearch.sources.vault import VAULT_SCHEMA, index_folder
from tests.pdf.make import text_pdf

pytest.importorskip("pypdf")


def test_pdf_hits_name_their_page_on_every_store(database, tmp_path: Path) -> None:
    pages = ["Otters float on kelp.", "", "Puffins nest on cliffs.", "Seals bask on rocks."]
    (tmp_path / "coast.pdf").write_bytes(text_pdf(pages))
    (tmp_path / "tides.md").write_text("# Tides\n\nThe moon pulls the tides.\n", encoding="utf-8")
    coll = database.collection("notes", schema=VAULT_SCHEMA, embedder="fake:32")
    assert index_folder(coll, tmp_path).new == 2
    for word, page in [("otters", 1), ("puffins", 3), ("seals", 4)]:
        for mode in ("keyword", "semantic", "hybrid"):
            hits = coll.search(word, mode=mode, min_score=None).hits
            hit = next(h for h in hits if h.id == "coast.pdf" and word in h.chunk.text.lower())
            assert (hit.chunk.page_start, hit.chunk.page_end) == (page, page), (word, mode)
    tides = coll.search("moon", mode="keyword").hits[0]
    assert tides.id == "tides.md" and tides.chunk.page_start is None
