"""The CLI: index / search / stats through typer's runner and through real subprocesses.

Plumbing tests use SEMSEARCH_MODEL=fake:32 (the deterministic fake embedder).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from semsearch.cli.app import app

runner = CliRunner()


@pytest.fixture
def notes_dir(tmp_path: Path) -> Path:
    root = tmp_path / "notes"
    (root / "private").mkdir(parents=True)
    (root / "howto.md").write_text("# Links\n\nCreate links between notes with brackets.\n")
    (root / "private" / "diary.md").write_text("# Diary\n\nLinks to my secret thoughts.\n")
    return root


@pytest.fixture
def fake_model(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SEMSEARCH_MODEL", "fake:32")


def test_index_then_search_json_then_stats(
    notes_dir: Path, tmp_path: Path, fake_model: None
) -> None:
    index = str(tmp_path / "n.embed.db")
    result = runner.invoke(app, ["index", str(notes_dir), "--index", index])
    assert result.exit_code == 0, result.output
    assert "2 new, 0 changed, 0 unchanged, 0 removed, 0 skipped" in result.output

    again = runner.invoke(app, ["index", str(notes_dir), "--index", index])
    assert "0 new, 0 changed, 2 unchanged" in again.output
    assert "chunks embedded: 0" in again.output

    found = runner.invoke(app, ["search", "links", "--index", index, "--mode", "keyword", "--json"])
    assert found.exit_code == 0, found.output
    doc = json.loads(found.stdout)
    assert doc["mode"] == "keyword"
    assert {hit["id"] for hit in doc["hits"]} == {"howto.md", "private/diary.md"}

    hidden = runner.invoke(
        app,
        [
            "search",
            "links",
            "--index",
            index,
            "--mode",
            "keyword",
            "--exclude",
            "private/*",
            "--json",
        ],
    )
    assert [hit["id"] for hit in json.loads(hidden.stdout)["hits"]] == ["howto.md"]

    stats = runner.invoke(app, ["stats", "--index", index, "--json"])
    assert stats.exit_code == 0, stats.output
    coll = json.loads(stats.stdout)["collections"][0]
    assert (coll["name"], coll["records"], coll["pending"]) == ("notes", 2, 0)
    assert coll["model_id"] == "fake:32"


def test_errors_print_message_and_hint_without_traceback(tmp_path: Path, fake_model: None) -> None:
    index = str(tmp_path / "n.embed.db")
    missing = runner.invoke(app, ["search", "x", "--index", index])
    assert missing.exit_code == 3
    assert f"no index at {index}" in missing.output
    assert "semsearch index <folder>" in missing.output
    assert "Traceback" not in missing.output

    not_index = tmp_path / "plain.embed.db"
    not_index.write_text("hello")
    bad = runner.invoke(app, ["stats", "--index", str(not_index)])
    assert bad.exit_code != 0 and "not a semsearch index" in bad.output


def test_bad_mode_is_a_clear_error(notes_dir: Path, tmp_path: Path, fake_model: None) -> None:
    index = str(tmp_path / "n.embed.db")
    runner.invoke(app, ["index", str(notes_dir), "--index", index])
    result = runner.invoke(app, ["search", "x", "--index", index, "--mode", "fuzzy"])
    assert result.exit_code == 4
    assert "unknown search mode 'fuzzy'" in result.output


def test_model_mismatch_from_env_is_refused(notes_dir: Path, tmp_path: Path, monkeypatch) -> None:
    index = str(tmp_path / "n.embed.db")
    monkeypatch.setenv("SEMSEARCH_MODEL", "fake:32")
    runner.invoke(app, ["index", str(notes_dir), "--index", index])
    monkeypatch.setenv("SEMSEARCH_MODEL", "fake:16")
    result = runner.invoke(app, ["search", "links", "--index", index])
    assert result.exit_code == 5
    assert "fake:32" in result.output and "fake:16" in result.output


def _run(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "SEMSEARCH_INDEX": str(cwd / "absent.embed.db")}
    return subprocess.run(
        [sys.executable, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=120
    )


def test_missing_index_in_a_real_subprocess_loads_no_model(tmp_path: Path) -> None:
    probe = (
        "import sys\n"
        "from semsearch.cli.app import app\n"
        "try:\n"
        "    app(['search', 'anything'])\n"
        "except SystemExit as exc:\n"
        "    print('exit', exc.code, 'torch' in sys.modules, 'sentence_transformers' in sys.modules)\n"
    )
    proc = _run(["-c", probe], tmp_path)
    assert "no index at" in proc.stderr and "semsearch index <folder>" in proc.stderr
    assert proc.stdout.strip() == "exit 3 False False"
    assert not (tmp_path / "absent.embed.db").exists()


def test_help_and_stats_do_not_import_torch(tmp_path: Path) -> None:
    probe = (
        "import sys\n"
        "from semsearch.cli.app import app\n"
        "try:\n"
        "    app(['--help'])\n"
        "except SystemExit:\n"
        "    pass\n"
        "print('torch' in sys.modules, 'sentence_transformers' in sys.modules)\n"
    )
    proc = _run(["-c", probe], tmp_path)
    assert proc.stdout.strip().endswith("False False"), proc.stdout + proc.stderr


def test_stats_on_a_default_model_index_does_not_import_torch(tmp_path: Path) -> None:
    index = tmp_path / "default.embed.db"
    setup = (
        "import semsearch, sys\n"
        f"c = semsearch.connect({str(index)!r}).collection('notes')\n"
        "c.upsert([{'id': 'a.md', 'text': 'hello world'}], embed=False)\n"
        "print(c.model_id, 'torch' in sys.modules)\n"
    )
    made = _run(["-c", setup], tmp_path)
    assert made.stdout.strip() == "sentence-transformers/all-MiniLM-L6-v2?precision=int8 False", (
        made.stderr
    )
    probe = (
        "import sys\n"
        "from semsearch.cli.app import app\n"
        "try:\n"
        f"    app(['stats', '--index', {str(index)!r}])\n"
        "except SystemExit as exc:\n"
        "    assert not exc.code, exc.code\n"
        "print('torch' in sys.modules, 'sentence_transformers' in sys.modules)\n"
    )
    proc = _run(["-c", probe], tmp_path)
    assert "1 records" in proc.stdout and "1 pending" in proc.stdout, proc.stdout + proc.stderr
    assert proc.stdout.strip().endswith("False False")
