"""A keys file others may write is refused, as ssh refuses a loose key file (issue 19, item 2).

Before, a group- or world-writable ``--keys-file`` was accepted without a word, so any local
user could add a ``key:admin`` line. Real files with real modes; the real CLI (CliRunner).
"""

from __future__ import annotations

import os
import socket
from pathlib import Path

import pytest
from typer.testing import CliRunner

from semsearch.cli.app import app
from semsearch.errors import SemsearchError
from semsearch.server.http.auth import KeyRing, Role

pytestmark = pytest.mark.skipif(os.name == "nt", reason="POSIX mode bits")


def keys_file(tmp_path: Path, mode: int) -> Path:
    path = tmp_path / "api-keys"
    path.write_text("owner-admin-key-1:admin\n")
    path.chmod(mode)
    return path


@pytest.mark.parametrize(("mode", "who"), [(0o620, "its group"), (0o602, "everyone"),
                                           (0o666, "everyone"), (0o660, "its group")])  # fmt: skip
def test_a_group_or_world_writable_keys_file_is_refused(
    tmp_path: Path, mode: int, who: str
) -> None:
    path = keys_file(tmp_path, mode)
    with pytest.raises(SemsearchError) as refused:
        KeyRing.load(None, path)
    assert f"can be changed by {who} (mode {mode:o})" in refused.value.message
    assert refused.value.hint == "make it private to its owner: chmod 600 api-keys"
    assert "owner-admin-key-1" not in str(refused.value)


@pytest.mark.parametrize("mode", [0o600, 0o400, 0o644, 0o640])
def test_a_keys_file_only_its_owner_writes_is_loaded(tmp_path: Path, mode: int) -> None:
    assert KeyRing.load(None, keys_file(tmp_path, mode)).keys == {"owner-admin-key-1": Role.admin}


def test_serve_refuses_a_loose_keys_file_before_listening(tmp_path: Path) -> None:
    path = keys_file(tmp_path, 0o666)
    with socket.socket() as busy:  # were the file accepted, serve would fail on the port instead
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = str(busy.getsockname()[1])
        done = CliRunner().invoke(
            app, ["serve", "--index", str(tmp_path / "x.embed.db"), "--keys-file", str(path),
                  "--port", port],
        )  # fmt: skip
    assert done.exit_code == 1, done.output
    assert "can be changed by everyone" in done.stderr and "chmod 600" in done.stderr
    assert not (tmp_path / "x.embed.db").exists()
