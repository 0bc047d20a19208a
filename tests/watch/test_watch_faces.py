"""The watcher behind each face, as real subprocesses (plumbing: SEMSEARCH_MODEL=fake:32):
`semsearch watch` (and `stats` reporting the health), `semsearch serve --watch` (the health in
GET /health) and `semsearch mcp --watch` (the health in the MCP `stats` tool). Each watches a
copy of foam-docs/dev (7 real notes) so the first sync is short."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

import semsearch
from semsearch.sources.vault import scan_folder
from tests.conftest import shared_path
from tests.e2e.mcp_client import McpProcess, server_env
from tests.watch.helpers import copy_vault, eventually, write
from tests.web.conftest import free_port

NOTE = "# Capybara log\n\nThe capybara sanctuary opens at dawn.\n"


def env() -> dict[str, str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("SEMSEARCH_")}
    return {**clean, "SEMSEARCH_MODEL": "fake:32", "HF_HUB_OFFLINE": "1"}


def cli(*args: str) -> list[str]:
    return [sys.executable, "-c", "from semsearch.cli.app import main; main()", *args]


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    return copy_vault(shared_path("vault", "foam-docs", "dev"), tmp_path / "vault")


def keyword_ids(db_file: Path, query: str) -> list[str]:
    if not db_file.exists():
        return []
    with semsearch.connect(db_file) as db:
        if "notes" not in db.collections():
            return []
        return db.collection("notes", create=False).search(query, mode="keyword").ids


def stats_json(db_file: Path) -> dict:  # type: ignore[type-arg]
    done = subprocess.run(
        cli("stats", "--index", str(db_file), "--json"),
        env=env(),
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    return json.loads(done.stdout)["collections"][0]


def test_watch_command_follows_a_new_note_and_stats_reports_health_fake_embedder(
    vault: Path, tmp_path: Path
) -> None:
    db_file = tmp_path / "cli.embed.db"
    proc = subprocess.Popen(
        cli("watch", str(vault), "--index", str(db_file), "--debounce", "50"),
        env=env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        # Ctrl-C as a terminal sends it: a test run started in the background (nohup, `&`)
        # inherits SIGINT ignored, and Python then never turns it into KeyboardInterrupt
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    try:
        eventually(
            lambda: (
                proc.poll() is None
                and db_file.exists()
                and (s := stats_json(db_file))["health"]["state"] == "ok"
                and s["records"] == 7
            ),
            "the first sync",
        )
        write(vault, "capybara.md", NOTE)
        eventually(lambda: keyword_ids(db_file, "capybara") == ["capybara.md"], "the new note")
        (vault / "capybara.md").unlink()
        eventually(lambda: keyword_ids(db_file, "capybara") == [], "the deleted note gone")
        stats = stats_json(db_file)
        assert (stats["health"]["state"], stats["records"]) == ("ok", 7)
    finally:
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err
    assert "synced: 7 new" in err and "stopped" in err


def test_serve_watch_reports_index_health_in_health_endpoint_fake_embedder(
    vault: Path, tmp_path: Path
) -> None:
    db_file, port = tmp_path / "serve.embed.db", free_port()
    proc = subprocess.Popen(
        cli("serve", "--index", str(db_file), "--port", str(port), "--watch", str(vault)),
        env=env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    url = f"http://127.0.0.1:{port}"

    def health() -> dict | None:  # type: ignore[type-arg]
        assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
        try:
            return httpx.get(f"{url}/health", timeout=5).json()
        except httpx.TransportError:
            return None

    try:
        eventually(
            lambda: (h := health()) and h["index_health"].get("notes", {}).get("state") == "ok",
            "the server's watcher to finish its first sync",
        )
        write(vault, "capybara.md", NOTE)
        found = eventually(
            lambda: httpx.post(
                f"{url}/collections/notes/search",
                json={"query": "capybara", "mode": "keyword"},
                timeout=10,
            ).json()["hits"],
            "the server to find the new note",
        )
        assert [h["id"] for h in found] == ["capybara.md"]
    finally:
        proc.terminate()
        proc.communicate(timeout=30)


def test_mcp_watch_reports_index_health_in_stats_tool_fake_embedder(
    vault: Path, tmp_path: Path
) -> None:
    db_file = tmp_path / "mcp.embed.db"
    server = McpProcess(
        ["--index", str(db_file), "--watch", str(vault)],
        tmp_path / "mcp-stderr.txt",
        env=server_env(SEMSEARCH_MODEL="fake:32"),
    )
    try:

        def notes() -> dict | None:  # type: ignore[type-arg]
            rows = server.ok("stats")["collections"]
            return next((r for r in rows if r["name"] == "notes"), None)

        expected = len(list(scan_folder(vault)))
        # a brand-new collection reads as ok before its first sync starts: wait for the records
        row = eventually(
            lambda: (
                (r := notes())
                and r["index_health"]["state"] == "ok"
                and r["records"] == expected
                and r
            ),
            "first sync",
        )
        assert row["records"] == expected == 7
        assert row["semantic"]["usable"] is True
    finally:
        server.close()


def test_watch_command_refuses_a_missing_folder_and_creates_no_index(tmp_path: Path) -> None:
    db_file = tmp_path / "none.embed.db"
    done = subprocess.run(
        cli("watch", str(tmp_path / "nope"), "--index", str(db_file)),
        env=env(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 1
    assert "is not a folder" in done.stderr and "hint:" in done.stderr
    assert not db_file.exists()


def test_watch_command_refuses_a_negative_debounce_and_creates_no_index(tmp_path: Path) -> None:
    """``--debounce -5`` was accepted (and ran with 1 ms); it is a usage error (exit 2)."""
    (tmp_path / "notes").mkdir()
    db_file = tmp_path / "none.embed.db"
    args = ("watch", str(tmp_path / "notes"), "--index", str(db_file), "--debounce", "-5")
    wide = {**env(), "COLUMNS": "200"}  # rich wraps the error box at the terminal width
    done = subprocess.run(cli(*args), env=wide, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2
    assert "--debounce" in done.stderr
    assert "greater than or equal to 0" in done.stderr
    assert not db_file.exists()


@pytest.mark.parametrize("debounce", [-5, -1, 2.5, True, "300"])
def test_folder_watcher_refuses_a_debounce_that_is_not_an_int_at_least_0_fake_embedder(
    tmp_path: Path, debounce: object
) -> None:
    from semsearch.embedders.fake import FakeEmbedder
    from semsearch.sources.vault import VAULT_SCHEMA
    from semsearch.sources.watch import FolderWatcher

    with semsearch.connect(tmp_path / "w.embed.db") as db:
        coll = db.collection("notes", schema=VAULT_SCHEMA, embedder=FakeEmbedder(dim=32))
        with pytest.raises(semsearch.InvalidQuery, match="debounce_ms must be an int >= 0") as e:
            FolderWatcher(coll, tmp_path, debounce_ms=debounce)  # type: ignore[arg-type]
        assert e.value.hint
        assert FolderWatcher(coll, tmp_path, debounce_ms=0).debounce_ms == 1  # the floor


# -- issue 46, item 21: --new-folder for serve --watch and mcp --watch -------------------------


def two_vaults(tmp_path: Path) -> tuple[Path, Path, Path]:
    """An index synced from vault ``a`` (two notes) and a vault ``b`` (one note)."""
    a, b = tmp_path / "a", tmp_path / "b"
    write(a, "apple.md", "# Apple\n\nan orchard note\n")
    write(a, "pear.md", "# Pear\n\nanother orchard note\n")
    write(b, "moved.md", "# Moved\n\nthe notes live here now\n")
    db_file = tmp_path / "n.embed.db"
    done = subprocess.run(cli("index", str(a), "--index", str(db_file)), env=env(),
                          capture_output=True, text=True, timeout=120)  # fmt: skip
    assert done.returncode == 0, done.stderr
    return db_file, a, b


def record_ids(db_file: Path) -> list[str]:
    with semsearch.connect(db_file) as db:
        return sorted(db.collection("notes", create=False).ids())


def test_serve_watch_refuses_another_folder_unless_new_folder_fake_embedder(
    tmp_path: Path,
) -> None:
    db_file, _, b = two_vaults(tmp_path)
    port = str(free_port())
    refused = subprocess.run(
        cli("serve", "--index", str(db_file), "--port", port, "--watch", str(b)),
        env=env(), capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert refused.returncode == 5 and "--new-folder" in refused.stderr, refused.stderr
    assert record_ids(db_file) == ["apple.md", "pear.md"]
    proc = subprocess.Popen(
        cli("serve", "--index", str(db_file), "--port", port, "--watch", str(b), "--new-folder"),
        env=env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip

    def synced() -> bool:
        assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
        try:
            health = httpx.get(f"http://127.0.0.1:{port}/health", timeout=5).json()
        except httpx.TransportError:
            return False
        return (
            health["index_health"].get("notes", {}).get("state") == "ok"
            and httpx.get(f"http://127.0.0.1:{port}/collections/notes/stats", timeout=5).json()[
                "records"
            ]
            == 1
        )

    try:
        eventually(synced, "the watcher to re-point the collection at the new folder")
    finally:
        proc.terminate()
        proc.communicate(timeout=30)
    assert record_ids(db_file) == ["moved.md"]


def test_mcp_watch_takes_new_folder_fake_embedder(tmp_path: Path) -> None:
    db_file, _, b = two_vaults(tmp_path)
    server = McpProcess(
        ["--index", str(db_file), "--watch", str(b), "--new-folder"],
        tmp_path / "mcp-stderr.txt",
        env=server_env(SEMSEARCH_MODEL="fake:32"),
    )
    try:

        def notes() -> dict | None:  # type: ignore[type-arg]
            rows = server.ok("stats")["collections"]
            row = next((r for r in rows if r["name"] == "notes"), None)
            # the record is written before the sync ends: wait for the sync, not the record
            done = row and row["records"] == 1 and row["index_health"]["state"] != "syncing"
            return row if done else None

        assert (
            eventually(notes, "the watcher to re-point the collection")["index_health"]["state"]
            == "ok"
        )
    finally:
        server.close()
    assert record_ids(db_file) == ["moved.md"]
