"""The Milvus store on a real Milvus Lite: persistence, idempotence, lazy dimension, filters.

Plumbing tests use the deterministic FakeEmbedder (never for anything about meaning).
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

import semsearch
from semsearch.embedders.fake import FakeEmbedder
from semsearch.errors import DimensionMismatch, IndexNotFound, ModelMismatch
from semsearch.schema import Schema
from semsearch.stores.milvus import layout as lay
from semsearch.stores.milvus.state import EXACT_MAX
from semsearch.stores.milvus.store import MilvusStore

SCHEMA = Schema.from_types({"level": "int", "school": "str", "tags": "list[str]"})


def _lite(store: semsearch.Database) -> MilvusStore:
    assert isinstance(store.store, MilvusStore)
    return store.store


def test_reading_a_missing_store_creates_nothing(tmp_path: Path) -> None:
    path = tmp_path / "absent.db"
    with semsearch.connect(f"milvus-lite://{path}") as db:
        assert not db.exists()
        assert db.collections() == []
        with pytest.raises(IndexNotFound):
            db.collection("notes", create=False)
    assert not path.exists()


def test_round_trip_survives_reopen_with_model_and_dim(lite_location: str) -> None:
    with semsearch.connect(lite_location) as db:
        coll = db.collection("notes", schema=SCHEMA, embedder="fake:32")
        coll.upsert([{"id": "a", "text": "alpha beta", "level": 2, "tags": ["x"]}])
    with semsearch.connect(lite_location) as db:
        assert db.exists()
        coll = db.collection("notes")
        assert coll.model_id == "fake:32"
        assert coll.stats().dim == 32
        assert coll.get("a")[0].fields == {"level": 2, "tags": ["x"]}
        assert coll.search("alpha", min_score=None).hits[0].id == "a"
        with pytest.raises(ModelMismatch):
            db.collection("notes", embedder="fake:16")


def test_dimension_is_checked_on_write(mdb: semsearch.Database) -> None:
    coll = mdb.collection("notes", embedder=FakeEmbedder(8))
    report = coll.upsert([{"id": "a", "text": "one"}])
    assert report.chunks_embedded == 1
    pending = coll.upsert([{"id": "b", "text": "two"}], embed=False)
    assert pending.chunks_pending == 1
    chunk_id = _lite(mdb).pending_chunks("notes", 10)[0].chunk_id
    with pytest.raises(DimensionMismatch):
        _lite(mdb).set_vectors("notes", [chunk_id], np.ones((1, 4), dtype=np.float32) / 2)


def test_upsert_is_idempotent_and_writes_no_duplicate_rows(mdb: semsearch.Database) -> None:
    coll = mdb.collection("notes", schema=SCHEMA, embedder=FakeEmbedder(16, max_tokens=8))
    records = [{"id": f"r{i}", "text": f"word{i} " * 20, "level": i} for i in range(5)]
    first = coll.upsert(records)
    chunks = coll.stats().chunks
    assert first.added == 5 and chunks > 5  # 20 words with an 8-token window: several chunks
    again = coll.upsert(records)
    assert (again.added, again.updated, again.unchanged, again.chunks_embedded) == (0, 0, 5, 0)
    assert coll.count() == 5 and coll.stats().chunks == chunks
    changed = coll.upsert([{"id": "r0", "text": "word0 " * 20, "level": 99}])
    assert (changed.updated, changed.chunks_embedded) == (1, 0)  # same text: vectors kept
    assert [r.id for r in coll.find({"level": 99})] == ["r0"]
    assert coll.search("word0", where={"level": 99}, min_score=None).hits[0].id == "r0"
    assert coll.stats().chunks == chunks


def test_the_next_search_sees_an_upsert_at_once(mdb: semsearch.Database) -> None:
    coll = mdb.collection("notes", embedder=FakeEmbedder(16))
    for i in range(3):
        coll.upsert([{"id": f"n{i}", "text": f"unique{i} token"}])
        assert coll.search(f"unique{i}", mode="keyword").hits[0].id == f"n{i}"
        assert coll.search(f"unique{i}", min_score=None).hits[0].id == f"n{i}"


def test_unknown_dimension_stays_keyword_searchable_until_embedded(tmp_path: Path) -> None:
    embedder = FakeEmbedder(16, fail=True)
    with semsearch.connect(f"milvus-lite://{tmp_path / 'x.db'}") as db:
        coll = db.collection("notes", embedder=embedder)
        report = coll.upsert([{"id": "a", "text": "kestrel hovering"}, {"id": "b", "text": "owl"}])
        assert (report.chunks_pending, report.chunks_failed) == (0, 2)
        names = lay.names("notes")
        assert not _lite(db).client().has_collection(names["vectors"])
        assert [h.id for h in coll.search("kestrel", mode="keyword").hits] == ["a"]
        embedder.fail = False
        assert coll.search("kestrel", min_score=None).hits == []
        assert coll.reindex().chunks_embedded == 2
        assert coll.search("kestrel hovering", min_score=None).hits[0].id == "a"
        assert coll.stats().pending == 0 and coll.stats().dim == 16


def test_keyword_scores_are_positive_bm25_best_first(mdb: semsearch.Database) -> None:
    coll = mdb.collection("notes", embedder=FakeEmbedder(16))
    coll.upsert(
        [
            {"id": "once", "text": "heron by the lake with reeds and mud"},
            {"id": "twice", "text": "heron heron"},
            {"id": "none", "text": "sparrow"},
        ]
    )
    hits = coll.search("heron", mode="keyword").hits
    assert [h.id for h in hits] == ["twice", "once"]  # more occurrences, shorter doc: higher BM25
    assert hits[0].score > hits[1].score > 0


def test_selective_filters_return_min_of_limit_and_matches(mdb: semsearch.Database) -> None:
    coll = mdb.collection("notes", schema=SCHEMA, embedder=FakeEmbedder(16))
    coll.upsert(
        [{"id": f"r{i:03d}", "text": f"common text {i}", "level": i % 50} for i in range(300)]
    )
    for level, expected in ((7, 6), (None, 10)):
        where = {"level": level} if level is not None else None
        hits = coll.search("common text", limit=10, where=where, min_score=None).hits
        assert len(hits) == min(10, expected if level is not None else 300)
        if level is not None:
            assert {h.fields["level"] for h in hits} == {7}
    wide = coll.search("common", limit=100, where={"level": {"$lt": 45}}, min_score=None)
    assert len(wide.hits) == 100 and all(h.fields["level"] < 45 for h in wide.hits)
    assert EXACT_MAX < 270  # 6 matches: exact scan; 270 matches: filtered ANN, refilled if short


def _part_ordinals(mdb: semsearch.Database) -> list[int]:
    rows = _lite(mdb).rows_by("notes", "chunks", "record_id", ["long"], ["ordinal", "status"])
    assert all(r["status"] == "record" for r in rows if r["ordinal"] < 0)
    return sorted(r["ordinal"] for r in rows if r["ordinal"] < 0)


def test_long_record_bodies_are_split_and_rejoined(mdb: semsearch.Database) -> None:
    coll = mdb.collection("notes", embedder=FakeEmbedder(16, max_tokens=512))
    text = " ".join(f"w{i}é" for i in range(9000))  # > 4 body parts of 16383 chars
    coll.upsert([{"id": "long", "text": text, "note": "ü" * 20000}])
    record = coll.get("long")[0]
    assert record.text == text and record.fields["note"] == "ü" * 20000
    # layout 3: body parts beyond the head are rows of ordinal -1, -2, ... (> 4 parts)
    parts = _part_ordinals(mdb)
    assert len(parts) >= 4 and parts == list(range(-len(parts), 0))
    coll.upsert([{"id": "long", "text": "short now"}])
    assert coll.get("long")[0].text == "short now"
    assert _part_ordinals(mdb) == []  # the longer version's parts were deleted


def test_delete_removes_records_chunks_and_vectors(mdb: semsearch.Database) -> None:
    coll = mdb.collection("notes", embedder=FakeEmbedder(16))
    coll.upsert([{"id": "a", "text": "keep me"}, {"id": "b", "text": "drop me"}])
    assert coll.delete(["b", "missing"]) == 1
    assert coll.ids() == ["a"]
    assert [h.id for h in coll.search("drop me", min_score=None).hits] == ["a"]
    assert coll.search("drop", mode="keyword").hits == []
    assert coll.stats().chunks == 1


def test_new_fields_are_added_by_rebuilding(lite_location: str) -> None:
    with semsearch.connect(lite_location) as db:
        coll = db.collection(
            "notes", schema=Schema.from_types({"level": "int"}), embedder="fake:16"
        )
        coll.upsert([{"id": "old", "text": "old note", "level": 1, "mood": "calm"}])
    wider = Schema.from_types({"level": "int", "mood": "str"})
    with semsearch.connect(lite_location) as db:
        coll = db.collection("notes", schema=wider)
        assert coll.get("old")[0].fields["mood"] == "calm"
        coll.upsert([{"id": "new", "text": "new note", "level": 2, "mood": "calm"}])
        assert [r.id for r in coll.find({"mood": "calm"})] == ["new"]  # old: filled on rewrite
        assert [h.id for h in coll.search("note", where={"level": 1}, min_score=None).hits] == [
            "old"
        ]


def test_drop_collection_removes_its_milvus_collections(mdb: semsearch.Database) -> None:
    coll = mdb.collection("notes", embedder=FakeEmbedder(16))
    coll.upsert([{"id": "a", "text": "x"}])
    assert mdb.drop_collection("notes")
    client = _lite(mdb).client()
    assert not any(client.has_collection(n) for n in lay.names("notes").values())
    assert mdb.collections() == [] and not mdb.drop_collection("notes")


def test_file_size_counts_the_data_folder(mdb: semsearch.Database) -> None:
    mdb.collection("notes", embedder=FakeEmbedder(16)).upsert([{"id": "a", "text": "x"}])
    path = _lite(mdb).target.lite_path
    assert path is not None and os.path.isdir(path)
    assert _lite(mdb).file_size() > 0
