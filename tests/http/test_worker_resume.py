"""Chunks left pending by an earlier process are embedded when the server starts.

A server stopped (or killed) while its background worker still had work leaves the chunks stored
as pending; the next server must finish them without waiting for a new write or a staff
re-index. Plumbing only: the fake embedder (``fake:32``) on a real SQLite file, the real app.
"""

from __future__ import annotations

import semsearch
from semsearch.embedders.fake import FakeEmbedder
from tests.http.conftest import LOST_AND_FOUND


def test_fake_embedder_pending_chunks_from_a_previous_process_are_embedded_at_start(
    tmp_path, make_client
) -> None:
    schema = semsearch.Schema.from_types(
        {"category": "str", "location": "str"}, text=("name", "description")
    )
    with semsearch.connect(tmp_path / "api.embed.db") as db:  # the "previous process"
        items = db.collection("items", schema=schema, embedder=FakeEmbedder())
        assert items.upsert(LOST_AND_FOUND, embed=False).chunks_pending == 3

    client, state = make_client(name="api.embed.db")  # the same file, a new server
    assert state.worker.wait_idle(10)
    stats = client.get("/collections/items/stats").json()
    assert (stats["pending"], stats["embedded"]) == (0, 3)
    hits = client.post(
        "/collections/items/search",
        json={"query": "navy school blazer", "mode": "semantic", "min_score": None},
    ).json()["hits"]
    assert {h["id"] for h in hits} == {"blazer", "umbrella", "bottle"}


def test_fake_embedder_start_with_nothing_pending_queues_nothing(items_client) -> None:
    client, state = items_client
    assert client.get("/collections/items/stats").json()["pending"] == 0
    assert state.worker.status("items").queued is False
