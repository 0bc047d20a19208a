"""CLI messages that tell the user what actually happened (fresh-user trial findings).

Plumbing tests with SEMSEARCH_MODEL=fake:32 (the deterministic fake embedder), through typer's
runner and, for raw argv bytes, a real subprocess.
"""

from __future__ import annotations

import os
import subprocess
import sys
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
    (notes / "garden").mkdir(parents=True)
    (notes / "garden" / "bees.md").write_text("# Bees\n\nBees make honey in summer.\n")
    path = str(tmp_path / "n.embed.db")
    assert runner.invoke(app, ["index", str(notes), "--index", path]).exit_code == 0
    return path


def test_indexing_a_missing_folder_creates_no_index_file_fake_embedder(tmp_path: Path) -> None:
    target = tmp_path / "y.embed.db"
    result = runner.invoke(app, ["index", str(tmp_path / "nonexistent"), "--index", str(target)])
    assert result.exit_code == 1
    assert "is not a folder" in result.output
    assert not target.exists()


def test_a_non_utf8_byte_in_the_query_gets_a_cli_hint_fake_embedder(index: str) -> None:
    env = {**os.environ, "SEMSEARCH_MODEL": "fake:32", "HF_HUB_OFFLINE": "1", "LANG": "C.UTF-8"}
    argv = [sys.executable, "-m", "semsearch.cli.app", "search", b"caf\xff", "--index", index]
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 4
    assert "QUERY holds byte 0xff that is not valid UTF-8 at character 3" in done.stderr
    assert "UTF-8 locale" in done.stderr
    assert "JSON" not in done.stderr and "surrogate pair" not in done.stderr


def test_an_unknown_model_is_named_with_the_accepted_forms(
    index: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SEMSEARCH_MODEL", "bogus")
    result = runner.invoke(app, ["search", "bees", "--index", index])
    assert result.exit_code == 8  # docs/cli.md: the embedding model cannot be loaded
    assert "unknown model 'bogus'" in result.output
    assert "'fake:<dim>'" in result.output and "'local:<model folder>'" in result.output
    assert "local:/" not in result.output  # no absolute path made up from the typo


def test_min_score_and_hyde_in_keyword_mode_warn_fake_embedder(index: str) -> None:
    result = runner.invoke(
        app,
        ["search", "bees", "--index", index, "--mode", "keyword", "--min-score", "0.9",
         "--hyde", "honey"],
    )  # fmt: skip
    assert result.exit_code == 0
    assert "min_score=0.9 ignored: keyword scores are BM25, which has no fixed scale" in (
        result.output
    )
    assert "--hyde is ignored in keyword mode" in result.output
    assert "garden/bees.md" in result.output  # min_score 0.9 did not cut the BM25 hit
    quiet = runner.invoke(app, ["search", "bees", "--index", index, "--mode", "keyword"])
    assert "warning" not in quiet.output and "note" not in quiet.output


def test_a_hybrid_search_whose_folder_hides_everything_says_so_fake_embedder(index: str) -> None:
    result = runner.invoke(
        app, ["search", "bees", "--index", index, "--mode", "hybrid", "--folder", "nowhere"]
    )
    assert result.exit_code == 0
    assert "no record inside the search's scope" in result.output
    assert "no record contains the query's words" not in result.output


@pytest.mark.parametrize(
    ("args", "flag"), [(["--limit", "0"], "--limit"), (["--min-score", "2"], "--min-score")]
)
def test_a_bad_option_is_named_as_its_flag_not_as_a_python_argument_fake_embedder(
    index: str, args: list[str], flag: str
) -> None:
    result = runner.invoke(app, ["search", "bees", "--index", index, *args])
    assert result.exit_code != 0
    assert f"error: {flag} must be" in result.output
    assert f"hint: e.g. {flag} " in result.output
    assert "limit=" not in result.output and "min_score" not in result.output
