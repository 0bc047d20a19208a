"""MCP tool errors shaped in one place (issue 19, items 3 and 7): unknown arguments are refused
by name, and an exception that is not a SemsearchError becomes a tool error with a message and a
hint, no path, and one logged traceback. Before, ``search {"query": "x", "model": "other"}``
answered as if ``model`` were absent, and a crash answered only "Error executing tool search".

The MCP SDK's own client on the real server (in-process transport), a real SQLite file, the
fake embedder (plumbing).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import semsearch
from semsearch.server.mcp.server import build_server
from semsearch.server.mcp.service import McpConfig, McpService


@pytest.fixture
def index(tmp_path: Path) -> str:
    path = str(tmp_path / "notes.embed.db")
    with semsearch.connect(path) as db:
        notes = db.collection(
            "notes", embedder="fake:32", schema=semsearch.Schema.from_types({"i": "int"})
        )
        notes.upsert([{"id": "a.md", "text": "alpha owls", "i": 1}, {"id": "b.md", "text": "beta"}])
    return path


def call(
    index: str,
    calls: list[tuple[str, dict[str, Any]]],
    extend: Callable[[Any], None] | None = None,
    allow_writes: bool = False,
) -> list[Any]:
    """Run the tool calls through a real MCP client session; ``extend`` adds tools first."""
    from mcp import Client

    service = McpService(McpConfig(location=index, model="fake:32", allow_writes=allow_writes))
    server = build_server(service)
    if extend is not None:
        extend(server)

    async def run() -> list[Any]:
        async with Client(server) as client:
            return [await client.call_tool(name, args) for name, args in calls]

    try:
        return asyncio.run(run())
    finally:
        service.close()


def text(result: Any) -> str:
    return str(result.content[0].text)


def test_unknown_arguments_are_refused_by_name(index: str) -> None:
    search, two, get, listed, write = call(
        index,
        [
            ("search", {"query": "alpha", "model": "other"}),
            ("search", {"query": "alpha", "top_k": 3, "filter": {"i": 1}}),
            ("get", {"id": "a.md", "collectoin": "notes"}),
            ("list_collections", {"verbose": True}),
            ("upsert", {"records": [{"id": "c.md", "text": "x"}], "embed": False}),
        ],
        allow_writes=True,
    )
    assert search.is_error
    assert text(search).startswith("Error executing tool search: unknown argument `model`")
    assert "hint: search takes: `query`, `mode`" in text(search)
    assert two.is_error and "unknown arguments `filter`, `top_k`" in text(two)
    assert get.is_error and "`collectoin`" in text(get)
    assert listed.is_error and "`verbose`" in text(listed)
    assert write.is_error and "`embed`" in text(write)
    with semsearch.connect(index) as db:  # the refused upsert wrote nothing
        assert db.collection("notes", embedder="fake:32").count() == 2


def test_known_arguments_still_work(index: str) -> None:
    (found,) = call(index, [("search", {"query": "alpha", "mode": "keyword", "limit": 5})])
    assert not found.is_error
    assert [h["id"] for h in found.structured_content["hits"]] == ["a.md"]


def test_empty_subfilters_answer_through_mcp(index: str) -> None:
    every, none = call(
        index,
        [
            (
                "search",
                {
                    "query": "alpha",
                    "where": {"$or": [{}, {"i": 1}]},
                    "mode": "semantic",
                    "min_score": -1.0,
                },
            ),
            ("search", {"query": "alpha", "where": {"$not": {}}}),
        ],
    )
    assert not every.is_error, text(every)
    assert sorted(h["id"] for h in every.structured_content["hits"]) == ["a.md", "b.md"]
    assert not none.is_error and none.structured_content["hits"] == []


def test_an_unexpected_exception_is_a_tool_error_with_a_hint_and_a_logged_traceback(
    index: str, caplog: pytest.LogCaptureFixture
) -> None:
    def crashing(server: Any) -> None:
        @server.tool(name="crash")
        def crash() -> dict[str, Any]:
            raise RuntimeError("boom in /home/someone/private/notes.embed.db")

    with caplog.at_level(logging.INFO):
        (result,) = call(index, [("crash", {})], extend=crashing)
    message = text(result)
    assert result.is_error
    assert message.startswith("Error executing tool crash: internal error (RuntimeError)")
    assert "\nhint: " in message and "server log" in message
    assert "/home/someone" not in message and "boom" not in message
    tracebacks = [r for r in caplog.records if r.exc_info]
    assert len(tracebacks) == 1  # logged once, by semsearch, with the original exception
    assert "boom" in str(tracebacks[0].exc_info[1])
