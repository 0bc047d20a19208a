"""The general Collection/Store additions conversation memory needs, on every contract backend:
``Collection.delete_where``, ``Collection.embed_pending(where=)`` and ``Store.stats(where=)``
(``where`` on the last two is implemented by SQLite so far; other backends are skipped there).
Fake embedder: plumbing only."""

from __future__ import annotations

import pytest

from semsearch import InvalidFilter, Schema
from semsearch.embedders.fake import FakeEmbedder
from semsearch.filters import parse_filter

SCHEMA = Schema.from_types({"owner": "str", "n": "int"})
RECORDS = [{"id": f"r{i}", "text": f"text {i}", "owner": "ab"[i % 2], "n": i} for i in range(10)]


@pytest.fixture
def coll(database):
    c = database.collection("scoped", schema=SCHEMA, embedder=FakeEmbedder(16))
    c.upsert(RECORDS, embed=False)
    return c


def test_delete_where_deletes_exactly_the_matching_records_fake_embedder(coll):
    assert coll.delete_where({"owner": "a", "n": {"$gte": 4}}) == 3  # r4, r6, r8
    assert coll.ids() == sorted(["r0", "r1", "r2", "r3", "r5", "r7", "r9"])
    assert coll.delete_where({"owner": "a", "n": {"$gte": 4}}) == 0
    assert coll.stats().chunks == 7


def test_delete_where_pages_through_many_records_fake_embedder(database, monkeypatch):
    import semsearch.collection as collection_module

    monkeypatch.setattr(collection_module, "DELETE_PAGE", 3)
    c = database.collection("paged", schema=SCHEMA, embedder=FakeEmbedder(16))
    c.upsert([{"id": f"p{i}", "text": "t", "owner": "x", "n": i} for i in range(11)], embed=False)
    assert c.delete_where({"owner": "x"}) == 11 and c.count() == 0


def test_delete_where_refuses_an_empty_filter(coll):
    for where in ({}, None):
        with pytest.raises(InvalidFilter) as err:
            coll.delete_where(where)
        assert "drop_collection" in err.value.hint
    with pytest.raises(InvalidFilter):
        coll.delete_where({"nope": 1})
    assert coll.count() == 10


def test_embed_pending_and_stats_with_a_filter_fake_embedder(coll, store):
    assert coll.embed_pending(100, where={"owner": "b"}) == 5
    where_a = parse_filter({"owner": "a"}, SCHEMA)
    a = coll.store.stats(coll.name, where_a)
    assert (a.records, a.embedded, a.pending) == (5, 0, 5)
    b = coll.store.stats(coll.name, parse_filter({"owner": "b"}, SCHEMA))
    assert (b.records, b.embedded, b.pending) == (5, 5, 0)
    assert coll.embed_pending(2, where={"owner": "a"}) == 2
    assert coll.embed_pending(100) == 3
    everything = coll.store.stats(coll.name)
    assert (everything.records, everything.embedded, everything.pending) == (10, 10, 0)


def test_sqlite_store_analyzes_so_filtered_ordered_finds_use_the_filter_index(tmp_path):
    """Without planner statistics SQLite walked the whole collection in ORDER BY order."""
    import sqlite3

    import semsearch
    from semsearch.stores.sqlite.connection import ANALYZE_AFTER

    path = tmp_path / "plan.embed.db"
    db = semsearch.connect(path)
    c = db.collection("plan", schema=SCHEMA, embedder=FakeEmbedder(16))
    rows = [
        {"id": f"x{i}", "text": "t", "owner": f"o{i % 100}", "n": i} for i in range(ANALYZE_AFTER)
    ]
    c.upsert(rows, embed=False)
    found = c.find({"owner": "o7"}, limit=5, order_by="-n")
    assert [r.id for r in found] == ["x907", "x807", "x707", "x607", "x507"]
    db.close()
    conn = sqlite3.connect(path)
    assert conn.execute("SELECT count(*) FROM sqlite_stat1").fetchone()[0] > 0
    plan = conn.execute(
        "EXPLAIN QUERY PLAN SELECT r.id FROM records r WHERE r.collection_id = 1 AND "
        "json_extract(r.attrs, '$.owner') = 'o7' ORDER BY json_extract(r.attrs, '$.n') DESC"
    ).fetchall()
    conn.close()
    assert any("attr_1_owner" in str(step) for step in plan), plan
