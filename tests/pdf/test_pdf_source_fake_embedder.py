"""PDFs in indexed folders: page numbers, skipped files, watch, and every face's page fields.

Plumbing tests with the deterministic fake embedder (keyword search finds the page, meaning does
not matter here); the PDFs are made in the test with fpdf2 (tests/pdf/make.py).
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

import semsearch
from semsearch.health import read_health
from semsearch.results import Chunk, with_pages
from semsearch.sources.pdf import INSTALL_HINT, join_pages
from semsearch.sources.vault import VAULT_SCHEMA, index_folder, scan_folder
from semsearch.sources.watch import FolderWatcher, sync_folder
from tests.pdf.make import image_only_pdf, text_pdf

pytest.importorskip("pypdf")

PAGES = [
    "Alpacas graze on the high plains of the Andes.",
    "The lighthouse keeper trims the wick every evening.",
    "",  # a blank page: it still counts as page 3
    "Volcanic soil makes the vineyard terraces fertile.",
]


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    root = tmp_path / "docs"
    root.mkdir()
    (root / "manual.pdf").write_bytes(text_pdf(PAGES, title="Field manual"))
    (root / "notes.md").write_text("# Notes\n\nThe lighthouse is painted red.\n", encoding="utf-8")
    return root


def test_join_pages_offsets_by_hand() -> None:
    # "ab" at 0; blank page 2 begins where the next text does... after "ab"; "cd" at 4 (2 + "\n\n")
    assert join_pages(["ab", "", "cd"]) == ("ab\n\ncd", [0, 2, 4])
    assert join_pages(["", "ab"]) == ("ab", [0, 0])


def test_with_pages_maps_char_offsets_to_pages_by_hand() -> None:
    fields = {"page_starts": [0, 0, 10, 25]}  # page 1 blank; page 2 = 0..9, 3 = 10..24, 4 = 25..
    assert with_pages(Chunk("x", 0, 0, 5), fields).page_start == 2
    spanning = with_pages(Chunk("x", 0, 8, 12), fields)
    assert (spanning.page_start, spanning.page_end) == (2, 3)
    ends_at_boundary = with_pages(Chunk("x", 0, 12, 25), fields)  # end exclusive: last char 24
    assert (ends_at_boundary.page_start, ends_at_boundary.page_end) == (3, 3)
    assert with_pages(Chunk("x", 0, 30, 31), fields).page_end == 4
    markdown = Chunk("x", 0, 0, 5, line_start=3, line_end=3)
    assert with_pages(markdown, {"body_line": 1}) is markdown


@pytest.mark.parametrize("bogus", ["1,2", [3, 1], [0, "7"], []])
def test_a_page_starts_field_that_is_not_a_pdfs_is_a_plain_field(
    db: semsearch.Database, bogus: object
) -> None:
    coll = db.collection("recs", embedder="fake:32")
    coll.upsert([{"id": "r", "text": "alpha beta gamma", "page_starts": bogus}])
    hit = coll.search("gamma", mode="keyword").hits[0]
    assert hit.chunk is not None
    assert (hit.chunk.page_start, hit.chunk.text) == (None, "alpha beta gamma")
    assert hit.fields["page_starts"] == bogus


def test_scan_takes_pdfs_next_to_markdown(folder: Path) -> None:
    assert list(scan_folder(folder)) == ["manual.pdf", "notes.md"]


def test_pdf_hits_carry_their_page(db: semsearch.Database, folder: Path) -> None:
    coll = db.collection("docs", schema=VAULT_SCHEMA, embedder="fake:32")
    report = index_folder(coll, folder)
    assert (report.new, report.skipped) == (2, [])
    for word, page in [("alpacas", 1), ("wick", 2), ("vineyard", 4)]:
        hit = coll.search(word, mode="keyword").hits[0]
        assert hit.id == "manual.pdf"
        assert hit.chunk is not None
        assert (hit.chunk.page_start, hit.chunk.page_end) == (page, page)
        assert hit.chunk.line_start is None
    fields = coll.get(["manual.pdf"])[0].fields
    assert (fields["title"], fields["pages"], fields["path"]) == ("Field manual", 4, "manual.pdf")
    note = coll.search("painted", mode="keyword").hits[0]
    assert note.id == "notes.md" and note.chunk is not None
    assert (note.chunk.page_start, note.chunk.line_start, note.chunk.line_end) == (None, 1, 3)


def test_chunk_view_of_a_pdf_has_pages(db: semsearch.Database, folder: Path) -> None:
    coll = db.collection("docs", schema=VAULT_SCHEMA, embedder="fake:32")
    index_folder(coll, folder)
    record = coll.get(["manual.pdf"])[0]
    chunks = coll.chunk(record.text, record.fields)
    assert chunks[0].page_start == 1
    assert chunks[-1].page_end == 4


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        (image_only_pdf(), "no text layer"),
        (text_pdf(["secret plans"], owner_password="o", user_password="u"), "encrypted"),
        (b"%PDF-1.4\n1 0 obj << /Type /Catalog >> garbage", "not a readable PDF"),
        (text_pdf(["cut short"])[:200], "not a readable PDF"),
        (b"", "not a readable PDF"),
    ],
    ids=["image-only", "encrypted", "garbage", "truncated", "empty"],
)
def test_unusable_pdfs_are_skipped_and_reported_never_stored(
    db: semsearch.Database,
    folder: Path,
    data: bytes,
    reason: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    (folder / "bad.pdf").write_bytes(data)
    coll = db.collection("docs", schema=VAULT_SCHEMA, embedder="fake:32")
    report = index_folder(coll, folder)
    # pypdf's own warnings ("EOF marker not found", ...) stay quiet: the skip is reported once
    assert [r.getMessage() for r in caplog.records if r.name.startswith("pypdf")] == []
    assert [rel for rel, _ in report.skipped] == ["bad.pdf"]
    assert reason in report.skipped[0][1]
    assert report.new == 2
    assert sorted(coll.ids()) == ["manual.pdf", "notes.md"]


def test_owner_password_only_pdf_is_read(db: semsearch.Database, tmp_path: Path) -> None:
    (tmp_path / "locked.pdf").write_bytes(text_pdf(["printing is restricted"], owner_password="o"))
    coll = db.collection("docs", schema=VAULT_SCHEMA, embedder="fake:32")
    assert index_folder(coll, tmp_path).skipped == []
    assert coll.search("restricted", mode="keyword").ids == ["locked.pdf"]


def test_without_pypdf_pdfs_are_skipped_with_the_install_hint(
    db: semsearch.Database, folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "pypdf", None)  # import pypdf raises ImportError
    coll = db.collection("docs", schema=VAULT_SCHEMA, embedder="fake:32")
    report = index_folder(coll, folder)
    assert report.skipped == [("manual.pdf", INSTALL_HINT)]
    assert "pip install 'semsearch[pdf]'" in INSTALL_HINT
    assert coll.ids() == ["notes.md"]


def test_watch_indexes_a_new_pdf_and_drops_one_that_becomes_unreadable(
    db: semsearch.Database, folder: Path
) -> None:
    coll = db.collection("docs", schema=VAULT_SCHEMA, embedder="fake:32")
    watcher = FolderWatcher(coll, folder)
    watcher.sync()
    (folder / "new.pdf").write_bytes(text_pdf(["Penguins huddle in the cold."]))
    report = watcher.apply(["new.pdf"])
    assert report.new == 1
    hit = coll.search("penguins", mode="keyword").hits[0]
    assert hit.id == "new.pdf" and hit.chunk is not None and hit.chunk.page_start == 1
    (folder / "new.pdf").write_bytes(image_only_pdf())
    report = watcher.apply(["new.pdf"])
    assert report.removed == 1
    assert "no text layer" in report.skipped[0][1]
    assert "new.pdf" not in coll.ids()


def test_skipped_pdfs_leave_health_ok_but_unreadable_notes_degrade_it(
    db: semsearch.Database, folder: Path
) -> None:
    (folder / "scan.pdf").write_bytes(image_only_pdf())
    (folder / "locked.pdf").write_bytes(text_pdf(["x"], owner_password="o", user_password="u"))
    coll = db.collection("docs", schema=VAULT_SCHEMA, embedder="fake:32")
    report, health = sync_folder(coll, folder)
    assert sorted(rel for rel, _ in report.skipped) == ["locked.pdf", "scan.pdf"]  # reported
    assert sorted(report.by_policy) == ["locked.pdf", "scan.pdf"]
    assert (health.state, health.failed) == ("ok", ())  # a scanned PDF is no failure
    (folder / "latin1.md").write_bytes("caf\xe9 au lait".encode("latin-1"))  # not UTF-8
    report, health = sync_folder(coll, folder)
    assert (health.state, health.failed) == ("degraded", ("latin1.md",))
    watcher = FolderWatcher(coll, folder)  # a watch batch judges the same way, and a failed
    # file that is deleted no longer fails
    watcher.sync()
    (folder / "latin1.md").unlink()
    (folder / "scan2.pdf").write_bytes(image_only_pdf())
    report = watcher.apply(["latin1.md", "scan2.pdf"])
    assert report.by_policy == ["scan2.pdf"]
    assert read_health(coll.store, coll.name).state == "ok"
