"""Record verbs on every backend: upsert, get, delete, count, find, ids, stats (fake embedder)."""

from __future__ import annotations

import pytest

import semsearch
from semsearch.embedders.fake import FakeEmbedder
from semsearch.errors import InvalidRecord
from tests.contract.helpers import spells
from tests.contract.spells import ALL_IDS, RECORDS, SCHEMA


def test_upsert_reports_added_records_and_embedded_chunks(database) -> None:
    emb = FakeEmbedder(32)
    coll = database.collection("spells", schema=SCHEMA, embedder=emb)
    report = coll.upsert(RECORDS)
    assert (report.added, report.updated, report.unchanged) == (7, 0, 0)
    assert report.chunks_embedded == 7 and report.chunks_pending == 0
    assert coll.count() == 7
    assert coll.ids() == ALL_IDS


def test_reupsert_of_unchanged_records_embeds_nothing(database) -> None:
    emb = FakeEmbedder(32)
    coll = spells(database, emb)
    calls = emb.texts_embedded
    report = coll.upsert(RECORDS)
    assert (report.added, report.updated, report.unchanged) == (0, 0, 7)
    assert report.chunks_embedded == 0
    assert emb.texts_embedded == calls
    assert coll.count() == 7


def test_fields_only_change_keeps_chunks_and_vectors(database) -> None:
    emb = FakeEmbedder(32)
    coll = spells(database, emb)
    changed = dict(RECORDS[0], weight=2.5)
    report = coll.upsert([changed])
    assert (report.updated, report.chunks_embedded, report.chunks_reused) == (1, 0, 0)
    assert coll.get("alarm")[0].fields["weight"] == 2.5
    assert [r.id for r in coll.find({"weight": 2.5})] == ["alarm"]
    assert coll.search("ward against intrusion", limit=1).ids == ["alarm"]


def test_text_change_reembeds_and_search_sees_new_text(database) -> None:
    coll = spells(database)
    report = coll.upsert([dict(RECORDS[0], text="alarm rings a silver bell")])
    assert (report.updated, report.chunks_embedded) == (1, 1)
    assert coll.search("silver bell", mode="keyword").ids == ["alarm"]
    assert coll.search("intrusion", mode="keyword").ids == []
    hit = coll.search("alarm rings a silver bell", limit=1)[0]
    assert hit.id == "alarm" and hit.score == pytest.approx(1.0, abs=1e-5)


def test_identical_text_in_new_record_reuses_the_stored_vector(database) -> None:
    emb = FakeEmbedder(32)
    coll = spells(database, emb)
    before = emb.texts_embedded
    report = coll.upsert([{"id": "copy", "text": RECORDS[2]["text"]}])
    assert (report.added, report.chunks_reused, report.chunks_embedded) == (1, 1, 0)
    assert emb.texts_embedded == before
    top = coll.search(RECORDS[2]["text"], limit=2)
    assert sorted(top.ids) == ["copy", "detect"]


def test_get_returns_records_in_asked_order_and_skips_missing(database) -> None:
    coll = spells(database)
    got = coll.get(["wish", "missing", "alarm"])
    assert [r.id for r in got] == ["wish", "alarm"]
    assert got[0].text == "wish is the mightiest spell of all"
    assert got[0].fields == {"level": 9, "school": "conjuration", "ritual": False,
                             "weight": 9.0, "classes": ["wizard"]}  # fmt: skip
    assert coll.get("note")[0].fields == {}


def test_delete_removes_record_chunks_vectors_and_keyword_rows(database) -> None:
    coll = spells(database)
    assert coll.delete(["wish", "missing"]) == 1
    assert coll.count() == 6
    assert coll.get("wish") == []
    assert coll.search("mightiest", mode="keyword").ids == []
    assert "wish" not in coll.search("wish is the mightiest spell of all", min_score=None).ids
    assert coll.stats().chunks == 6
    assert coll.delete("wish") == 0


def test_find_orders_by_fields_with_absent_values_like_sqlite(database) -> None:
    coll = spells(database)
    # Absent (NULL) sorts before every value ascending and after every value descending.
    assert [r.id for r in coll.find(order_by="level")] == [
        "note", "light", "alarm", "cure", "detect", "fireball", "wish"]  # fmt: skip
    assert [r.id for r in coll.find(order_by="-level")] == [
        "wish", "fireball", "alarm", "cure", "detect", "light", "note"]  # fmt: skip
    assert [r.id for r in coll.find(order_by=["school", "-weight"], limit=3)] == [
        "note", "alarm", "wish"]  # fmt: skip
    assert [r.id for r in coll.find(limit=2, offset=5)] == ["note", "wish"]


def test_ids_sort_by_code_point_on_every_backend(database) -> None:
    coll = database.collection("ids", embedder=FakeEmbedder(32))
    ids = ["b", "B", "a", "é", "a/b", "a-b", "Z"]
    coll.upsert([{"id": i, "text": f"record {i}"} for i in ids])
    assert coll.ids() == sorted(ids)
    assert [r.id for r in coll.find(limit=10)] == sorted(ids)


