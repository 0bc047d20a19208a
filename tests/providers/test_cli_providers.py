"""The CLI with an API model from SEMSEARCH_MODEL, through an outage (local fake OpenAI API)."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from semsearch.cli.app import app
from tests.providers.servers import Action

pytestmark = pytest.mark.usefixtures("keys")

SPEC = "openai:text-embedding-3-small?dimensions=8"


def test_index_during_outage_then_reindex(tmp_path, openai_server, monkeypatch):
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "tea.md").write_text("# Tea\n\nGreen tea is brewed at 80 degrees.\n")
    (notes / "bikes.md").write_text("# Bikes\n\nPump the tyres before a long ride.\n")
    index = str(tmp_path / "n.embed.db")
    monkeypatch.setenv("SEMSEARCH_MODEL", SPEC)
    monkeypatch.setenv("OPENAI_BASE_URL", openai_server.url + "/v1")
    runner = CliRunner()

    openai_server.push(*[Action(500, body={"error": {"message": "down"}})] * 5)
    result = runner.invoke(app, ["index", str(notes), "--index", index])
    assert result.exit_code == 0, result.output
    assert "pending 0, failed 2" in result.output

    result = runner.invoke(app, ["search", "tyres", "--mode", "keyword", "--index", index])
    assert result.exit_code == 0 and "bikes.md" in result.output

    result = runner.invoke(app, ["reindex", "--index", index])
    assert result.exit_code == 0 and "2 chunks embedded" in result.output
    # the fake's vectors carry no meaning: ask for every hit, to see the semantic leg answer
    args = ["search", "green tea", "--index", index, "--json", "--min-score", "-1"]
    result = runner.invoke(app, args)
    assert result.exit_code == 0 and '"degraded": false' in result.output
    assert '"tea.md"' in result.output and '"bikes.md"' in result.output
    assert all(b["model"] == "text-embedding-3-small" for b in openai_server.bodies())
