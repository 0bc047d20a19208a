"""Long commands print plain progress lines on stderr when it is not a terminal; stdout stays
clean (``--json`` parses). The line format is checked with a fake clock; the commands run as
real subprocesses with stderr in a file, the fake embedder (``fake:32``) and
``SEMSEARCH_PROGRESS_SECONDS=0`` (a line at every step), since speed does not matter here.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from semsearch.cli.progress import ProgressLine, progress_line
from tests.e2e.mcp_client import server_env

REPO = Path(__file__).resolve().parents[2]


def test_progress_line_by_hand() -> None:
    # 50 of 200 in 10 s: 5.0/s, 150 left -> 30 s
    assert progress_line("importing records", "records", 50, 200, 10.0) == (
        "importing records: 50/200 records (25%), 5.0 records/s, ETA 0:00:30"
    )
    # 7,200 of 10,800 in an hour: 2.0/s, 3,600 left -> 1800 s
    assert progress_line("x", "chunks", 7200, 10800, 3600.0).endswith(
        "(66%), 2.0 chunks/s, ETA 0:30:00"
    )
    assert progress_line("embedding chunks", "chunks", 30, None, 4.0) == (
        "embedding chunks: 30 chunks, 7.5 chunks/s"
    )


def test_plain_lines_every_interval_and_a_last_one(capsys: pytest.CaptureFixture[str]) -> None:
    now = [100.0]
    with ProgressLine(
        "indexing files", "files", interval=5, clock=lambda: now[0], terminal=False
    ) as bar:
        for done, at in [(10, 102.0), (20, 105.0), (30, 107.0), (40, 110.5)]:
            now[0] = at
            bar.update(done, 100)
        now[0] = 111.0
        bar.update(100, 100)
    lines = capsys.readouterr().err.splitlines()
    assert lines == [
        "indexing files: 20/100 files (20%), 4.0 files/s, ETA 0:00:20",  # t=5: 20 in 5 s
        "indexing files: 40/100 files (40%), 3.8 files/s, ETA 0:00:16",  # t=10.5: 60 / (40/10.5)
        "indexing files: 100/100 files (100%), 9.1 files/s, ETA 0:00:00",  # the last line
    ]


def test_quick_work_prints_one_last_line(capsys: pytest.CaptureFixture[str]) -> None:
    # shorter than the interval: no interval line, but the run still ends with its count
    now = [0.0]
    with ProgressLine("x", "files", interval=5, clock=lambda: now[0], terminal=False) as bar:
        now[0] = 1.0
        bar.update(3, 3)
        now[0] = 2.0
    assert capsys.readouterr().err.splitlines() == ["x: 3/3 files (100%), 1.5 files/s, ETA 0:00:00"]


def test_final_count_is_not_printed_twice(capsys: pytest.CaptureFixture[str]) -> None:
    # the one update comes after the interval (a slow first batch) and is already the end
    now = [0.0]
    with ProgressLine("x", "files", interval=5, clock=lambda: now[0], terminal=False) as bar:
        now[0] = 11.0
        bar.update(22, 22)
    assert capsys.readouterr().err.splitlines() == [
        "x: 22/22 files (100%), 2.0 files/s, ETA 0:00:00"
    ]


def test_interval_zero_prints_every_update_once(capsys: pytest.CaptureFixture[str]) -> None:
    now = [0.0]
    with ProgressLine("x", "files", interval=0, clock=lambda: now[0], terminal=False) as bar:
        for done in (1, 2):
            now[0] = float(done)
            bar.update(done, 2)
    assert capsys.readouterr().err.splitlines() == [
        "x: 1/2 files (50%), 1.0 files/s, ETA 0:00:01",
        "x: 2/2 files (100%), 1.0 files/s, ETA 0:00:00",
    ]


def run(args: list[str], tmp_path: Path, timeout: float = 120) -> tuple[str, str]:
    """The CLI as a subprocess with the fake embedder and progress lines as often as they come:
    (stdout, stderr); the exit code must be 0."""
    err = tmp_path / "stderr.log"
    with err.open("w") as fh:
        done = subprocess.run(
            [sys.executable, "-m", "semsearch.cli.app", *args],
            cwd=REPO,
            env=server_env(SEMSEARCH_MODEL="fake:32", SEMSEARCH_PROGRESS_SECONDS="0",
                           PYTHONPATH=str(REPO)),
            stdout=subprocess.PIPE, stderr=fh, text=True, timeout=timeout,
        )  # fmt: skip
    assert done.returncode == 0, err.read_text()[-3000:]
    return done.stdout, err.read_text()


def test_index_and_import_log_progress_to_stderr(tmp_path: Path) -> None:
    notes = tmp_path / "notes"
    notes.mkdir()
    for i in range(3):
        (notes / f"n{i}.md").write_text(f"# Note {i}\n\nText {i}.\n")
    out, err = run(["index", str(notes), "--index", str(tmp_path / "a.embed.db")], tmp_path)
    finals = re.findall(r"^indexing files: 3/3 files \(100%\), [\d.]+ files/s, ETA ", err, re.M)
    assert len(finals) == 1, err  # one update (one batch) and no repeated last line
    assert out.startswith("files: 3 new") and "indexing" not in out
    data = tmp_path / "r.jsonl"
    data.write_text("".join(json.dumps({"id": str(i), "text": f"t {i}"}) + "\n" for i in range(5)))
    args = ["import", str(data), "-c", "recs", "--index", str(tmp_path / "b.embed.db")]
    out, err = run(args, tmp_path)
    assert len(re.findall(r"^importing records: 5/5 records \(100%\)", err, re.M)) == 1, err
    assert out.startswith("records: 5 new")


def test_eval_json_stdout_stays_one_document(tmp_path: Path) -> None:
    beir = tmp_path / "beir"
    (beir / "qrels").mkdir(parents=True)
    docs = [{"_id": f"d{i}", "title": "", "text": f"document number {i}"} for i in range(4)]
    (beir / "corpus.jsonl").write_text("".join(json.dumps(d) + "\n" for d in docs))
    (beir / "queries.jsonl").write_text(json.dumps({"_id": "q1", "text": "number 2"}) + "\n")
    (beir / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td2\t1\n")
    args = ["eval", str(beir), "--json", "--modes", "semantic", "--cache-dir", str(tmp_path / "c")]
    out, err = run(args, tmp_path)
    assert json.loads(out)["documents"] == 4  # stdout holds the JSON document alone
    assert re.search(r"^embedding chunks: 4 chunks, [\d.]+ chunks/s$", err, re.M)


def test_reindex_logs_progress_against_the_pending_total(tmp_path: Path) -> None:
    import semsearch

    index = tmp_path / "p.embed.db"
    with semsearch.connect(index) as db:
        coll = db.collection("notes", embedder="fake:32")
        coll.upsert([{"id": str(i), "text": f"pending text {i}"} for i in range(6)], embed=False)
    out, err = run(["reindex", "--index", str(index)], tmp_path)
    assert re.search(r"^embedding chunks: 6/6 chunks \(100%\)", err, re.M)
    assert out.strip() == "collection 'notes': 6 chunks embedded"
