"""`semsearch eval` end to end on a 50-document slice of the real SciFact, run as a subprocess.

The fake embedder (SEMSEARCH_MODEL=fake:32) does the plumbing; what the numbers mean for the
real model is measured by tests/integration/test_eval.py and benchmarks/beir.py.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.integration.scifact_slice import write_scifact_slice


def run_cli(*args: str, cache: Path) -> subprocess.CompletedProcess[str]:
    env = os.environ | {
        "SEMSEARCH_MODEL": "fake:32",
        "SEMSEARCH_CACHE_DIR": str(cache),
        "HF_HUB_OFFLINE": "1",
    }
    return subprocess.run(
        [sys.executable, "-c", "from semsearch.cli.app import main; main()", "eval", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )


@pytest.fixture(scope="module")
def slice_dir(tmp_path_factory) -> Path:
    return write_scifact_slice(tmp_path_factory.mktemp("beir") / "scifact50")


def test_eval_json_fake_embedder(slice_dir: Path, tmp_path: Path) -> None:
    proc = run_cli(str(slice_dir), "--json", "--limit", "100", cache=tmp_path)
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert report["dataset"] == "scifact50" and report["split"] == "test"
    assert report["model_id"] == "fake:32" and report["documents"] == 50
    assert [m["mode"] for m in report["modes"]] == ["keyword", "semantic", "hybrid"]
    judged = {
        line.split("\t")[0]
        for line in (slice_dir / "qrels" / "test.tsv").read_text().splitlines()[1:]
    }
    for mode in report["modes"]:
        assert mode["queries"] == len(judged)
        for key in ("ndcg_at_10", "recall_at_100", "mrr_at_10"):
            assert 0.0 <= mode[key] <= 1.0
        assert 0 < mode["latency_p50_ms"] <= mode["latency_p95_ms"]
    keyword = report["modes"][0]
    assert keyword["ndcg_at_10"] > 0.5  # BM25 on 50 documents finds the judged abstracts
    index = Path(report["index"])
    assert index.parent == tmp_path and index.name.startswith("scifact50-")
    assert index.name.endswith("-fake-32.embed.db")


def test_eval_reuses_the_cached_index(slice_dir: Path, tmp_path: Path) -> None:
    first = json.loads(
        run_cli(str(slice_dir), "--json", "--modes", "keyword", cache=tmp_path).stdout
    )
    index = Path(first["index"])
    before = index.stat().st_mtime_ns, sorted(p.name for p in tmp_path.iterdir())
    second = run_cli(str(slice_dir), "--json", "--modes", "keyword", cache=tmp_path)
    assert json.loads(second.stdout)["modes"] == [
        {**m, "latency_p50_ms": m2["latency_p50_ms"], "latency_p95_ms": m2["latency_p95_ms"]}
        for m, m2 in zip(first["modes"], json.loads(second.stdout)["modes"], strict=True)
    ]
    assert sorted(p.name for p in tmp_path.iterdir()) == before[1]  # no second index file


def test_eval_table_output(slice_dir: Path, tmp_path: Path) -> None:
    proc = run_cli(str(slice_dir), "--modes", "keyword,hybrid", cache=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "nDCG@10" in proc.stdout and "hybrid" in proc.stdout and "semantic" not in proc.stdout


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--modes", "keyword,vector"], "unknown evaluation mode"),
        (["--limit", "0"], "limit must be in"),
        (["--split", "dev"], "dev.tsv not found"),
    ],
)
def test_eval_bad_input_exits_with_a_hint(slice_dir, tmp_path, args, message) -> None:
    proc = run_cli(str(slice_dir), *args, cache=tmp_path)
    assert proc.returncode == 4
    assert message in proc.stderr and "hint:" in proc.stderr
    assert not list(tmp_path.iterdir())  # nothing was indexed
