"""The sentence-window read finds chunks by id whatever the planner statistics say.

A 100k-record file (570k chunks) had sampled ANALYZE statistics (``PRAGMA analysis_limit``) that
made SQLite walk the ``chunks_by_hash`` index over the whole collection for the hybrid leg's
window read of 400 chunks: 85 ms instead of about 2. The statistics below are that file's; the
plan must still look each chunk up by its primary key. Plumbing: the fake embedder.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import semsearch
from semsearch.embedders.fake import FakeEmbedder
from semsearch.stores.sqlite.windows import read_windows

#: sqlite_stat1 rows of the 100k benchmark file (benchmarks/keyword_engines.py).
MISLEADING = [
    ("chunks", "chunks_by_status", "429429 1001 1001"),
    ("chunks", "chunks_by_hash", "382200 1001 13"),
    ("chunks", "chunks_by_record", "462774 6 1"),
    ("chunk_windows", "sqlite_autoindex_chunk_windows_1", "14100 1001 1"),
]


def _text(i: int) -> str:
    return " ".join(f"Sentence {j} of note {i} says something about topic {j}." for j in range(4))


def test_fake_embedder_window_read_looks_chunks_up_by_id_under_misleading_statistics(
    tmp_path: Path,
) -> None:
    path = tmp_path / "plan.embed.db"
    with semsearch.connect(path) as db:
        coll = db.collection("notes", embedder=FakeEmbedder(16))
        coll.upsert([{"id": f"n{i}", "text": _text(i)} for i in range(40)])
    with sqlite3.connect(path) as conn:
        conn.execute("ANALYZE")
        conn.execute("DELETE FROM sqlite_stat1 WHERE tbl IN ('chunks', 'chunk_windows')")
        conn.executemany("INSERT INTO sqlite_stat1 VALUES (?, ?, ?)", MISLEADING)
    with sqlite3.connect(path) as conn:  # a new connection loads the statistics
        ids = [r[0] for r in conn.execute("SELECT id FROM chunks ORDER BY id")]
        plans: list[str] = []

        def rows(sql: str, params) -> list:
            if "chunk_windows w" in sql:
                plans.extend(r[3] for r in conn.execute(f"EXPLAIN QUERY PLAN {sql}", params))
            return conn.execute(sql, params).fetchall()

        found = read_windows(rows, "notes", ids * 10)  # an IN list of 400, as the hybrid leg's
    assert found, "the notes' chunks have sentence windows"
    assert any(p.startswith("SEARCH k USING INTEGER PRIMARY KEY") for p in plans), plans
    assert not any("chunks_by_hash" in p for p in plans), plans
