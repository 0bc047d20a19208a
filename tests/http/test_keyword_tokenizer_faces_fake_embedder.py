"""Every face that creates a collection can choose its keyword tokenizer (fake embedder).

The CLI (``index``, ``import``, ``mcp``) takes ``--keyword-tokenizer``, ``POST /collections``
takes ``keyword_tokenizer``. The stored option is read back from the store, and a trigram
collection answers a substring query that the default porter tokenizer cannot (``lazer`` in
``blazer``: a porter collection only matches whole words).
"""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

import semsearch
from semsearch.cli.app import app
from semsearch.server.mcp.service import McpConfig, McpService

runner = CliRunner()


def _tokenizer(index: str, name: str) -> str:
    with semsearch.connect(index) as db:
        info = db.store.get_collection(name)
        assert info is not None
        return str(info.options.get("keyword_tokenizer", "porter"))


def test_cli_index_and_import_choose_the_tokenizer_fake_embedder(tmp_path: Path, monkeypatch):
    monkeypatch.setenv("SEMSEARCH_MODEL", "fake:32")
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "a.md").write_text("# Lost\n\nA navy blazer was found in the gym.\n")
    index = str(tmp_path / "n.embed.db")
    args = ["index", str(notes), "--index", index, "--keyword-tokenizer", "trigram"]
    assert runner.invoke(app, args).exit_code == 0
    assert _tokenizer(index, "notes") == "trigram"
    found = runner.invoke(app, ["search", "lazer", "--index", index, "--mode", "keyword", "--json"])
    assert [h["id"] for h in json.loads(found.stdout)["hits"]] == ["a.md"]
    records = tmp_path / "items.jsonl"
    records.write_text(json.dumps({"id": "x", "text": "navy blazer"}) + "\n")
    args = [
        "import",
        str(records),
        "-c",
        "items",
        "--index",
        index,
        "--keyword-tokenizer",
        "trigram",
    ]
    assert runner.invoke(app, args).exit_code == 0
    assert _tokenizer(index, "items") == "trigram"
    bad = runner.invoke(app, [*args[:-1], "bogus"])
    assert bad.exit_code != 0 and "unknown keyword tokenizer 'bogus'" in bad.output


def test_http_create_collection_chooses_the_tokenizer_fake_embedder(make_client) -> None:
    client, _ = make_client()
    body = {"name": "items", "keyword_tokenizer": "trigram"}
    assert client.post("/collections", json=body).status_code == 201
    records = [{"id": "b", "text": "navy blazer"}]
    assert client.post("/collections/items/records", json={"records": records}).status_code == 200
    hits = client.post("/collections/items/search", json={"query": "lazer", "mode": "keyword"})
    assert [h["id"] for h in hits.json()["hits"]] == ["b"]
    assert (
        client.post("/collections", json={"name": "z", "keyword_tokenizer": "x"}).status_code == 422
    )


def test_mcp_upsert_creates_with_the_configured_tokenizer_fake_embedder(tmp_path: Path) -> None:
    index = str(tmp_path / "m.embed.db")
    config = McpConfig(
        location=index, model="fake:32", allow_writes=True, keyword_tokenizer="trigram"
    )
    service = McpService(config)
    try:
        service.upsert([{"id": "b", "text": "navy blazer"}])
        assert service.search("lazer", mode="keyword")["count"] == 1
    finally:
        service.close()
    assert _tokenizer(index, "notes") == "trigram"
