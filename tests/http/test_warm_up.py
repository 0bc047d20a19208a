"""Server start-up warm-up: local models of existing collections are loaded before the first
request, and the heap is frozen out of the cyclic GC's view (semsearch serve does both)."""

from __future__ import annotations

import gc
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

import semsearch
from semsearch.server.http.app import create_app
from semsearch.server.http.state import ServerState


@pytest.fixture
def unfrozen():
    """Give the heap back to the GC after the test (pytest keeps running in this process)."""
    yield
    gc.unfreeze()


@pytest.mark.slow
def test_warm_up_loads_the_local_model_before_any_request_and_freezes_the_heap(
    tmp_path: Path, unfrozen
) -> None:
    path = tmp_path / "warm.embed.db"
    with semsearch.connect(path) as db:
        db.collection("notes").upsert([{"id": "a", "text": "a note about walruses"}])
    db = semsearch.connect(path)
    state = ServerState(db)
    gc.unfreeze()
    with TestClient(create_app(state, warm_up=True), base_url="http://127.0.0.1"):
        embedder = state.collection("notes").embedder
        assert embedder._runner is not None  # loaded at start-up, not by a search
        assert gc.get_freeze_count() > 0
    db.close()


def test_fake_embedder_warm_up_with_a_collection_of_another_model_still_starts(
    tmp_path: Path, unfrozen
) -> None:
    """A collection built with another model than the server's (fake:8 against fake:16) does
    not stop start-up; it answers its own 409 later."""
    path = tmp_path / "mixed.embed.db"
    with semsearch.connect(path) as db:
        db.collection("old", embedder="fake:8").upsert([{"id": "x", "text": "x"}])
    db = semsearch.connect(path)
    state = ServerState(db, embedder="fake:16")
    with TestClient(create_app(state, warm_up=True), base_url="http://127.0.0.1") as client:
        assert client.get("/health").status_code == 200
        semantic = client.post("/collections/old/search", json={"query": "x", "mode": "semantic"})
        assert semantic.status_code == 409
    db.close()
