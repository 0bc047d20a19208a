"""Fixtures for the HTTP API: the real FastAPI app on a real SQLite file, called with httpx.

Plumbing tests use the deterministic FakeEmbedder (``fake:32``); tests about meaning use the real
model and are marked slow.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

import semsearch
from semsearch.embedders.fake import FakeEmbedder
from semsearch.server.http.app import create_app
from semsearch.server.http.auth import KeyRing
from semsearch.server.http.state import Limits, ServerState
from semsearch.worker import EmbeddingWorker

READ_KEY = "read-key-0123456789"
WRITE_KEY = "write-key-0123456789"
ADMIN_KEY = "admin-key-0123456789"
KEYS = f"{READ_KEY}:read,{WRITE_KEY}:write,{ADMIN_KEY}:admin"

LOST_AND_FOUND = [
    {
        "id": "blazer",
        "name": "navy school blazer",
        "description": "Dark blue wool blazer with a crest on the pocket.",
        "category": "clothing",
        "location": "gym",
    },
    {
        "id": "umbrella",
        "name": "black umbrella",
        "description": "Folding umbrella with a wooden handle.",
        "category": "accessories",
        "location": "library",
    },
    {
        "id": "bottle",
        "name": "steel water bottle",
        "description": "Green insulated bottle with stickers.",
        "category": "drinkware",
        "location": "canteen",
    },
]
ITEM_FIELDS = {"category": "str", "location": "str"}


def auth(key: str) -> dict[str, str]:
    """Headers for an API key."""
    return {"Authorization": f"Bearer {key}"}


@pytest.fixture
def make_client(tmp_path: Path) -> Iterator[Callable[..., tuple[TestClient, ServerState]]]:
    """Build a TestClient around a real app on a fresh SQLite file; closes everything after."""
    opened: list[tuple[TestClient, ServerState]] = []

    def build(
        *,
        keys: str = "",
        embedder: object | None = None,
        limits: Limits | None = None,
        worker: EmbeddingWorker | None = None,
        name: str = "api.embed.db",
    ) -> tuple[TestClient, ServerState]:
        db = semsearch.connect(tmp_path / name)
        state = ServerState(
            db,
            KeyRing.load(keys),
            embedder=embedder if embedder is not None else FakeEmbedder(),  # type: ignore[arg-type]
            worker=worker or EmbeddingWorker(backoff=0.01, max_backoff=0.05, attempts=2),
            limits=limits or Limits(),
        )
        client = TestClient(
            create_app(state), base_url="http://localhost", raise_server_exceptions=False
        )  # a loopback Host: the app answers no other (DNS rebinding)
        client.__enter__()
        opened.append((client, state))
        return client, state

    yield build
    for client, state in opened:
        client.__exit__(None, None, None)
        state.worker.stop()
        state.db.close()


@pytest.fixture
def items_client(make_client) -> tuple[TestClient, ServerState]:
    """Local mode (no keys), collection ``items`` with three lost-and-found records, embedded."""
    client, state = make_client()
    body = {"name": "items", "fields": ITEM_FIELDS, "text": ["name", "description"]}
    assert client.post("/collections", json=body).status_code == 201
    assert (
        client.post("/collections/items/records", json={"records": LOST_AND_FOUND}).status_code
        == 200
    )
    assert state.worker.wait_idle(10)
    return client, state
