"""`semsearch compact`: prunes the change log and VACUUMs the index file (issue 24, item 7).

Plumbing test with SEMSEARCH_MODEL=fake:32 (the deterministic fake embedder)."""

from __future__ import annotations

import re
import sqlite3
from pathlib import Path

import pytest
from typer.testing import CliRunner

import semsearch
from semsearch.cli.app import app

runner = CliRunner()


def test_compact_shrinks_a_churned_index_fake_embedder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SEMSEARCH_MODEL", "fake:32")
    index = tmp_path / "c.embed.db"
    records = [{"id": f"r{i}", "text": f"record {i} about churn"} for i in range(300)]
    with semsearch.connect(index) as db:
        coll = db.collection("notes", embedder="fake:32")
        for _ in range(5):  # 3,000 log rows: below the automatic prune
            coll.upsert(records)
            coll.delete([r["id"] for r in records])
        coll.upsert(records)
    result = runner.invoke(app, ["compact", "--index", str(index)])
    assert result.exit_code == 0, result.output
    before, after = map(float, re.findall(r"([\d.]+) MB", result.output))
    assert after < before
    with sqlite3.connect(index) as conn:
        assert conn.execute("SELECT COUNT(*) FROM changes").fetchone() == (0,)
    found = runner.invoke(app, ["search", "record 7 about churn", "--index", str(index)])
    assert found.exit_code == 0 and "r7" in found.output


def test_compact_without_an_index_exits_with_its_hint(tmp_path: Path) -> None:
    result = runner.invoke(app, ["compact", "--index", str(tmp_path / "none.embed.db")])
    assert result.exit_code != 0 and "semsearch index" in result.output
