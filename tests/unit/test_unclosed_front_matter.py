"""Front matter opened with ``---`` and never closed: indexed whole, and reported as a warning.

Plumbing tests with the fake embedder: the library's sync report, the log, and the CLI's summary.
"""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from typer.testing import CliRunner

import semsearch
from semsearch.cli.app import app
from semsearch.sources.vault import VAULT_SCHEMA, index_folder

UNCLOSED = "---\ntitle: never closed\n\n# Heading\n\nThe body mentions quokkas.\n"


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    root = tmp_path / "vault"
    root.mkdir()
    (root / "open.md").write_text(UNCLOSED, encoding="utf-8")
    (root / "closed.md").write_text("---\ntitle: fine\n---\n# Fine\n\nAll good.\n")
    (root / "rule.md").write_text("# Rule\n\n---\n\nA horizontal rule, not front matter.\n")
    return root


def test_unclosed_front_matter_is_indexed_whole_and_warned_fake_embedder(
    vault: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with semsearch.connect(str(tmp_path / "v.embed.db")) as db:
        coll = db.collection("notes", schema=VAULT_SCHEMA, embedder="fake:16")
        with caplog.at_level(logging.WARNING, logger="semsearch.sources.vault"):
            report = index_folder(coll, vault)
        assert [rel for rel, _ in report.warnings] == ["open.md"]
        assert "never closed" in report.warnings[0][1]
        assert any("open.md" in r.getMessage() for r in caplog.records)
        assert report.skipped == []
        assert coll.search("quokkas", mode="keyword", limit=1).ids == ["open.md"]
        hit = coll.search("never closed", mode="keyword", limit=1)[0]  # the unclosed block
        assert hit.id == "open.md"
        assert hit.chunk is not None and "title: never closed" in hit.chunk.text


def test_cli_index_summary_counts_the_warning_fake_embedder(
    vault: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SEMSEARCH_MODEL", "fake:32")
    index = str(tmp_path / "n.embed.db")
    result = CliRunner().invoke(app, ["index", str(vault), "--index", index])
    assert result.exit_code == 0, result.output
    assert "0 skipped, 1 warnings;" in result.output
    assert "warning: open.md: front matter" in " ".join(result.output.split())


@pytest.mark.parametrize(
    "front, why", [("title: [unclosed\ntags: a\n", "not valid YAML"),
                   ("- just\n- a list\n", "YAML list")],
)  # fmt: skip
def test_front_matter_that_is_not_yaml_key_values_is_warned_fake_embedder(
    tmp_path: Path, front: str, why: str
) -> None:
    """Before, such front matter was dropped without a word: the note lost its fields and the
    index said nothing."""
    root = tmp_path / "vault"
    root.mkdir()
    (root / "bad.md").write_text(f"---\n{front}---\n# Bad\n\nThe body of bad.\n")
    with semsearch.connect(str(tmp_path / "v.embed.db")) as db:
        coll = db.collection("notes", schema=VAULT_SCHEMA, embedder="fake:16")
        report = index_folder(coll, root)
        assert [rel for rel, _ in report.warnings] == ["bad.md"]
        lines = front.count("\n") + 2  # the opening and closing '---' lines
        assert why in report.warnings[0][1] and f"lines 1-{lines}" in report.warnings[0][1]
        assert coll.search("body", mode="keyword", limit=1).ids == ["bad.md"]  # still indexed
