"""`semsearch eval --location` (issue 44, item 6): the evaluation runs on PostgreSQL, reusing
the vectors of the cached SQLite index, and scores what SQLite scores (fake embedder: the
plumbing; 50 SciFact documents)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import semsearch
from semsearch.embedders.fake import FakeEmbedder
from tests.cli.test_eval_cli import run_cli
from tests.integration.scifact_slice import write_scifact_slice


@pytest.fixture(scope="module")
def slice_dir(tmp_path_factory) -> Path:
    return write_scifact_slice(tmp_path_factory.mktemp("beir") / "scifact50")


def _modes(report: dict) -> dict[str, dict]:
    return {m["mode"]: m for m in report["modes"]}


def test_eval_location_scores_postgres_as_sqlite(slice_dir, tmp_path, pg_location) -> None:
    sqlite = run_cli(str(slice_dir), "--json", cache=tmp_path)
    assert sqlite.returncode == 0, sqlite.stderr
    pg = run_cli(str(slice_dir), "--json", "--location", pg_location, cache=tmp_path)
    assert pg.returncode == 0, pg.stderr
    a, b = json.loads(sqlite.stdout), json.loads(pg.stdout)
    assert b["index"].startswith("postgresql://") and "beir" not in b["index"]
    for mode in ("keyword", "semantic", "hybrid"):
        for key in ("ndcg_at_10", "recall_at_100", "mrr_at_10"):
            assert _modes(b)[mode][key] == pytest.approx(_modes(a)[mode][key], abs=1e-9), mode
    with semsearch.connect(pg_location) as db:
        coll = db.collection("beir", embedder=FakeEmbedder(32))
        assert coll.count() == 50 and coll.stats().pending == 0


def test_eval_location_keyword_only_embeds_nothing(slice_dir, tmp_path, pg_location) -> None:
    proc = run_cli(str(slice_dir), "--json", "--modes", "keyword", "--location", pg_location,
                   cache=tmp_path)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert not list(tmp_path.glob("*.embed.db"))  # no SQLite cache was built
    with semsearch.connect(pg_location) as db:
        assert db.collection("beir", embedder=FakeEmbedder(32)).stats().embedded == 0


def test_eval_location_refuses_an_unsupported_location(slice_dir, tmp_path) -> None:
    proc = run_cli(str(slice_dir), "--location", "ftp://nowhere/x", cache=tmp_path)
    assert proc.returncode != 0 and "location" in (proc.stderr + proc.stdout).lower()