def test_invalid_record_writes_nothing(database) -> None:
    coll = database.collection("spells", schema=SCHEMA, embedder=FakeEmbedder(32))
    bad = [*RECORDS[:3], {"id": "bad", "text": "x", "level": "three"}]
    with pytest.raises(InvalidRecord):
        coll.upsert(bad)
    assert coll.count() == 0


def test_embed_false_stores_pending_chunks_that_keyword_search_finds(database) -> None:
    emb = FakeEmbedder(32)
    coll = database.collection("spells", schema=SCHEMA, embedder=emb)
    report = coll.upsert(RECORDS, embed=False)
    assert (report.added, report.chunks_pending, emb.texts_embedded) == (7, 7, 0)
    stats = coll.stats()
    assert (stats.records, stats.chunks, stats.embedded, stats.pending) == (7, 7, 0, 7)
    assert coll.search("flame", mode="keyword").ids == ["fireball"]
    assert coll.search("flame", min_score=None).ids == []
    assert coll.reindex().chunks_embedded == 7
    assert coll.stats().pending == 0
    assert coll.search("fireball explodes in a burst of flame", limit=1).ids == ["fireball"]


def test_embedder_outage_keeps_records_pending_and_reindex_recovers(database) -> None:
    down = FakeEmbedder(32, fail=True)
    coll = database.collection("spells", schema=SCHEMA, embedder=down)
    report = coll.upsert(RECORDS)
    assert report.added == 7 and report.chunks_failed == 7 and report.errors
    assert (coll.stats().pending, coll.stats().failed) == (report.chunks_pending, 7) == (0, 7)
    assert coll.search("ward", mode="keyword").ids == ["alarm"]
    down.fail = False
    assert coll.reindex().chunks_embedded == 7
    stats = coll.stats()
    assert (stats.embedded, stats.failed, stats.pending) == (7, 0, 0)


def test_stats_and_collections_and_drop(store) -> None:
    with store.connect() as db:
        spells(db)
        db.collection("other", embedder=FakeEmbedder(32))
        stats = db.collection("spells").stats()
        assert (stats.records, stats.chunks, stats.embedded, stats.model_id, stats.dim) == (
            7, 7, 7, "fake:32", 32)  # fmt: skip
        assert stats.last_updated is not None
        assert db.collections() == ["other", "spells"]
        assert db.drop_collection("spells") is True
        assert db.drop_collection("spells") is False
        assert db.collections() == ["other"]


def test_data_survives_reopen_with_stored_model_and_schema(store) -> None:
    with store.connect() as db:
        spells(db)
    with store.connect() as db:
        assert db.exists()
        coll = db.collection("spells", embedder=FakeEmbedder(32), create=False)
        assert coll.model_id == "fake:32"
        assert coll.count() == 7
        assert [r.id for r in coll.find({"classes": "sorcerer"})] == ["fireball"]


def test_empty_store_reads_without_creating_anything(store) -> None:
    with store.connect() as db:
        assert db.collections() == []
        assert db.exists() is False
        with pytest.raises(semsearch.IndexNotFound):
            db.collection("nothing", create=False)
        assert db.exists() is False


def test_undeclared_number_fields_come_back_as_written_plumbing(database) -> None:
    # PostgreSQL's jsonb stores numbers as numeric: 1e20 came back as the int
    # 100000000000000000000 and -0.0 as 0; every store must give back the JSON written
    coll = database.collection("numbers", embedder=FakeEmbedder(8))
    fields = {"big": 1e20, "neg_zero": -0.0, "tiny": 5e-324, "one": 1.0, "huge_int": 2**70}
    coll.upsert([{"id": "n", "text": "numbers", **fields}], embed=False)
    got = coll.get(["n"])[0].fields
    assert got == fields
    assert {k: type(v) for k, v in got.items()} == {k: type(v) for k, v in fields.items()}
    assert str(got["neg_zero"]) == "-0.0"


def test_postgres_table_of_an_older_version_with_jsonb_fields_still_takes_writes_plumbing(
    store,
) -> None:
    if store.backend != "postgres":
        pytest.skip("a PostgreSQL table layout")
    import psycopg

    db = store.connect()
    coll = db.collection("older", embedder=FakeEmbedder(8))
    coll.upsert([{"id": "a", "text": "first", "n": 1}], embed=False)
    with psycopg.connect(store.location) as conn:
        (cid,) = conn.execute(
            "SELECT id FROM semsearch_collections WHERE name = 'older'"
        ).fetchone()
        conn.execute(f"ALTER TABLE semsearch_c{cid}_records ALTER COLUMN fields TYPE jsonb")
    coll.upsert([{"id": "a", "text": "second", "n": 2}, {"id": "b", "text": "b", "n": 3}])
    assert {r.id: r.fields for r in coll.get(["a", "b"])} == {"a": {"n": 2}, "b": {"n": 3}}
    db.close()
