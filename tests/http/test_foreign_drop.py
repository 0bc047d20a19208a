"""The HTTP and MCP servers' cached collection handles after another process drops or replaces
the collection (plumbing: the fake embedder; the other process is a second real connection)."""

from __future__ import annotations

import pytest

import semsearch
from semsearch.embedders.fake import FakeEmbedder
from semsearch.errors import IndexNotFound
from semsearch.server.mcp.service import McpConfig, McpService


def test_a_collection_replaced_elsewhere_is_reopened_not_written_through_fake_embedder(
    items_client,
) -> None:
    client, state = items_client
    with semsearch.connect(state.db.location) as other:
        other.drop_collection("items")
        other.collection("items", embedder=FakeEmbedder()).upsert([{"id": "new", "text": "n"}])
    late = {"id": "late", "name": "umbrella", "description": "black", "text": "umbrella black"}
    record = {"records": [late]}
    first = client.post("/collections/items/records", json=record)
    assert first.status_code == 404, first.text  # the old handle refuses: nothing written
    assert "dropped and created again" in first.json()["message"]
    listed = client.get("/collections/items/records/new")
    assert listed.status_code == 200  # the next request opens the new collection
    assert client.get("/collections/items/records/late").status_code == 404
    again = client.post("/collections/items/records", json=record)
    assert again.status_code == 200, again.text
    assert client.get("/collections/items/records/late").status_code == 200


def test_the_mcp_service_reopens_a_collection_replaced_elsewhere_fake_embedder(tmp_path) -> None:
    path = str(tmp_path / "m.embed.db")
    with semsearch.connect(path) as db:
        db.collection("notes", embedder="fake:32").upsert([{"id": "a.md", "text": "alpha"}])
    service = McpService(McpConfig(path, allow_writes=True, model="fake:32"))
    try:
        assert service.get("a.md")["id"] == "a.md"
        with semsearch.connect(path) as other:
            other.drop_collection("notes")
            other.collection("notes", embedder="fake:32").upsert([{"id": "b.md", "text": "beta"}])
        with pytest.raises(IndexNotFound):
            service.upsert([{"id": "c.md", "text": "gamma"}])
        assert service.upsert([{"id": "c.md", "text": "gamma"}])  # reopened
        assert service.get("b.md")["id"] == "b.md"
    finally:
        service.close()
