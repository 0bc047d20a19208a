"""No exception but a SemsearchError reaches a CLI user as a traceback (issue 19, item 7).

Before, ``semsearch search x --where '{"$and": [{}]}'`` printed a full Python traceback with
absolute paths and exited 1. Now empty sub-filters match every record, and any other exception
(a bug) prints its type and a hint, exits 70 (EX_SOFTWARE) and logs its traceback; the
traceback reaches stderr only with ``SEMSEARCH_DEBUG=1``. Real CLI (CliRunner), real SQLite
file, fake embedder (plumbing).
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

import semsearch
from semsearch.cli.app import app
from semsearch.cli.common import EXIT_INTERNAL, cli_errors

runner = CliRunner()


@pytest.fixture
def index(tmp_path: Path) -> str:
    path = str(tmp_path / "f.embed.db")
    with semsearch.connect(path) as db:
        coll = db.collection(
            "notes", embedder="fake:32", schema=semsearch.Schema.from_types({"i": "int"})
        )
        coll.upsert([{"id": "a.md", "text": "owls hunt", "i": 1}, {"id": "b.md", "text": "owls"}])
    return path


@pytest.mark.parametrize("mode", ["keyword", "semantic", "hybrid"])
@pytest.mark.parametrize(
    ("where", "expected"),
    [('{"$and": [{}]}', ["a.md", "b.md"]), ('{"$or": [{}, {"i": 1}]}', ["a.md", "b.md"]),
     ('{"$not": {}}', [])],
)  # fmt: skip
def test_empty_subfilters_search_from_the_cli(
    index: str, mode: str, where: str, expected: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SEMSEARCH_MODEL", "fake:32")
    args = ["search", "owls", "--index", index, "-m", mode, "--where", where, "--json"]
    done = runner.invoke(app, [*args, "--min-score", "-1"])
    assert done.exit_code == 0, done.output
    assert "Traceback" not in done.output
    assert sorted(h["id"] for h in json.loads(done.stdout)["hits"]) == expected


def _crashing_app() -> typer.Typer:
    crash = typer.Typer()

    @crash.command()
    @cli_errors
    def boom() -> None:
        raise RuntimeError("no such table at /home/someone/private/notes.embed.db")

    return crash


def test_an_unexpected_exception_exits_70_with_a_hint_and_no_path(
    caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("SEMSEARCH_DEBUG", raising=False)
    with caplog.at_level(logging.ERROR, logger="semsearch.cli"):
        done = runner.invoke(_crashing_app(), [])
    assert done.exit_code == EXIT_INTERNAL == 70
    assert "error: internal error (RuntimeError); the command did not complete" in done.stderr
    assert "hint: this is a bug in semsearch" in done.stderr and "SEMSEARCH_DEBUG=1" in done.stderr
    assert "Traceback" not in done.output and "/home/someone" not in done.output
    (record,) = [r for r in caplog.records if r.exc_info]
    assert "no such table" in str(record.exc_info[1])  # the traceback is logged


def test_semsearch_debug_prints_the_traceback(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SEMSEARCH_DEBUG", "1")
    done = runner.invoke(_crashing_app(), [])
    assert done.exit_code == 70
    assert "Traceback" in done.stderr and "RuntimeError: no such table" in done.stderr


def test_every_command_maps_its_errors() -> None:
    groups = [g.typer_instance for g in app.registered_groups if g.typer_instance is not None]
    commands = [c for t in (app, *groups) for c in t.registered_commands]
    assert len(commands) > 10
    for command in commands:
        assert command.callback is not None
        assert getattr(command.callback, "__wrapped__", None) is not None, command.name
