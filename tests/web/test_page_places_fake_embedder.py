"""The web page shows where a hit sits in its file: the page of a PDF, the lines of a note.

A real headless Chromium against a real server; keyword mode with the deterministic fake
embedder (the words find the chunk; meaning plays no part). The PDF is made with fpdf2.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import semsearch
from semsearch.server.http.app import create_app
from semsearch.server.http.state import ServerState
from semsearch.sources.vault import VAULT_SCHEMA, index_folder
from tests.pdf.make import text_pdf
from tests.web.conftest import start_server, stop_server

pytest.importorskip("pypdf")


@pytest.fixture
def server(tmp_path: Path):  # type: ignore[no-untyped-def]
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "book.pdf").write_bytes(text_pdf(["Rivers flow.", "Glaciers carve valleys."]))
    (folder / "note.md").write_text("# Fjords\n\nFjords are drowned valleys.\n", encoding="utf-8")
    db = semsearch.connect(tmp_path / "places.embed.db")
    index_folder(db.collection("notes", schema=VAULT_SCHEMA, embedder="fake:32"), folder)
    state = ServerState(db, embedder="fake:32")
    running = start_server(create_app(state))
    yield running.url
    stop_server(running)
    state.worker.stop()
    db.close()


def test_cards_show_the_pdf_page_and_the_note_lines(browser, server) -> None:  # type: ignore[no-untyped-def]
    page = browser.new_page()
    page.goto(server)
    page.wait_for_selector("#collection option[value=notes]", state="attached")
    page.locator("#query").press_sequentially("glaciers", delay=30)
    page.wait_for_function("document.querySelectorAll('#results .card .place').length > 0")
    assert page.locator("#results .card .place").first.inner_text() == "page 2"
    page.locator("#query").fill("")
    page.locator("#query").press_sequentially("fjords", delay=30)
    page.wait_for_function(
        "[...document.querySelectorAll('#results .card .place')].some(p => p.innerText.startsWith('lines'))"
    )
    assert page.locator("#results .card .place").first.inner_text() == "lines 1\u20133"  # en dash
