"""The web page's words for people: key prompts, whole-number filters, highlighted word forms.

Real headless Chromium against the real app on a real SQLite file; plumbing only, so the fake
embedder (``fake:32``) stands in for the model (no test here is about meaning).
"""

from __future__ import annotations

import pytest

import semsearch
from semsearch.embedders.fake import FakeEmbedder
from semsearch.server.http.app import create_app
from semsearch.server.http.auth import KeyRing
from semsearch.server.http.state import ServerState
from tests.web.conftest import start_server, stop_server

READ_KEY = "page-read-key-0123"

SHELVES = [
    {"id": "s1", "name": "oak shelf", "description": "A case for books.", "floor": 1},
    {"id": "s2", "name": "pine shelf", "description": "Two cases of glasses.", "floor": 2},
    {"id": "s3", "name": "steel shelf", "description": "Holds one glass jar.", "floor": 3},
]


def _serve(tmp_path, keys: str = ""):
    db = semsearch.connect(tmp_path / "shelves.embed.db")
    schema = semsearch.Schema.from_types({"floor": "int"}, text=("name", "description"))
    db.collection("shelves", schema=schema, embedder=FakeEmbedder()).upsert(SHELVES)
    state = ServerState(db, KeyRing.load(keys), embedder=FakeEmbedder())
    return db, state, start_server(create_app(state))


@pytest.fixture
def open_server(tmp_path):
    db, state, running = _serve(tmp_path)
    yield running.url
    stop_server(running)
    state.worker.stop()
    db.close()


@pytest.fixture
def keyed_server(tmp_path):
    db, state, running = _serve(tmp_path, keys=f"{READ_KEY}:read")
    yield running.url
    stop_server(running)
    state.worker.stop()
    db.close()


def _status(page) -> str:
    return page.locator("#status").inner_text()


def test_fake_embedder_key_prompts_speak_to_a_person(browser, keyed_server) -> None:
    page = browser.new_page()
    page.goto(keyed_server)
    page.wait_for_function("document.querySelector('#status').innerText.includes('API key')")
    assert _status(page).startswith("This server needs an API key.")
    assert "API key box" in _status(page) and "Authorization" not in _status(page)

    page.locator("#api-key").fill("not-a-real-key-000")
    page.locator("#api-key").press("Tab")  # "change": the page retries with the key
    page.wait_for_function("document.querySelector('#status').innerText.includes('not accepted')")
    assert "API key box" in _status(page)

    page.locator("#api-key").fill(READ_KEY)
    page.locator("#api-key").press("Tab")
    page.wait_for_selector("#collection option[value=shelves]", state="attached")
    page.locator("#add-text-name").fill("birch shelf")
    page.locator("#add-form button[type=submit]").click()
    page.wait_for_function("document.querySelector('#add-status').innerText.includes('write key')")
    said = page.locator("#add-status").inner_text()
    # the server's message and hint read as two sentences, not one run-on line
    assert said == (
        "This needs a write key; yours is read. Ask an administrator for a key with that role"
    )


def test_fake_embedder_whole_number_filter_takes_a_fractional_bound(browser, open_server) -> None:
    page = browser.new_page()
    page.goto(open_server)
    page.wait_for_selector("#collection option[value=shelves]", state="attached")
    page.locator("#filters summary").click()
    page.locator("#filter-floor-min").fill("1.5")  # floors 2 and 3 are at least 1.5
    page.locator("#filter-floor-min").press("Tab")
    page.wait_for_function("document.querySelectorAll('#results .card').length === 2")
    titles = sorted(page.locator("#results .card-title").all_inner_texts())
    assert titles == ["pine shelf", "steel shelf"]
    page.locator("#filter-floor-max").fill("2.5")  # and at most 2.5: floor 2 only
    page.locator("#filter-floor-max").press("Tab")
    page.wait_for_function("document.querySelectorAll('#results .card').length === 1")
    assert page.locator("#results .card-title").inner_text() == "pine shelf"


