"""Text, HTML, .docx and org notes indexed and searched end to end through the CLI, with the
positions each format has (file lines; heading paths), and broken files skipped with a reason.

Plumbing tests with the deterministic fake embedder (SEMSEARCH_MODEL=fake:32, window 64
words): keyword search finds the chunk, meaning does not matter here. Every file is made in
the test (tests/formats/make.py). Real CLI (CliRunner) and a real SQLite file.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from semsearch.cli.app import app
from tests.formats.make import HTML, ORG, docx_bytes, words

pytest.importorskip("docx")
runner = CliRunner()


@pytest.fixture
def folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("SEMSEARCH_MODEL", "fake:32")
    root = tmp_path / "notes"
    root.mkdir()
    # three 40-word paragraphs on lines 2, 4 and 6 (line 1 blank): one chunk each (window 64)
    paragraphs = [words("alphaword"), words("betaword"), words("gammaword")]
    (root / "log.txt").write_text("\n" + "\n\n".join(paragraphs) + "\n", encoding="utf-8")
    (root / "guide.html").write_text(HTML, encoding="utf-8")
    (root / "report.docx").write_bytes(docx_bytes())
    (root / "travel.org").write_text(ORG, encoding="utf-8")
    return root


def index(root: Path, tmp_path: Path) -> tuple[str, str]:
    db = str(tmp_path / "n.embed.db")
    done = runner.invoke(app, ["index", str(root), "--index", db])
    assert done.exit_code == 0, done.output
    return db, done.output


def top(db: str, query: str, *extra: str) -> dict[str, Any]:
    done = runner.invoke(
        app, ["search", query, "--index", db, "--mode", "keyword", "--json", *extra]
    )
    assert done.exit_code == 0, done.output
    hits = json.loads(done.stdout)["hits"]
    assert hits, f"no hit for {query!r}"
    return dict(hits[0])


def test_each_format_is_indexed_with_its_positions_fake_embedder(
    folder: Path, tmp_path: Path
) -> None:
    db, output = index(folder, tmp_path)
    assert "4 new" in output and "0 skipped" in output
    hit = top(db, "gammaword")
    assert hit["id"] == "log.txt"
    assert (hit["chunk"]["line_start"], hit["chunk"]["line_end"]) == (6, 6)
    assert hit["chunk"]["heading_path"] == []
    assert hit["fields"]["source_format"] == "txt"

    hit = top(db, "flamingo")
    assert hit["id"] == "guide.html" and hit["fields"]["title"] == "Coastal guide"
    assert hit["chunk"]["heading_path"] == ["Coasts", "Lagoons"]
    assert hit["chunk"]["line_start"] is None
    assert "| pelican | 12 |" in hit["chunk"]["text"]

    hit = top(db, "mangrove")
    assert hit["id"] == "report.docx"
    assert hit["chunk"]["heading_path"] == ["Rivers", "Deltas"]
    assert hit["chunk"]["line_start"] is None
    assert (hit["fields"]["title"], hit["fields"]["author"]) == ("Field report", "Ada Field")
    hit = top(db, "Amazon")
    assert hit["chunk"]["heading_path"] == ["Measurements"]
    assert "| Amazon | 6400 km |" in hit["chunk"]["text"]

    hit = top(db, "ibis")
    assert hit["id"] == "travel.org" and hit["fields"]["title"] == "Travel notes"
    assert hit["chunk"]["heading_path"] == ["Rivers", "Deltas"]
    assert (hit["chunk"]["line_start"], hit["chunk"]["line_end"]) == (12, 13)
    fields = hit["fields"]
    assert (fields["org_id"], fields["category"], fields["country"]) == (
        "4f1c-travel", "travel", "Egypt",
    )  # fmt: skip


def test_text_shows_lines_and_documents_their_headings_fake_embedder(
    folder: Path, tmp_path: Path
) -> None:
    db, _ = index(folder, tmp_path)
    done = runner.invoke(app, ["search", "betaword", "--index", db, "--mode", "keyword"])
    assert "log.txt:4" in done.output
    done = runner.invoke(app, ["search", "felucca", "--index", db, "--mode", "keyword"])
    assert "travel.org:7" in done.output and "Rivers" in done.output
    done = runner.invoke(app, ["search", "mangrove", "--index", db, "--mode", "keyword"])
    assert "report.docx  Rivers > Deltas" in done.output


def test_dropped_parts_are_not_searchable_fake_embedder(folder: Path, tmp_path: Path) -> None:
    db, _ = index(folder, tmp_path)
    for word in ("scriptword", "navword", "footerword", "commentword", "PROPERTIES"):
        done = runner.invoke(app, ["search", word, "--index", db, "--mode", "keyword", "--json"])
        assert json.loads(done.stdout)["hits"] == [], word


def test_broken_files_are_skipped_with_a_reason_and_others_kept_fake_embedder(
    folder: Path, tmp_path: Path
) -> None:
    db, _ = index(folder, tmp_path)
    (folder / "report.docx").write_bytes(b"this is not a zip file")
    (folder / "locked.docx").write_bytes(b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + bytes(504))
    (folder / "~$report.docx").write_bytes(b"owner")
    (folder / "latin.html").write_bytes("<p>caf\xe9</p>".encode("latin-1"))
    (folder / "empty.html").write_text("<script>x = 1</script><nav>menu</nav>", encoding="utf-8")
    (folder / "latin.org").write_bytes("* caf\xe9".encode("latin-1"))
    db, output = index(folder, tmp_path)
    flat = " ".join(output.split())
    assert "skipped report.docx: not a readable .docx (BadZipFile)" in flat
    assert "skipped locked.docx: encrypted with a password, or a legacy binary .doc" in flat
    assert "skipped ~$report.docx: a Word lock file" in flat
    assert "skipped latin.html: not valid UTF-8 and no charset declared" in flat
    assert "skipped empty.html: no text" in flat
    assert "skipped latin.org: not valid UTF-8" in flat
    assert "1 removed" in flat and "6 skipped" in flat  # report.docx's old text is gone
    assert top(db, "flamingo")["id"] == "guide.html"  # the others are kept
    assert top(db, "ibis")["id"] == "travel.org"
    done = runner.invoke(app, ["search", "mangrove", "--index", db, "--mode", "keyword", "--json"])
    assert json.loads(done.stdout)["hits"] == []


def test_docx_without_the_formats_extra_is_skipped_with_the_install_command_fake_embedder(
    folder: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "docx", None)  # as on a machine without python-docx
    db, output = index(folder, tmp_path)
    flat = " ".join(output.split())
    assert "skipped report.docx: .docx support is not installed" in flat
    assert "pip install 'semsearch[formats]'" in flat
    assert "3 new" in flat and "health: ok" in flat
    assert top(db, "flamingo")["id"] == "guide.html"
