"""Page numbers of PDF hits on every face: CLI (text and --json), HTTP (API body), MCP hit view.

Plumbing tests with the deterministic fake embedder (keyword mode finds the page; meaning does
not matter here). The PDF is made in the test with fpdf2.
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
from semsearch.server.http.app import create_app
from semsearch.server.http.auth import KeyRing
from semsearch.server.http.state import ServerState
from semsearch.server.mcp.views import hit_view
from semsearch.sources.vault import VAULT_SCHEMA, index_folder
from tests.pdf.make import text_pdf

pytest.importorskip("pypdf")
runner = CliRunner()


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    root = tmp_path / "docs"
    root.mkdir()
    pages = ["Chapter one is about rivers.", "Chapter two is about glaciers and ice."]
    (root / "book.pdf").write_bytes(text_pdf(pages))
    return root


def test_cli_search_shows_the_page(
    folder: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SEMSEARCH_MODEL", "fake:32")
    index = str(tmp_path / "d.embed.db")
    result = runner.invoke(app, ["index", str(folder), "--index", index])
    assert result.exit_code == 0, result.output
    assert "1 new" in result.output
    result = runner.invoke(app, ["search", "glaciers", "--index", index, "--mode", "keyword"])
    assert result.exit_code == 0, result.output
    assert "book.pdf p. 2" in result.output
    result = runner.invoke(
        app, ["search", "glaciers", "--index", index, "--mode", "keyword", "--json"]
    )
    chunk = json.loads(result.stdout)["hits"][0]["chunk"]
    assert (chunk["page_start"], chunk["page_end"], chunk["line_start"]) == (2, 2, None)


def test_http_and_mcp_hits_carry_pages(folder: Path, tmp_path: Path) -> None:
    db = semsearch.connect(tmp_path / "api.embed.db")
    coll = db.collection("notes", schema=VAULT_SCHEMA, embedder=FakeEmbedder())
    index_folder(coll, folder)
    view = hit_view(coll.search("rivers", mode="keyword").hits[0])
    assert (view["page_start"], view["page_end"]) == (1, 1)
    state = ServerState(db, KeyRing.load(""), embedder=FakeEmbedder())  # type: ignore[arg-type]
    with TestClient(create_app(state), base_url="http://localhost") as client:
        body = {"query": "glaciers", "mode": "keyword"}
        found = client.post("/collections/notes/search", json=body).json()
    chunk = found["hits"][0]["chunk"]
    assert (found["hits"][0]["id"], chunk["page_start"], chunk["page_end"]) == ("book.pdf", 2, 2)
    state.worker.stop()
    db.close()
