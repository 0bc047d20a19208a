"""Three CLI messages that misled: a --min-score hint offering values the option refuses, an
unwritable --index named without its folder, and index warnings printed twice.

Plumbing tests with SEMSEARCH_MODEL=fake:32 (the deterministic fake embedder), through typer's
runner and, where the library's log output matters, a real subprocess (pytest's log capture
would hide a duplicate printed through logging).
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

import semsearch
from semsearch.cli.app import app
from semsearch.health import Health, write_health

runner = CliRunner()


@pytest.fixture(autouse=True)
def fake_model(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SEMSEARCH_MODEL", "fake:32")
    monkeypatch.setenv("COLUMNS", "1000")  # one line per message


@pytest.fixture
def notes(tmp_path: Path) -> Path:
    root = tmp_path / "notes"
    root.mkdir()
    (root / "bees.md").write_text("# Bees\n\nBees make honey in summer.\n")
    return root


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "SEMSEARCH_MODEL": "fake:32", "HF_HUB_OFFLINE": "1", "COLUMNS": "1000"}
    argv = [sys.executable, "-m", "semsearch.cli.app", *args]
    return subprocess.run(argv, env=env, capture_output=True, text=True, timeout=120)


def test_plumbing_fake_embedder_min_score_hint_offers_only_what_the_cli_takes(
    notes: Path, tmp_path: Path
) -> None:
    index = str(tmp_path / "n.embed.db")
    assert runner.invoke(app, ["index", str(notes), "--index", index]).exit_code == 0
    bad = runner.invoke(app, ["search", "bees", "--index", index, "--min-score", "5"])
    assert bad.exit_code == 4
    assert "error: --min-score must be a number (cosine similarity) in [-1, 1], got 5" in (
        bad.output
    )
    assert '"default"' not in bad.output and "None" not in bad.output
    assert "hint: e.g. --min-score 0.4; leave the option out" in bad.output
    assert "--min-score -1" in bad.output
    for value in ("0.4", "-1"):  # what the hint offers, the CLI takes
        ok = runner.invoke(app, ["search", "bees", "--index", index, "--min-score", value])
        assert ok.exit_code == 0, ok.output
    refused = runner.invoke(app, ["search", "bees", "--index", index, "--min-score", "default"])
    assert refused.exit_code == 2  # why the hint must not offer it


def test_plumbing_fake_embedder_unwritable_index_names_the_path_given(
    notes: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    result = runner.invoke(app, ["index", str(notes), "--index", "sub/dir/t.embed.db"])
    assert result.exit_code == 6
    assert "error: cannot write the index sub/dir/t.embed.db:" in result.output
    assert "hint: check that its folder exists (sub/dir)" in result.output
    assert "sub/dir/t.embed.db and that folder are writable" in result.output
    assert not (tmp_path / "sub").exists()


def test_plumbing_fake_embedder_index_prints_each_warning_once(notes: Path, tmp_path: Path) -> None:
    (notes / "bad.md").write_text("---\ntitle: [unclosed\n---\n# Bad\n\nbody\n")
    index = str(tmp_path / "w.embed.db")
    first = run_cli("index", str(notes), "--index", index)
    assert first.returncode == 0, first.stderr
    assert first.stderr.count("front matter on lines 1-3 is not valid YAML") == 1
    with semsearch.connect(index) as db:  # a sync whose process died (pid 999999 is gone)
        owner = f"{socket.gethostname()}:999999"
        write_health(db.store, "notes", Health("syncing", "full sync running", owner=owner))
    again = run_cli("index", str(notes), "--index", index)
    assert again.returncode == 0, again.stderr
    assert again.stderr.count("the previous sync was interrupted") == 1
    assert again.stderr.count("front matter on lines 1-3 is not valid YAML") == 1
    assert "health: ok" in again.stdout


def test_plumbing_fake_embedder_watcher_says_interrupted_once(
    notes: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    from semsearch.sources.vault import VAULT_SCHEMA
    from semsearch.sources.watch import FolderWatcher

    lines: list[str] = []
    with semsearch.connect(tmp_path / "i.embed.db") as db:
        coll = db.collection("notes", schema=VAULT_SCHEMA, embedder="fake:32")
        owner = f"{socket.gethostname()}:999999"
        write_health(db.store, "notes", Health("syncing", "full sync running", owner=owner))
        with caplog.at_level("WARNING", logger="semsearch"):
            FolderWatcher(coll, notes, echo=lines.append).sync()
    said = [*lines, *(r.getMessage() for r in caplog.records)]  # what `semsearch watch` prints
    assert sum("the previous sync was interrupted" in line for line in said) == 1