def test_fake_embedder_keyword_highlights_singular_and_plural(browser, open_server) -> None:
    page = browser.new_page()
    console_errors: list[str] = []
    page.on("console", lambda m: console_errors.append(m.text) if m.type == "error" else None)
    page.goto(open_server)
    page.wait_for_selector("#collection option[value=shelves]", state="attached")
    page.locator("#query").press_sequentially("cases glass", delay=20)
    page.wait_for_function("document.querySelectorAll('#results .card').length === 3")
    marks = {
        card.get_attribute("data-id"): card.locator("mark").all_inner_texts()
        for card in page.locator("#results .card").all()
    }
    # FTS5's Porter stemmer matched every one of these forms; each is highlighted
    assert marks == {"s1": ["case"], "s2": ["cases", "glasses"], "s3": ["glass"]}
    assert console_errors == []  # not even a missing /favicon.ico


def test_fake_embedder_empty_semantic_result_points_at_the_minimum_similarity(
    browser, open_server
) -> None:
    page = browser.new_page()
    page.goto(open_server)
    page.wait_for_selector("#collection option[value=shelves]", state="attached")
    page.locator("label[for=mode-semantic]").click()
    page.locator("#min-score").fill("100")  # only an identical text reaches 100 %
    page.locator("#query").fill("a shelf for my books")
    page.locator("#query").press("Enter")
    page.wait_for_function(
        "document.querySelector('#status').innerText.startsWith('No confident match')"
    )
    assert "minimum similarity (now 100 %)" in _status(page)


def test_fake_embedder_a_tiny_bm25_score_is_not_shown_as_zero(browser, tmp_path) -> None:
    db, state, running = _serve(tmp_path)
    schema = semsearch.Schema.from_types({"floor": "int"}, text=("name", "description"))
    crates = [
        {"id": f"c{i}", "name": f"crate {i}", "description": "wood", "floor": 0} for i in range(400)
    ]
    db.collection("crates", schema=schema, embedder=FakeEmbedder()).upsert(crates)
    try:
        page = browser.new_page()
        page.goto(running.url)  # "crates" is chosen first, by name
        page.wait_for_selector("#collection option[value=crates]", state="attached")
        # "crate" is in all 400 items: Lucene's IDF ln(1 + 0.5 / 400.5) = 0.00125; in the title
        # (weight 2.5) of items of equal length, 0.00125 * 2.5 * 2.2 / (2.5 + 1.2) = 0.0019
        page.locator("#query").press_sequentially("crate", delay=20)
        page.wait_for_function("document.querySelectorAll('#results .card').length > 0")
        badges = page.locator("#results .badge-bm25").all_inner_texts()
        assert badges and set(badges) == {"BM25 < 0.01"}
        title = page.locator("#results .badge-bm25").first.get_attribute("title")
        assert "nearly every item" in title
    finally:
        stop_server(running)
        state.worker.stop()
        db.close()


def test_fake_embedder_the_chosen_collection_survives_a_reload(browser, tmp_path) -> None:
    db, state, running = _serve(tmp_path)
    schema = semsearch.Schema.from_types({"floor": "int"}, text=("name", "description"))
    db.collection("boxes", schema=schema, embedder=FakeEmbedder()).upsert(
        [{"id": "b1", "name": "cardboard box", "description": "Holds shoes.", "floor": 0}]
    )
    try:
        page = browser.new_page()
        page.goto(running.url)
        page.wait_for_selector("#collection option[value=shelves]", state="attached")
        assert page.locator("#collection").input_value() == "boxes"  # first by name
        page.locator("#collection").select_option("shelves")
        page.wait_for_url("**/?collection=shelves")
        page.reload()
        page.wait_for_selector("#collection option[value=shelves]", state="attached")
        assert page.locator("#collection").input_value() == "shelves"
    finally:
        stop_server(running)
        state.worker.stop()
        db.close()
