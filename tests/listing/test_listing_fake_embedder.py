"""An empty query lists records without ranking, with limit/offset, on the Python API, the CLI
and HTTP; the MCP search tool still refuses an unfiltered listing and says so.

Plumbing tests with the deterministic fake embedder (listing never embeds).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from typer.testing import CliRunner

import semsearch
from semsearch.cli.app import app
from semsearch.embedders.fake import FakeEmbedder
from semsearch.errors import InvalidQuery
from semsearch.schema import Field, Schema
from semsearch.server.http.app import create_app
from semsearch.server.http.auth import KeyRing
from semsearch.server.http.state import ServerState
from semsearch.server.mcp.service import McpConfig, McpService

# ids deliberately not in insertion order: a listing is ordered by id
IDS = ["kiwi", "apple", "fig", "banana", "cherry", "date", "elder"]
SORTED = sorted(IDS)  # apple banana cherry date elder fig kiwi
SCHEMA = Schema(fields=(Field("colour", "str"),), text=("name",))


@pytest.fixture
def index(tmp_path: Path) -> Path:
    path = tmp_path / "fruit.embed.db"
    with semsearch.connect(path) as db:
        coll = db.collection("fruit", schema=SCHEMA, embedder="fake:32")
        colour = {"kiwi": "green", "fig": "purple", "apple": "green"}
        coll.upsert([{"id": i, "name": f"a {i}", "colour": colour.get(i, "other")} for i in IDS])
    return path


def test_python_empty_query_lists_by_id_with_limit_and_offset(index: Path) -> None:
    with semsearch.connect(index) as db:
        coll = db.collection("fruit", create=False, embedder="fake:32")
        first = coll.search("", limit=3)
        assert (first.mode, first.ids) == ("structured", ["apple", "banana", "cherry"])
        assert all(h.score == 0.0 and h.chunk is None for h in first.hits)
        assert coll.search("  ", limit=3, offset=3).ids == ["date", "elder", "fig"]
        assert coll.search("", limit=10, offset=6).ids == ["kiwi"]
        assert coll.search("", offset=7).ids == []
        assert coll.search("", where={"colour": "green"}, offset=1).ids == ["kiwi"]
        assert [r.id for r in coll.find(limit=2, offset=5)] == ["fig", "kiwi"]


def test_offset_with_a_query_or_negative_is_refused(index: Path) -> None:
    with semsearch.connect(index) as db:
        coll = db.collection("fruit", create=False, embedder="fake:32")
        with pytest.raises(InvalidQuery, match="offset pages listings"):
            coll.search("apple", offset=2)
        for bad in (-1, 2**63):  # 2**63: past what a store can bind
            with pytest.raises(InvalidQuery, match=r"offset must be >= 0 \(and below 2\*\*63\)"):
                coll.search("", offset=bad)


def test_cli_search_without_a_query_lists_records(
    index: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SEMSEARCH_MODEL", "fake:32")
    args = ["search", "--index", str(index), "-c", "fruit", "--limit", "2", "--offset", "1"]
    result = CliRunner().invoke(app, [*args, "--json"])
    assert result.exit_code == 0, result.output
    assert [h["id"] for h in json.loads(result.stdout)["hits"]] == ["banana", "cherry"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    assert "2 hits" in result.output and "banana" in result.output and "apple" not in result.output


def test_http_empty_query_lists_with_offset(index: Path) -> None:
    db = semsearch.connect(index)
    state = ServerState(db, KeyRing.load(""), embedder=FakeEmbedder())  # type: ignore[arg-type]
    with TestClient(create_app(state), base_url="http://localhost") as client:
        listed = client.post("/collections/fruit/search", json={"limit": 4, "offset": 4})
        refused = client.post("/collections/fruit/search", json={"query": "fig", "offset": 1})
    state.worker.stop()
    db.close()
    assert listed.status_code == 200
    assert [h["id"] for h in listed.json()["hits"]] == ["elder", "fig", "kiwi"]
    assert listed.json()["mode"] == "structured"
    assert refused.status_code == 400 and "offset" in refused.json()["message"]


def test_mcp_search_tool_refuses_to_list_everything_and_says_so(index: Path) -> None:
    service = McpService(McpConfig(str(index), collection="fruit", model="fake:32"))
    with pytest.raises(InvalidQuery, match="does not list every record"):
        service.search("")
    assert [h["id"] for h in service.search("", where={"colour": "purple"})["hits"]] == ["fig"]
