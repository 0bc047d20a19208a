"""The CLI prints user text verbatim: no Rich markup and no emoji codes taken from record text,
ids, queries, filter names or error messages. Plumbing tests with the fake embedder."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from semsearch.cli.app import app

runner = CliRunner()


@pytest.fixture(autouse=True)
def fake_model(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SEMSEARCH_MODEL", "fake:32")


@pytest.fixture
def index(tmp_path: Path) -> str:
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "passwd :x: [red].md").write_text(
        "# Users :smile:\n\nThe line root:x:0:0 and [bold]not bold[/bold] stay as typed.\n"
    )
    path = str(tmp_path / "v.embed.db")
    result = runner.invoke(app, ["index", str(notes), "--index", path])
    assert result.exit_code == 0, result.output
    return path


def test_fake_embedder_snippets_ids_and_headings_print_verbatim(index: str) -> None:
    result = runner.invoke(app, ["search", "root", "--index", index, "--mode", "keyword"])
    assert result.exit_code == 0, result.output
    for text in ("root:x:0:0", "[bold]not bold[/bold]", "passwd :x: [red].md", ":smile:"):
        assert text in result.output
    assert "\u274c" not in result.output and "\U0001f604" not in result.output  # ❌, 😄


def test_fake_embedder_query_echo_prints_verbatim(index: str) -> None:
    result = runner.invoke(app, ["search", "[/red] :x:", "--index", index, "--mode", "keyword"])
    assert result.exit_code == 0, result.output
    assert "'[/red] :x:'" in result.output and "\u274c" not in result.output


def test_fake_embedder_error_messages_print_user_text_verbatim(index: str) -> None:
    args = ["search", "root", "--index", index, "--filter", "[red]:x:=1"]
    result = runner.invoke(app, args)
    assert result.exit_code != 0
    assert "'[red]:x:'" in result.output and "\u274c" not in result.output
