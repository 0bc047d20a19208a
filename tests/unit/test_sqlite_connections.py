"""The SQLite store reads through its own connection: searches never queue behind a write.

Real SQLite files in WAL mode; the fake embedder only does the plumbing.
"""

from __future__ import annotations

import threading

import semsearch
from semsearch.stores.sqlite.connection import ANALYZE_AFTER
from semsearch.stores.sqlite.store import SQLiteStore


def test_fake_embedder_search_reads_the_last_commit_while_a_write_is_open(db, fake_embedder):
    coll = db.collection("c", embedder=fake_embedder)
    coll.upsert([{"id": "a", "text": "red apple"}])
    store = coll.store
    assert isinstance(store, SQLiteStore)
    inside, release = threading.Event(), threading.Event()

    def long_write() -> None:
        with store._write("c") as conn:  # a write transaction held open, like a big upsert
            conn.execute("DELETE FROM records")
            inside.set()
            release.wait(30)

    writer = threading.Thread(target=long_write)
    writer.start()
    try:
        assert inside.wait(30)
        found: list[list[str]] = []
        reader = threading.Thread(
            target=lambda: found.append(coll.search("apple", mode="keyword").ids)
        )
        reader.start()
        reader.join(20)  # with one shared connection the search waited for the write to end
        assert not reader.is_alive(), "the search queued behind the open write transaction"
        assert found == [["a"]]  # the uncommitted delete is not visible
    finally:
        release.set()
        writer.join(30)
    assert coll.count() == 0  # committed now: the next read sees it


def test_fake_embedder_reader_uses_planner_statistics_after_analyze(tmp_path, fake_embedder):
    schema = semsearch.Schema.from_types({"owner": "str", "n": "int"})
    with semsearch.connect(tmp_path / "plan.embed.db") as db:
        coll = db.collection("plan", schema=schema, embedder=fake_embedder)
        coll.upsert([{"id": "first", "text": "t", "owner": "o0", "n": 0}])  # opens the reader
        rows = [{"id": f"x{i}", "text": "t", "owner": f"o{i % 100}", "n": i} for i in range(1000)]
        coll.upsert(rows, embed=False)  # crosses ANALYZE_AFTER: the writer runs ANALYZE
        assert ANALYZE_AFTER <= 1001
        plan = coll.store._rows(
            "EXPLAIN QUERY PLAN SELECT r.id FROM records r WHERE r.collection_id = 1 AND "
            "json_extract(r.attrs, '$.owner') = 'o7' ORDER BY json_extract(r.attrs, '$.n') DESC",
            (),
        )
    # without the statistics the planner walks the n index in ORDER BY order instead
    assert any("attr_1_owner" in str(step) for step in plan), plan


def test_fake_embedder_word_counts_do_not_outlive_a_dropped_collection(db, fake_embedder):
    coll = db.collection("fruit", embedder=fake_embedder)
    coll.upsert(
        [{"id": f"a{i}", "text": f"apple {w}"} for i, w in enumerate("xyz")]
        + [{"id": "c1", "text": "car"}]
    )
    # apple is in 3 of 4 chunks: weightless, so "car" alone ranks
    assert [c.record_id for c in coll.store.keyword_search("fruit", "apple car", 1, None)] == ["c1"]
    db.drop_collection("fruit")
    again = db.collection("fruit", embedder=fake_embedder)  # may reuse the id and version
    again.upsert(
        [
            {"id": "a1", "text": "apple"},
            {"id": "c1", "text": "car park lot zone"},
            {"id": "f1", "text": "fig"},
            {"id": "f2", "text": "grape"},
        ]
    )
    # apple and car are each in 1 of 4 chunks (same IDF); the shorter chunk scores higher
    assert [c.record_id for c in again.store.keyword_search("fruit", "apple car", 1, None)] == [
        "a1"
    ]
