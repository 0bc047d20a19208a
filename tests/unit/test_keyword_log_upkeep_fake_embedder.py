"""The keyword sidecar's file beside a churned, copied or crashed index (issue 46, items 1-3).

- Churn: the record change log (``record_changes``) is pruned only as far as the ``.kw`` file's
  position, which moved only when a keyword search caught it up. ``compact`` and a write past
  the pruning threshold now bring the file up to the log themselves, then prune.
- A ``.kw`` file from a diverged copy of the index is refused (the file's identity is in its
  header) and rebuilt, instead of answering with the other copy's text.
- Temporary ``.kw`` files of a killed writer are removed, as the ANN cache's are.

Plumbing tests with the deterministic fake embedder through the real SQLite store; sizes are
read from disk after each connection closed.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

import semsearch
from semsearch.bm25.file import keyword_path, read_header
from semsearch.embedders.fake import FakeEmbedder
from semsearch.stores.sqlite import record_changes

RECORDS = [{"id": f"r{i:04d}", "text": f"record {i} about topic {i % 17}"} for i in range(1000)]
IDS = [str(r["id"]) for r in RECORDS]


def log_rows(path: Path) -> int:
    with sqlite3.connect(path) as conn:
        return int(conn.execute("SELECT count(*) FROM record_changes").fetchone()[0])


def log_top(path: Path) -> int:
    with sqlite3.connect(path) as conn:
        return int(conn.execute("SELECT seq FROM sqlite_sequence WHERE name = ?",
                                ("record_changes",)).fetchone()[0])  # fmt: skip


def build_fresh(db_path: Path) -> int:
    """1,000 records, and their ``.kw`` file written (as ``semsearch index`` leaves it).
    Returns the file's size."""
    with semsearch.connect(db_path) as db:
        db.collection("c", embedder=FakeEmbedder(32)).upsert(RECORDS)
        db.store.refresh_keyword_index("c")  # type: ignore[attr-defined]
    assert os.path.exists(keyword_path(str(db_path), 1))
    return db_path.stat().st_size


def churn(db_path: Path, rounds: int) -> None:
    """Delete every record and add it again, ``rounds`` times; only semantic searches."""
    for _ in range(rounds):
        with semsearch.connect(db_path) as db:
            coll = db.collection("c", embedder=FakeEmbedder(32))
            assert coll.delete(IDS) == 1000
            coll.upsert(RECORDS)
            assert len(coll.search("record topic", mode="semantic", limit=5)) == 5


def test_compact_catches_the_keyword_file_up_then_prunes_fake_embedder(
    db_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fresh = build_fresh(db_path)
    monkeypatch.setattr(record_changes, "PRUNE_AFTER", 10**9)  # only compact prunes here
    churn(db_path, 20)
    assert log_rows(db_path) == 41_000  # the first 1,000 adds; 1,000 deletes and adds a round
    with semsearch.connect(db_path) as db:
        db.compact()
    assert log_rows(db_path) == 0
    assert read_header(keyword_path(str(db_path), 1))["seq"] == log_top(db_path)
    assert db_path.stat().st_size <= 1.2 * fresh
    with semsearch.connect(db_path) as db:  # the file answers, caught up to every change
        hits = db.collection("c", create=False).search("record 5 about", mode="keyword")
        (sidecar,) = db.store._keywords.sidecars.values()  # type: ignore[attr-defined]
        assert sidecar._snapshot is not None and sidecar._snapshot.seq == log_top(db_path)
        assert hits.ids[0] == "r0005"


def test_a_write_past_the_threshold_catches_the_keyword_file_up_fake_embedder(
    db_path: Path,
) -> None:
    fresh = build_fresh(db_path)
    churn(db_path, 20)
    # each prune goes as far as the file, which a write past the threshold moved on
    assert log_rows(db_path) <= record_changes.PRUNE_AFTER + 2000
    assert read_header(keyword_path(str(db_path), 1))["seq"] > log_top(db_path) - 6000
    assert db_path.stat().st_size <= 1.5 * fresh


def write_kw(db: semsearch.Database) -> None:
    """Write the collection's ``.kw`` file at the log's current position."""
    os.unlink(keyword_path(str(db.location), 1))
    db.store.refresh_keyword_index("c")  # type: ignore[attr-defined]


def test_a_keyword_file_of_a_diverged_copy_is_rebuilt_fake_embedder(tmp_path: Path) -> None:
    a, b = tmp_path / "a.embed.db", tmp_path / "b.embed.db"
    build_fresh(a)
    shutil.copy(a, b)  # the connection closed: no WAL left to copy
    with semsearch.connect(a) as db:  # copy a: r0001 says zebra
        db.collection("c", embedder=FakeEmbedder(32)).upsert([{"id": "r0001", "text": "zebra"}])
        write_kw(db)
    with semsearch.connect(b) as db:  # copy b: r0002 says yak (the same log positions)
        db.collection("c", embedder=FakeEmbedder(32)).upsert([{"id": "r0002", "text": "yak"}])
    assert read_header(keyword_path(str(a), 1))["seq"] == log_top(b)
    shutil.copy(keyword_path(str(a), 1), keyword_path(str(b), 1))  # a's file beside b
    with semsearch.connect(b) as db:
        coll = db.collection("c", create=False)
        assert coll.search("zebra", mode="keyword").ids == []  # b's r0001 lacks the word
        (sidecar,) = db.store._keywords.sidecars.values()  # type: ignore[attr-defined]
        sidecar.wait(60)  # the file was refused: rebuilt from b
        assert coll.search("zebra", mode="keyword").ids == []
        assert coll.search("yak", mode="keyword").ids == ["r0002"]
        assert sidecar._snapshot is not None  # the rebuilt arrays answered
    assert read_header(keyword_path(str(b), 1))["seq"] == log_top(b)


def dead_pid() -> int:
    done = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)  # fmt: skip
    return int(done.stdout)  # that process has exited


def leave_temps(db_path: Path) -> tuple[list[Path], Path]:
    """Temporary ``.kw`` files of a killed writer, and one of a live process."""
    kw, pid = keyword_path(str(db_path), 1), dead_pid()
    left = [Path(f"{kw}.tmp-{pid}"), Path(f"{kw}.tmp-{pid}-0123abcd")]
    running = Path(f"{kw}.tmp-{os.getppid()}-89abcdef")  # a write in progress
    for p in [*left, running]:
        p.write_bytes(b"\0" * 4096)
    return left, running


def test_a_keyword_search_removes_temp_files_of_a_killed_writer_fake_embedder(
    db_path: Path,
) -> None:
    build_fresh(db_path)
    left, running = leave_temps(db_path)
    with semsearch.connect(db_path) as db:
        assert db.collection("c", create=False).search("topic 3", mode="keyword").ids
    assert [p for p in left if p.exists()] == []
    assert running.exists()


def test_compact_removes_temp_files_of_a_killed_writer_fake_embedder(db_path: Path) -> None:
    build_fresh(db_path)
    left, running = leave_temps(db_path)
    with semsearch.connect(db_path) as db:
        db.compact()
    assert [p for p in left if p.exists()] == []
    assert running.exists()
