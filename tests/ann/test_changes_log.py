"""The ``changes`` log stays bounded under churn and is pruned safely for other readers
(issue 24, item 7), and ``compact`` (VACUUM) gives the space back.

Plumbing tests with the deterministic fake embedder and synthetic vectors through the real
SQLite store; file sizes are read from disk after each connection closed (WAL checkpointed).
"""

from __future__ import annotations

import logging
import sqlite3
from pathlib import Path

import numpy as np
import pytest

import semsearch
from semsearch.embedders.fake import FakeEmbedder
from semsearch.stores.sqlite import changes as sqlite_changes
from tests.ann import synthetic as syn

RECORDS = [{"id": f"r{i:04d}", "text": f"record {i} about topic {i % 17}"} for i in range(1000)]


def log_rows(path: Path) -> int:
    with sqlite3.connect(path) as conn:
        return int(conn.execute("SELECT COUNT(*) FROM changes").fetchone()[0])


def test_plumbing_churn_keeps_the_file_bounded_and_compact_shrinks_it_fake_embedder(
    db_path: Path,
) -> None:
    sizes = []
    for round_ in range(21):  # a fresh build, then 20 rounds of deleting and re-adding all
        with semsearch.connect(db_path) as db:
            coll = db.collection("c", embedder=FakeEmbedder(32))
            if round_:
                assert coll.delete([r["id"] for r in RECORDS]) == 1000
            coll.upsert(RECORDS)
            assert len(coll.search("record topic", limit=5)) == 5
        sizes.append(db_path.stat().st_size)
    # before pruning: 41,000 log rows and 1.99x the fresh file; each round logs 1,000 deletes
    # and 1,000 adds, and at most PRUNE_AFTER rows wait for the next prune
    assert log_rows(db_path) <= sqlite_changes.PRUNE_AFTER + 2000
    assert sizes[-1] <= 1.5 * sizes[0]
    with semsearch.connect(db_path) as db:
        before, after = db.compact()
        assert after < before and after <= sizes[0]
        hits = db.collection("c", create=False).search("record 5 about topic 5", limit=1)
        assert hits.ids == ["r0005"]
    assert log_rows(db_path) == 0


def test_plumbing_a_cache_behind_the_pruned_log_reloads_fake_embedder(db_path: Path) -> None:
    """Another connection rewrites chunks and prunes the log past what this cache read: the
    cache must reload (else the old vectors of the rewritten chunks would still be ranked)."""
    reader = semsearch.connect(db_path)
    coll = reader.collection("c", embedder=FakeEmbedder(32))
    coll.upsert(RECORDS[:50])
    old = coll.vectors(["r0000"])["r0000"][0]
    assert old is not None
    coll.store.vector_search("c", old, 5, None)  # the reader's cache now holds r0000's chunk
    with semsearch.connect(db_path) as writer:
        other = writer.collection("c", embedder=FakeEmbedder(32))
        other.upsert([{"id": f"r{i:04d}", "text": f"new words {i}"} for i in range(10)])
        writer.compact()  # prunes every row this reader has not read
    assert log_rows(db_path) == 0
    with sqlite3.connect(db_path) as conn:
        live = {r[0] for r in conn.execute("SELECT id FROM chunks WHERE status = 'embedded'")}
    hits = coll.store.vector_search("c", old, 50, None)
    reader.close()
    assert len(hits) == 50 and {h.chunk_id for h in hits} <= live


def test_plumbing_pruning_never_passes_the_sidecar(
    db_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Above the graph threshold the log is kept from the sidecar's position on, so a process
    opening the sidecar catches up from the log instead of rebuilding the graph."""
    n, dim = 3000, 32
    vectors = syn.clustered(n, dim, seed=0)
    with semsearch.connect(db_path) as db:
        coll = syn.open_collection(db, dim, threshold=1000)
        syn.write(coll, vectors, list(range(n)))
        coll.store.vector_search(coll.name, vectors[0], 10, None)  # writes the sidecar
        coll.delete([syn.name(i) for i in range(100)])  # logged after the sidecar
        db.compact()
    assert log_rows(db_path) == 100  # the deletes the sidecar has not seen
    with (
        semsearch.connect(db_path) as db,
        caplog.at_level(logging.INFO, logger="semsearch.stores.ann"),
    ):
        got = [h.record_id for h in db.collection("vecs").store.vector_search(
            "vecs", vectors[0], 10, None, True)]  # fmt: skip
    live = np.arange(n) >= 100
    assert got == syn.exact_top(vectors, live, vectors[0], 10)
    assert not any("built" in r.getMessage() or "rebuil" in r.getMessage() for r in caplog.records)


def test_plumbing_without_a_sidecar_the_log_is_pruned_only_below_the_graph_threshold(
    db_path: Path,
) -> None:
    """No sidecar yet (nothing searched): the horizon is the log's top while the collection
    has fewer embedded chunks than the graph threshold, and None (keep the log: a graph
    built in memory must catch up from it) from the threshold on, counted exactly."""
    from semsearch.ann.horizon import changes_horizon
    from semsearch.ann.rows import embedded_at_least

    dim, threshold = 16, 50
    vectors = syn.clustered(threshold, dim, seed=3)
    with semsearch.connect(db_path) as db:
        # no graph grown while writing: the case of a file nobody has searched yet
        coll = syn.open_collection(db, dim, threshold=threshold, build_while_writing=False)
        syn.write(coll, vectors[: threshold - 1], list(range(threshold - 1)))
    conn = sqlite3.connect(db_path)
    cid = int(conn.execute("SELECT id FROM collections WHERE name = 'vecs'").fetchone()[0])
    assert changes_horizon(conn, str(db_path), cid, 1234) == 1234  # 49 < 50
    assert embedded_at_least(conn, cid, threshold - 1)
    assert not embedded_at_least(conn, cid, threshold)
    conn.close()
    with semsearch.connect(db_path) as db:
        syn.write(syn.open_collection(db, dim), vectors[threshold - 1 :], [threshold - 1])
    conn = sqlite3.connect(db_path)
    assert embedded_at_least(conn, cid, threshold)
    assert changes_horizon(conn, str(db_path), cid, 1234) is None  # 50 >= 50, no sidecar
    conn.close()


def test_compact_on_a_store_without_it_says_why() -> None:
    from semsearch.errors import BackendUnavailable

    class NoCompact:
        location = "x"

        def close(self) -> None:
            pass

    db = semsearch.Database(NoCompact())  # type: ignore[arg-type]
    with pytest.raises(BackendUnavailable) as err:
        db.compact()
    assert err.value.hint and "VACUUM" in err.value.hint
