"""A command that needs an optional extra says which one to install, not "a bug in semsearch".

Before, ``semsearch serve`` without uvicorn (or ``semsearch search --index postgresql://...``
without psycopg) printed ``internal error (ModuleNotFoundError) ... this is a bug in semsearch``
and exited 70. The missing package is hidden with ``sys.modules[name] = None``, which makes its
import raise ModuleNotFoundError as on a machine without it. Real CLI (CliRunner).
"""

from __future__ import annotations

import sys

import pytest
from typer.testing import CliRunner

from semsearch.cli.app import app
from semsearch.cli.common import EXIT_CODES, missing_extra
from semsearch.errors import BackendUnavailable

runner = CliRunner()


def test_serve_without_uvicorn_names_the_server_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "uvicorn", None)
    done = runner.invoke(app, ["serve", "--index", "notes.embed.db"])
    assert done.exit_code == EXIT_CODES[BackendUnavailable] == 6
    assert "optional package 'uvicorn'" in done.output
    assert "pip install 'semsearch[server]'" in done.output
    assert "bug in semsearch" not in done.output


@pytest.mark.parametrize(
    ("name", "extra"),
    [("psycopg.errors", "postgres"), ("pymilvus", "milvus"), ("mcp.server", "server"),
     ("pypdf", "pdf"), ("docx", "formats")],
)  # fmt: skip
def test_each_optional_package_maps_to_its_extra(name: str, extra: str) -> None:
    error = missing_extra(ModuleNotFoundError(f"No module named {name!r}", name=name))
    assert isinstance(error, BackendUnavailable)
    assert error.hint == f"pip install 'semsearch[{extra}]'"
    assert repr(name.partition(".")[0]) in error.message


@pytest.mark.parametrize(
    "exc",
    [ModuleNotFoundError("No module named 'numpy'", name="numpy"), ModuleNotFoundError("x"),
     ImportError("cannot import name 'x'", name="uvicorn"), RuntimeError("boom")],
)  # fmt: skip
def test_other_errors_stay_internal(exc: Exception) -> None:
    """A required package, an unnamed module, or any other exception is still a bug."""
    assert missing_extra(exc) is None
