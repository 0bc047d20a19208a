"""A watcher process killed with SIGKILL mid-sync leaves a consistent index; on restart the
health says what happened and the first sync repairs it. Real processes, real files, a real
SQLite file inspected with sqlite3; the fake embedder (plumbing)."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

import semsearch
from semsearch.errors import IndexUnhealthy
from semsearch.health import read_health
from semsearch.sources.vault import VAULT_SCHEMA, scan_folder
from tests.conftest import shared_path
from tests.watch.helpers import QuickFake, consistency_problems, copy_vault, eventually

CHILD = Path(__file__).with_name("watch_child.py")


def peek(db_file: Path) -> dict[str, object] | None:
    """Health state and counts read straight from the file (read-only), or None before it exists."""
    if not db_file.exists():
        return None
    try:
        conn = sqlite3.connect(f"file:{db_file}?mode=ro", uri=True, timeout=5)
        try:
            row = conn.execute("SELECT options FROM collections WHERE name = 'notes'").fetchone()
            counts = conn.execute(
                "SELECT (SELECT COUNT(*) FROM records), "
                "SUM(status = 'embedded'), SUM(status != 'embedded') FROM chunks"
            ).fetchone()
        finally:
            conn.close()
    except sqlite3.OperationalError:  # not created yet
        return None
    if row is None:
        return None
    health = json.loads(row[0]).get("health") or {}
    return {
        "state": health.get("state"),
        "records": counts[0],
        "embedded": counts[1] or 0,
        "unembedded": counts[2] or 0,
    }


def start(root: Path, db_file: Path, delay: float) -> subprocess.Popen[str]:
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    return subprocess.Popen(
        [sys.executable, str(CHILD), str(root), str(db_file), str(delay)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=env,
    )


@pytest.fixture
def children() -> Iterator[list[subprocess.Popen[str]]]:
    procs: list[subprocess.Popen[str]] = []
    yield procs
    for proc in procs:  # only the processes this test started
        if proc.poll() is None:
            proc.kill()
        proc.wait(30)


def test_sigkill_mid_sync_then_restart_repairs_fake_embedder(
    tmp_path: Path, children: list[subprocess.Popen[str]]
) -> None:
    root = copy_vault(shared_path("vault", "foam-docs"), tmp_path / "vault")
    db_file = tmp_path / "crash.embed.db"
    total = len(list(scan_folder(root)))

    first = start(root, db_file, delay=0.05)
    children.append(first)
    eventually(
        lambda: (
            (p := peek(db_file))
            and p["state"] == "syncing"
            and p["embedded"] > 0  # type: ignore[operator]
            and p
        ),
        "the first watcher to be mid-sync",
        deadline_s=90,
    )
    first.send_signal(signal.SIGKILL)
    first.wait(30)
    after_kill = peek(db_file)
    assert after_kill is not None and after_kill["state"] == "syncing"
    records, unembedded = int(after_kill["records"]), int(after_kill["unembedded"])  # type: ignore[call-overload]
    assert records < total or unembedded > 0, f"the kill landed after the sync: {after_kill}"

    with semsearch.connect(db_file) as db:
        coll = db.collection("notes", create=False, embedder=QuickFake())
        assert consistency_problems(db_file, coll) == []
        health = read_health(coll.store, "notes")
        assert health.state == "quarantined" and health.interrupted
        assert "interrupted" in (health.reason or "")
        with pytest.raises(IndexUnhealthy):
            coll.search("wikilinks", mode="semantic")
        assert coll.search("wikilinks", mode="keyword").degraded

    second = start(root, db_file, delay=0.0)
    children.append(second)
    eventually(
        lambda: (
            (p := peek(db_file))
            and p["state"] == "ok"
            and p["records"] == total
            and p["unembedded"] == 0
        ),
        "the restarted watcher to repair the index",
        deadline_s=90,
    )
    second.send_signal(signal.SIGTERM)
    output, _ = second.communicate(timeout=30)
    assert "the previous sync was interrupted" in output

    with semsearch.connect(db_file) as db:
        coll = db.collection("notes", create=False, embedder=QuickFake(), schema=VAULT_SCHEMA)
        assert consistency_problems(db_file, coll) == []
        assert coll.ids() == sorted(scan_folder(root))
        assert read_health(coll.store, "notes").state == "ok"
        assert coll.search("wikilinks between notes", mode="semantic").hits
