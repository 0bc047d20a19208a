"""A location's form is checked before its existence, on every face, and no server starts on a
location that can never be an index (issue 19, item 6).

Before, ``semsearch mcp --index notes.db`` (absent, wrong suffix) answered "no semsearch index
at notes.db" with the hint ``semsearch index <folder> --index notes.db``, a command that then
failed with "unsupported location". Real CLI (CliRunner), real files; fake embedder.
"""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from semsearch.cli.app import app
from semsearch.cli.common import EXIT_CODES
from semsearch.errors import BackendUnavailable
from semsearch.server.mcp.service import McpConfig

runner = CliRunner()
UNSUPPORTED = EXIT_CODES[BackendUnavailable]


@pytest.fixture
def busy_port() -> Iterator[str]:
    """A port something listens on: a server that got past the location check fails there."""
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        yield str(busy.getsockname()[1])


@pytest.fixture(autouse=True)
def in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("SEMSEARCH_MODEL", "fake:32")


def _refused(args: list[str]) -> str:
    done = runner.invoke(app, args)
    assert done.exit_code == UNSUPPORTED, done.output
    assert "unsupported location 'notes.db'" in done.stderr
    assert "notes.embed.db" in done.stderr  # the hint names a location that works
    assert "no semsearch index" not in done.stderr and "no index at" not in done.stderr
    return str(done.stderr)


@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_mcp_refuses_to_start_on_a_location_that_cannot_be_an_index(
    transport: str, busy_port: str
) -> None:
    _refused(["mcp", "--index", "notes.db", "--transport", transport, "--port", busy_port])


def test_serve_refuses_to_start_on_a_location_that_cannot_be_an_index(busy_port: str) -> None:
    for workers in ("1", "2"):
        _refused(["serve", "--index", "notes.db", "--port", busy_port, "--workers", workers])


@pytest.mark.parametrize(
    "args",
    [["search", "owls", "--index", "notes.db"], ["stats", "--index", "notes.db"],
     ["index", ".", "--index", "notes.db"], ["reindex", "--index", "notes.db"]],
)  # fmt: skip
def test_every_command_checks_the_form_before_the_existence(args: list[str]) -> None:
    _refused(args)


def test_an_absent_index_of_the_right_form_is_still_not_found() -> None:
    done = runner.invoke(app, ["search", "owls", "--index", "notes.embed.db"])
    assert done.exit_code == 3 and "no index at notes.embed.db" in done.stderr


def test_the_mcp_config_checks_the_form(tmp_path: Path) -> None:
    with pytest.raises(BackendUnavailable, match=r"unsupported location 'notes\.db'") as refused:
        McpConfig(location=str(tmp_path / "deep" / "notes.db"))
    assert str(tmp_path) not in str(refused.value)  # no absolute path
    assert McpConfig(location="notes.embed.db").is_file
