"""The CLI's sentence windows: ``--no-sentence-windows`` on index, and the highlighted
sentence in bold in the search output (fake embedder: SEMSEARCH_MODEL=fake:32)."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

import semsearch
from semsearch.cli.app import app

runner = CliRunner()
NOTE = (
    "# Shed\n\nCompost needs air and water every week. The lighthouse key is under the blue pot.\n"
)


@pytest.fixture
def notes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("SEMSEARCH_MODEL", "fake:32")
    root = tmp_path / "notes"
    root.mkdir()
    (root / "shed.md").write_text(NOTE)
    return root


def test_no_sentence_windows_is_stored_with_the_collection(notes: Path, tmp_path: Path) -> None:
    index = str(tmp_path / "n.embed.db")
    result = runner.invoke(app, ["index", str(notes), "--index", index, "--no-sentence-windows"])
    assert result.exit_code == 0, result.output
    with semsearch.connect(index) as db:
        assert db.store.get_collection("notes").options["sentence_windows"] is False  # type: ignore[union-attr]


def test_search_prints_the_matching_sentence_in_bold(
    notes: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    index = str(tmp_path / "n.embed.db")
    assert runner.invoke(app, ["index", str(notes), "--index", index]).exit_code == 0
    from semsearch.cli import search_cmd

    printed: list[str] = []
    monkeypatch.setattr(search_cmd.out, "print", lambda text, **_: printed.append(str(text)))
    result = runner.invoke(app, ["search", "lighthouse", "--index", index, "--mode", "keyword"])
    assert result.exit_code == 0, result.output
    snippet = printed[-1]
    assert "[bold]The lighthouse key is under the blue pot.[/bold]" in snippet
    assert snippet.strip() == (
        "# Shed Compost needs air and water every week. "
        "[bold]The lighthouse key is under the blue pot.[/bold]"
    )
