"""Breaker: a graph threshold above SQLite's INTEGER range (accepted by AnnOptions, which only
checks ``>= 1``) makes the bounded prune check (``embedded_at_least``'s ``LIMIT ?``) raise
OverflowError, so every embedding write past PRUNE_AFTER log rows fails. The full COUNT it
replaced compared in Python and returned the log's top (fewer embedded chunks than the
threshold: prune)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import semsearch
from semsearch.ann.policy import configure_ann
from semsearch.embedders.fake import FakeEmbedder
from semsearch.stores.sqlite.changes import PRUNE_AFTER

HUGE = 2**63  # one past SQLite's largest INTEGER; e.g. "never build a graph"


def test_changes_horizon_with_a_threshold_past_sqlite_integer_range_prunes(tmp_path: Path) -> None:
    from semsearch.ann.horizon import changes_horizon

    path = tmp_path / "h.embed.db"
    with semsearch.connect(path) as db:
        coll = db.collection("c", embedder=FakeEmbedder(8))
        configure_ann(coll, threshold=HUGE)
        coll.upsert([{"id": "a", "text": "alpha"}])
    conn = sqlite3.connect(path)
    cid = int(conn.execute("SELECT id FROM collections WHERE name = 'c'").fetchone()[0])
    assert changes_horizon(conn, str(path), cid, 1234) == 1234  # 1 < 2**63: prune (was: raise)
    conn.close()


def test_filling_a_collection_with_a_huge_threshold_keeps_working(tmp_path: Path) -> None:
    with semsearch.connect(tmp_path / "h.embed.db") as db:
        coll = db.collection("c", embedder=FakeEmbedder(8))
        configure_ann(coll, threshold=HUGE)
        batches = PRUNE_AFTER // 256 + 2
        for b in range(batches):  # raised OverflowError at the batch that crossed PRUNE_AFTER
            coll.upsert([{"id": f"{b}-{i}", "text": f"text {b} {i}"} for i in range(256)])
        stats = coll.stats()
        assert (stats.embedded, stats.pending) == (256 * batches, 0)
        db.compact()
