"""Privacy scope through every MCP tool, including `where` listings and write tools.

Plumbing over stdio with the deterministic fake embedder (fake:32); the real-model privacy test
is in test_mcp_stdio.py.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

import semsearch
from tests.e2e.mcp_client import McpProcess, text_of

SCHEMA = semsearch.Schema(fields=(semsearch.Field("folder", "str"),))
RECORDS = [
    {"id": "garden/tomatoes.md", "folder": "garden", "text": "tomatoes need water"},
    {"id": "garden/roses.md", "folder": "garden", "text": "roses need pruning"},
    {"id": "private/diary.md", "folder": "private", "text": "tomatoes diary secret"},
    {"id": "private/deep/hr.md", "folder": "private/deep", "text": "salary secret tomatoes"},
    {"id": "work/plan.md", "folder": "work", "text": "plan with tomatoes"},
]


@pytest.fixture
def scoped(tmp_path: Path) -> Iterator[McpProcess]:
    """Readable: garden/ and private/ ; excluded inside that: private/. So only garden/ shows."""
    path = tmp_path / "p.embed.db"
    with semsearch.connect(path) as db:
        db.collection("notes", schema=SCHEMA, embedder="fake:32").upsert(RECORDS)
    args = ["--index", str(path), "--read-paths", "garden/*", "--read-paths", "private",
            "--exclude", "private", "--allow-writes"]  # fmt: skip
    server = McpProcess(args, tmp_path / "stderr.txt")
    yield server
    server.close()


def test_only_allowed_paths_show_in_any_search(scoped: McpProcess) -> None:
    for mode in ("semantic", "keyword", "hybrid"):
        out = scoped.ok("search", {"query": "tomatoes secret", "mode": mode, "min_score": -1})
        assert out["hits"], mode
        assert {h["id"] for h in out["hits"]} <= {"garden/tomatoes.md", "garden/roses.md"}
        assert "secret" not in json.dumps(out["hits"])
    listing = scoped.ok("search", {"query": "", "where": {"folder": {"$ne": "garden"}}})
    assert listing["mode"] == "structured" and listing["hits"] == []
    everything = scoped.ok("search", {"query": "", "where": {"folder": {"$ne": "x"}}})
    assert sorted(h["id"] for h in everything["hits"]) == ["garden/roses.md", "garden/tomatoes.md"]


def test_hidden_records_look_missing_and_cannot_be_written(scoped: McpProcess) -> None:
    hidden = {i: scoped.call("get", {"id": i}) for i in ("private/diary.md", "work/plan.md")}
    for record_id, result in hidden.items():
        assert result.is_error
        assert text_of(result) == text_of(scoped.call("get", {"id": record_id + ".nope"})).replace(
            record_id + ".nope", record_id
        )
    refused = scoped.call("delete", {"ids": ["garden/roses.md", "private/diary.md"]})
    assert refused.is_error and "nothing was written" in text_of(refused)
    assert scoped.ok("get", {"id": "garden/roses.md"})["id"] == "garden/roses.md"


def test_ids_with_dot_segments_cannot_be_written_past_the_path_filters(
    scoped: McpProcess,
) -> None:
    """``garden/../private/diary.md`` matches the glob ``garden/*`` as a string, but names
    private/diary.md to anyone who reads it as a path (HTTP clients resolve it so)."""
    for record_id in ("garden/../private/diary.md", "garden/./roses.md", "garden/.."):
        refused = scoped.call("upsert", {"records": [{"id": record_id, "text": "planted"}]})
        assert refused.is_error, record_id
        assert "'.' or '..'" in text_of(refused) and "nothing was written" in text_of(refused)
    listing = scoped.ok("search", {"query": "", "folder": "garden"})
    assert sorted(h["id"] for h in listing["hits"]) == ["garden/roses.md", "garden/tomatoes.md"]
    with_dots = scoped.ok("upsert", {"records": [{"id": "garden/v1.2..notes.md", "text": "ok"}]})
    assert with_dots["added"] == 1  # dots inside a segment are fine


def test_an_empty_query_with_a_folder_lists_its_records_fake_embedder(scoped: McpProcess) -> None:
    listing = scoped.ok("search", {"query": "", "folder": "garden"})
    assert sorted(h["id"] for h in listing["hits"]) == ["garden/roses.md", "garden/tomatoes.md"]
    hidden = scoped.ok("search", {"query": "", "folder": "private"})
    assert hidden["hits"] == []  # the folder never widens the privacy scope
    refused = scoped.call("search", {"query": "  "})
    assert refused.is_error and "the query is empty" in text_of(refused)


def test_argument_errors_name_the_argument_without_pydantic_text_fake_embedder(
    scoped: McpProcess,
) -> None:
    wrong = scoped.call("search", {"query": "tomatoes", "limit": 500})
    message = text_of(wrong)
    assert wrong.is_error
    assert "argument `limit`: Input should be less than or equal to 100" in message
    assert "pydantic" not in message and "https://" not in message
    missing = scoped.call("get", {})
    assert missing.is_error and "argument `id` is required" in text_of(missing)
    typed = text_of(scoped.call("search", {"query": "x", "limit": "many", "mode": "fuzzy"}))
    assert "argument `limit`" in typed and "argument `mode`" in typed
