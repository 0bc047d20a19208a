"""SRD monsters' ``challenge_rating`` filter takes the fractions players write ("1/4", "1/2")
as well as numbers, on every face: Python, CLI (--filter and --where), HTTP and MCP.

Real SRD data (../shared/data/dnd5e_srd); the deterministic fake embedder, because these are
filtered listings (empty query) and meaning plays no part. Expected ids come from the JSON file.
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
from semsearch.errors import InvalidFilter
from semsearch.server.http.app import create_app
from semsearch.server.http.auth import KeyRing
from semsearch.server.http.state import ServerState
from semsearch.server.mcp.service import McpConfig, McpService
from semsearch.sources.srd import load_srd
from tests.conftest import shared_path


@pytest.fixture(scope="module")
def monsters_json() -> list[dict]:
    return json.loads((shared_path("dnd5e_srd") / "5e-SRD-Monsters.json").read_text())


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("cr") / "dnd.embed.db"
    with semsearch.connect(path) as db:
        load_srd(db, shared_path("dnd5e_srd"), ("creatures",), embedder="fake:32")
    return path


def ids_where(monsters: list[dict], keep) -> list[str]:  # type: ignore[no-untyped-def]
    return sorted(m["index"] for m in monsters if keep(m["challenge_rating"]))


def test_python_where_takes_fractions(index: Path, monsters_json: list[dict]) -> None:
    quarter = ids_where(monsters_json, lambda cr: cr == 0.25)
    assert len(quarter) > 5  # the SRD has many CR 1/4 monsters (e.g. goblin)
    with semsearch.connect(index) as db:
        coll = db.collection("creatures", create=False, embedder="fake:32")
        assert coll.search("", where={"challenge_rating": "1/4"}, limit=1000).ids == quarter
        assert coll.search("", where={"challenge_rating": 0.25}, limit=1000).ids == quarter
        up_to_half = coll.search("", where={"challenge_rating_max": "1/2"}, limit=1000).ids
        assert up_to_half == ids_where(monsters_json, lambda cr: cr <= 0.5)
        either = {"challenge_rating": {"$in": ["1/8", " 1 / 2 "]}}
        expected = ids_where(monsters_json, lambda cr: cr in (0.125, 0.5))
        assert coll.search("", where=either, limit=1000).ids == expected
        for bad in ("1/0", "quarter", "1/4/2"):
            with pytest.raises(InvalidFilter, match="challenge_rating") as info:
                coll.find({"challenge_rating": bad})
            assert "1/4" in (info.value.hint or "")


def test_cli_filter_and_where_take_fractions(
    index: Path, monsters_json: list[dict], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SEMSEARCH_MODEL", "fake:32")
    half = ids_where(monsters_json, lambda cr: cr == 0.5)
    base = ["search", "", "-c", "creatures", "--index", str(index), "-n", "1000", "--json"]
    for extra in (["--filter", "challenge_rating=1/2"], ["--where", '{"challenge_rating": "1/2"}']):
        result = CliRunner().invoke(app, [*base, *extra])
        assert result.exit_code == 0, result.output
        assert [h["id"] for h in json.loads(result.stdout)["hits"]] == half


def test_http_and_mcp_take_fractions(index: Path, monsters_json: list[dict]) -> None:
    eighth = ids_where(monsters_json, lambda cr: cr == 0.125)
    db = semsearch.connect(index)
    state = ServerState(db, KeyRing.load(""), embedder=FakeEmbedder())  # type: ignore[arg-type]
    body = {"query": "", "where": {"challenge_rating": "1/8"}, "limit": 1000}
    with TestClient(create_app(state), base_url="http://localhost") as client:
        found = client.post("/collections/creatures/search", json=body)
    state.worker.stop()
    db.close()
    assert [h["id"] for h in found.json()["hits"]] == eighth
    service = McpService(McpConfig(str(index), collection="creatures", model="fake:32"))
    listed = service.search("", where={"challenge_rating": "1/8"}, limit=len(eighth))
    assert [h["id"] for h in listed["hits"]] == eighth
