"""Write tools (upsert, delete, reindex) exist only with --allow-writes and respect the scope.

Plumbing over stdio with the deterministic fake embedder (fake:32); no model is loaded.
"""

from __future__ import annotations

from pathlib import Path

import semsearch
from tests.e2e.mcp_client import McpProcess, text_of


def _index(path: Path) -> Path:
    with semsearch.connect(path) as db:
        db.collection("notes", embedder="fake:32").upsert(
            [{"id": "garden/tomatoes.md", "text": "Water the tomatoes every morning."}]
        )
    return path


def test_write_tools_absent_without_allow_writes(tmp_path: Path) -> None:
    index = _index(tmp_path / "w.embed.db")
    server = McpProcess(["--index", str(index)], tmp_path / "stderr.txt")
    try:
        assert not {"upsert", "delete", "reindex"} & set(server.tools())
        refused = server.call("delete", {"ids": ["garden/tomatoes.md"]})
        assert refused.is_error
        assert server.ok("get", {"id": "garden/tomatoes.md"})["id"] == "garden/tomatoes.md"
    finally:
        server.close()


def test_upsert_delete_reindex_with_allow_writes(tmp_path: Path) -> None:
    index = _index(tmp_path / "w.embed.db")
    args = ["--index", str(index), "--allow-writes", "--exclude", "private"]
    server = McpProcess(args, tmp_path / "stderr.txt")
    try:
        tools = server.tools()
        assert {"upsert", "delete", "reindex"} <= set(tools)
        assert tools["delete"].annotations.destructive_hint is True
        added = server.ok(
            "upsert", {"records": [{"id": "garden/roses.md", "text": "Prune roses in spring."}]}
        )
        assert (added["added"], added["chunks_pending"]) == (1, 0)
        found = server.ok("search", {"query": "roses", "mode": "keyword"})
        assert [h["id"] for h in found["hits"]] == ["garden/roses.md"]
        hidden = server.call("upsert", {"records": [{"id": "private/a.md", "text": "x"}]})
        assert hidden.is_error and "outside the paths" in text_of(hidden)
        assert server.call("get", {"id": "private/a.md"}).is_error  # nothing was written
        assert server.ok("reindex")["chunks_embedded"] == 0  # nothing was pending
        assert server.ok("delete", {"ids": ["garden/roses.md", "garden/none.md"]})["deleted"] == 1
        assert server.ok("search", {"query": "roses", "mode": "keyword"})["hits"] == []
        assert server.ok("stats")["writes_allowed"] is True
    finally:
        server.close()
