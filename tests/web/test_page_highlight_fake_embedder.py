"""The web page marks a hit's highlighted sentence (a real headless Chromium against a real
server; keyword mode with the deterministic fake embedder: the words find the sentence)."""

from __future__ import annotations

from pathlib import Path

import semsearch
from semsearch.server.http.app import create_app
from semsearch.server.http.state import ServerState
from tests.web.conftest import start_server, stop_server

NOTE = "Compost needs air and water every week. The lighthouse key is under the blue pot."


def test_the_card_marks_the_sentence_that_matched(browser, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    db = semsearch.connect(tmp_path / "notes.embed.db")
    db.collection("notes", embedder="fake:32").upsert([{"id": "long", "text": NOTE}])
    state = ServerState(db, embedder="fake:32")
    running = start_server(create_app(state))
    try:
        page = browser.new_page()
        page.goto(running.url)
        page.wait_for_selector("#collection option[value=notes]", state="attached")
        page.locator("#query").press_sequentially("lighthouse", delay=30)
        page.wait_for_selector("#results .card mark.sentence")
        marked = page.locator("#results .card mark.sentence").first.inner_text()
        assert marked == "The lighthouse key is under the blue pot."
    finally:
        stop_server(running)
        state.worker.stop()
        db.close()
