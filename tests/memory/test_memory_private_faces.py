"""Conversation memory is reachable only through the memory API, on every face (issue 19, item 5).

The rule lives once, in :class:`semsearch.Database`: ``collection()`` refuses the memory
collection and ``collections()`` leaves it out. Before, the MCP server listed ``messages`` and
its ``search`` and ``get`` returned any user's messages with their ``user_id``, and the Python
API and the CLI opened it like any collection. Real SQLite files, the real CLI (CliRunner), the
real HTTP app, and the MCP SDK's own client on the real server (in-process transport); fake
embedder (plumbing).
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

import semsearch
from semsearch.cli.app import app
from semsearch.errors import InvalidQuery
from semsearch.memory.conversation import ConversationMemory

SECRET = "my bank PIN is 4321"


@pytest.fixture
def index(tmp_path: Path) -> str:
    """An index with a `notes` collection and alice's memory (in `messages` and in `chat`)."""
    path = str(tmp_path / "shared.embed.db")
    with semsearch.connect(path) as db:
        db.collection("notes", embedder="fake:32").upsert([{"id": "a.md", "text": "owls"}])
        for name in ("messages", "chat"):
            memory = ConversationMemory(db, embedder="fake:32", background=False, collection=name)
            memory.add_message("alice", "c1", "user", SECRET)
            memory.backfill()
            memory.close()
    return path


def test_python_api_refuses_the_memory_collection_and_does_not_list_it(index: str) -> None:
    with semsearch.connect(index) as db:
        assert db.collections() == ["notes"]
        assert db.collections(include_memory=True) == ["chat", "messages", "notes"]
        for name in ("messages", "chat"):
            with pytest.raises(InvalidQuery, match="conversation memory") as caught:
                db.collection(name, create=False)
            assert caught.value.hint and "ConversationMemory" in caught.value.hint
        with pytest.raises(InvalidQuery):
            db.collection("messages", embedder="fake:32")  # nor created as a plain collection
        memory = ConversationMemory(db, embedder="fake:32", background=False)
        assert [h.message.content for h in memory.search("alice", SECRET, min_score=None)] == [
            SECRET
        ]
        assert memory.search("bob", SECRET, min_score=None) == []
        memory.close()


def test_cli_refuses_the_memory_collection(index: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SEMSEARCH_MODEL", "fake:32")
    runner = CliRunner()
    for name in ("messages", "chat"):
        done = runner.invoke(app, ["search", "bank", "-c", name, "--index", index, "-m", "keyword"])
        assert done.exit_code == 4, done.output
        assert "conversation memory" in done.output and SECRET not in done.output
    stats = runner.invoke(app, ["stats", "--index", index, "--json"])
    assert stats.exit_code == 0, stats.output
    assert [c["name"] for c in json.loads(stats.output)["collections"]] == ["notes"]
    stats_one = runner.invoke(app, ["stats", "--index", index, "-c", "messages"])
    assert stats_one.exit_code == 4


def test_http_collection_routes_do_not_reach_a_memory_under_another_name(make_client) -> None:
    c, state = make_client()
    memory = ConversationMemory(state.db, embedder="fake:32", background=False, collection="chat")
    memory.add_message("alice", "c1", "user", SECRET)
    memory.backfill()
    assert "chat" not in [x["name"] for x in c.get("/collections").json()]
    found = c.post("/collections/chat/search", json={"query": "bank", "mode": "keyword"})
    assert found.status_code == 404 and SECRET not in found.text
    assert c.get("/collections/chat/records/x").status_code == 404
    memory.close()


def _mcp_calls(index: str, calls: list[tuple[str, dict[str, Any]]]) -> list[Any]:
    from mcp import Client

    from semsearch.server.mcp.server import build_server
    from semsearch.server.mcp.service import McpConfig, McpService

    service = McpService(McpConfig(location=index, model="fake:32"))

    async def run() -> list[Any]:
        async with Client(build_server(service)) as client:
            return [await client.call_tool(name, args) for name, args in calls]

    try:
        return asyncio.run(run())
    finally:
        service.close()


def test_mcp_tools_do_not_list_search_or_read_the_memory_collection(index: str) -> None:
    with semsearch.connect(index) as db:
        message_id = (
            ConversationMemory(db, embedder="fake:32", background=False).recent("alice", "c1")[0].id
        )
    listed, stats, *refused = _mcp_calls(
        index,
        [
            ("list_collections", {}),
            ("stats", {}),
            ("search", {"query": "bank PIN", "collection": "messages", "mode": "keyword"}),
            ("search", {"query": "bank PIN", "collection": "chat"}),
            ("get", {"id": message_id, "collection": "messages"}),
        ],
    )
    assert [c["name"] for c in listed.structured_content["collections"]] == ["notes"]
    assert [c["name"] for c in stats.structured_content["collections"]] == ["notes"]
    for result in refused:
        text = result.content[0].text
        assert result.is_error and "conversation memory" in text
        assert SECRET not in text and "alice" not in text
