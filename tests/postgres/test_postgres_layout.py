"""PostgreSQL layout: typed field columns, indexes, HNSW options, migrations, read-only reads."""

from __future__ import annotations

import pytest

import semsearch
from semsearch.embedders.fake import FakeEmbedder
from semsearch.errors import InvalidRecord, StoreCorrupted
from semsearch.stores.postgres.store import PostgresStore
from tests.contract.helpers import spells


def _tables(raw) -> list[str]:
    rows = raw(
        "SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema() "
        "ORDER BY table_name"
    )
    return [r[0] for r in rows]


def test_declared_fields_are_typed_columns_with_btree_and_gin_indexes(pg_location, raw) -> None:
    with semsearch.connect(pg_location) as db:
        spells(db)
    cols = dict(raw(
        "SELECT column_name, data_type FROM information_schema.columns "
        "WHERE table_schema = current_schema() AND table_name = 'semsearch_c1_records'"
    ))  # fmt: skip
    assert cols["f_level"] == "bigint"
    assert cols["f_school"] == "text"
    assert cols["f_ritual"] == "boolean"
    assert cols["f_weight"] == "double precision"
    assert cols["f_classes"] == "ARRAY"
    assert cols["fields"] == "json"  # the text as written (jsonb turned 1e20 into an int)
    indexes = dict(
        raw("SELECT indexname, indexdef FROM pg_indexes WHERE schemaname = current_schema()")
    )
    assert "USING btree (f_level)" in indexes["semsearch_c1_f_level"]
    assert "USING gin (f_classes)" in indexes["semsearch_c1_f_classes"]
    assert "semsearch_c1_chunks_tsv" not in indexes  # keyword search reads the BM25 tables
    assert "(term, record_rid)" in indexes["semsearch_c1_kw_terms_pkey"]
    assert "(record_rid)" in indexes["semsearch_c1_kw_terms_record"]
    hnsw = indexes["semsearch_c1_hnsw"]
    assert "USING hnsw (embedding vector_cosine_ops)" in hnsw
    assert "m='16'" in hnsw and "ef_construction='64'" in hnsw


def test_vector_column_takes_the_dimension_of_the_first_vectors(pg_location, raw) -> None:
    with semsearch.connect(pg_location) as db:
        spells(db)
    typ = raw(
        "SELECT format_type(atttypid, atttypmod) FROM pg_attribute "
        "WHERE attrelid = 'semsearch_c1_chunks'::regclass AND attname = 'embedding'"
    )
    assert typ == [("vector(32)",)]


def test_hnsw_parameters_are_configurable(pg_location, raw) -> None:
    store = PostgresStore(pg_location, hnsw_m=8, hnsw_ef_construction=32)
    with semsearch.Database(store) as db:
        spells(db)
    (indexdef,) = raw("SELECT indexdef FROM pg_indexes WHERE indexname = 'semsearch_c1_hnsw'")[0]
    assert "m='8'" in indexdef and "ef_construction='32'" in indexdef


def test_migrations_are_numbered_and_recorded(pg_location, raw) -> None:
    with semsearch.connect(pg_location) as db:
        db.collection("a", embedder=FakeEmbedder(8))
    assert [r[0] for r in raw("SELECT version FROM semsearch_migrations")] == [
        1,
        2,
    ]  # 2: int8 window blobs (no statements)
    assert raw("SELECT value FROM semsearch_meta WHERE key = 'format'") == [("semsearch",)]


def test_read_paths_never_create_tables(pg_location, raw) -> None:
    with semsearch.connect(pg_location) as db:
        assert db.collections() == []
        assert not db.exists()
        with pytest.raises(semsearch.IndexNotFound):
            db.collection("notes", create=False)
    assert _tables(raw) == []


def test_a_newer_format_is_refused_on_read(pg_location, raw) -> None:
    with semsearch.connect(pg_location) as db:
        db.collection("a", embedder=FakeEmbedder(8))
    raw("INSERT INTO semsearch_migrations (version) VALUES (99)")
    with semsearch.connect(pg_location) as db, pytest.raises(StoreCorrupted) as info:
        db.collections()
    assert "99" in str(info.value) and info.value.hint


def test_a_batch_the_server_refuses_writes_nothing(pg_location) -> None:
    with semsearch.connect(pg_location) as db:
        coll = db.collection("a", embedder=FakeEmbedder(8))
        batch = [{"id": "ok1", "text": "fine"}, {"id": "ok2", "text": "fine too"},
                 {"id": "nul", "text": "bad \x00 byte"}]  # fmt: skip
        with pytest.raises(InvalidRecord) as info:
            coll.upsert(batch)
        assert "nothing was written" in (info.value.hint or "")
        assert coll.count() == 0
        assert coll.stats().chunks == 0


def test_collections_are_isolated_by_table(pg_location, raw) -> None:
    with semsearch.connect(pg_location) as db:
        a = db.collection("a", embedder=FakeEmbedder(8))
        b = db.collection("b", embedder=FakeEmbedder(16))
        a.upsert([{"id": "x", "text": "apple"}])
        b.upsert([{"id": "x", "text": "banana"}, {"id": "y", "text": "cherry"}])
        assert (a.count(), b.count()) == (1, 2)
        assert a.search("banana", mode="keyword").ids == []
        assert b.get("x")[0].text == "banana"
        assert db.drop_collection("a")
    assert _tables(raw) == [
        "semsearch_c2_chunks", "semsearch_c2_kw_df", "semsearch_c2_kw_docs",
        "semsearch_c2_kw_stats", "semsearch_c2_kw_terms", "semsearch_c2_records",
        "semsearch_collections", "semsearch_meta", "semsearch_migrations"]  # fmt: skip


def test_collection_created_with_a_known_dimension_gets_its_index_at_once(pg_location, raw):
    from semsearch.schema import Schema
    from semsearch.stores.base import CollectionInfo

    store = PostgresStore(pg_location, hnsw_m=12)
    try:
        store.create_collection(CollectionInfo("known", Schema().to_json(), "fake:8", 8))
    finally:
        store.close()
    typ = raw(
        "SELECT format_type(atttypid, atttypmod) FROM pg_attribute "
        "WHERE attrelid = 'semsearch_c1_chunks'::regclass AND attname = 'embedding'"
    )
    assert typ == [("vector(8)",)]
    (indexdef,) = raw("SELECT indexdef FROM pg_indexes WHERE indexname = 'semsearch_c1_hnsw'")[0]
    assert "m='12'" in indexdef


def test_trigram_keyword_tokenizer_is_refused_clearly(pg_location, raw) -> None:
    """Keyword search ranks FTS5's porter terms here; before, ``trigram`` was stored and
    silently ignored (the collection searched by stemmed English words)."""
    with semsearch.connect(pg_location) as db:
        with pytest.raises(semsearch.InvalidQuery) as err:
            db.collection("notes", embedder=FakeEmbedder(8), keyword_tokenizer="trigram")
        assert err.value.hint and "porter" in err.value.hint
        assert db.collections() == []
