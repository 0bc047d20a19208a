"""Collections in layout 3 (snowball ``terms`` and Milvus' BM25 function, no keyword columns)
under layout 4's store: searched as before, with a note saying which ranking answered, nothing
written by reads; migrated to record-level BM25 by the first write or by ``compact``; and a
migration killed (SIGKILL, a real subprocess) before or after its commit point leaves a readable
collection that the next write finishes. Real Milvus Lite, fake 8-d vectors."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

import semsearch
from semsearch.embedders.fake import FakeEmbedder
from semsearch.stores.milvus import layout as lay
from semsearch.stores.milvus.store import MilvusStore
from tests.milvus.helpers import killed_migration
from tests.milvus.layout1 import snapshot
from tests.milvus.layout3 import build, record

NAME = "old3"
RECORDS = [
    record("w", ["The weather is nice today"], "note"),
    record("h", ["Herons hunt fish in reeds", "herons nest in colonies"], "bird"),
    record("s", ["Sparrows sing"], "bird"),
    record("e", [], "empty"),
]


@pytest.fixture
def location(tmp_path: Path) -> Iterator[str]:
    loc = f"milvus-lite://{tmp_path / 'old3.db'}"
    store = MilvusStore(loc)
    try:
        build(store, NAME, RECORDS)
    finally:
        store.close()
    yield loc


def _keyword(location: str, query: str) -> semsearch.SearchResult:
    with semsearch.connect(location) as db:
        coll = db.collection(NAME, embedder=FakeEmbedder(8))
        return coll.search(query, mode="keyword", min_score=None)


def _parts(store: MilvusStore) -> list[str]:
    prefix = lay.prefix(NAME)
    return sorted(
        n.removeprefix(prefix) for n in store.client().list_collections() if n.startswith(prefix)
    )


def test_a_layout3_collection_is_searched_as_before_with_a_note_fake_vectors(
    location: str,
) -> None:
    store = MilvusStore(location)
    try:
        before = snapshot(store, NAME)
        hits = store.keyword_search(NAME, "herons", 5, None)
        # chunk-level: both of h's chunks hold "heron", each its own hit, no evidence
        assert {h.record_id for h in hits} == {"h"} and len(hits) == 2
        assert all(not h.provisional and h.evidence is None for h in hits)
        assert store.keyword_ranking_note(NAME) is not None
    finally:
        store.close()
    result = _keyword(location, "herons")
    assert result.ids == ["h"]
    assert any("earlier semsearch version" in n for n in result.notes)
    # the substring scan reads the text: the stem "eat" inside "weather" is no match
    assert _keyword(location, "eating").hits == []
    store = MilvusStore(location)
    try:
        assert snapshot(store, NAME) == before  # nothing written, not even on close
        assert store.meta(NAME)["layout"] == 3
    finally:
        store.close()


def _check_migrated(location: str) -> None:
    """Layout 4: record-level hits with evidence, no note, every record readable."""
    store = MilvusStore(location)
    try:
        assert store.meta(NAME)["layout"] == lay.LAYOUT
        assert _parts(store) == [f"_chunks_{store.meta(NAME)['generation']}"]
        hits = store.keyword_search(NAME, "herons", 5, None)
        assert [h.record_id for h in hits] == ["h"]
        assert hits[0].provisional and hits[0].coverage == pytest.approx(1.0)
        assert store.keyword_ranking_note(NAME) is None
        assert {r.id for r in store.get_records(NAME, ["w", "h", "s", "e"])} == {"w", "h", "s", "e"}
        assert store.keyword_chunks(NAME, "colonies", ["h"]) != store.keyword_chunks(
            NAME, "reeds", ["h"]
        )  # h's second chunk for "colonies", its first for "reeds"
    finally:
        store.close()
    result = _keyword(location, "herons")
    assert result.ids == ["h"] and result.notes == ()
    assert _keyword(location, "eating").hits == []


def test_the_first_write_migrates_layout3_to_record_level_bm25_fake_vectors(location: str) -> None:
    store = MilvusStore(location)
    try:
        store.write_records(NAME, [record("n", ["nightingales sing at night"], "bird")])
    finally:
        store.close()
    _check_migrated(location)
    # "sing" once in each: the shorter record first (BM25's length normalisation)
    assert _keyword(location, "sing").ids == ["s", "n"]


def test_compact_migrates_layout3_without_a_write_fake_vectors(location: str) -> None:
    with semsearch.connect(location) as db:
        db.compact()
    _check_migrated(location)


def test_a_layout3_migration_killed_before_its_commit_point_is_redone_fake_vectors(
    location: str,
) -> None:
    killed_migration(location, "copy", "_chunks_1", NAME, "n", "nightingales sing at night")
    store = MilvusStore(location)
    try:
        assert store.meta(NAME)["layout"] == 3  # still layout 3, whole
        assert _parts(store) == ["_chunks_1", "_chunks_2"]  # and a half-filled leftover
        assert {h.record_id for h in store.keyword_search(NAME, "herons", 5, None)} == {"h"}
        store.write_records(NAME, [record("n", ["nightingales sing at night"], "bird")])
    finally:
        store.close()
    _check_migrated(location)


def test_a_layout3_migration_killed_after_its_commit_point_is_cleaned_fake_vectors(
    location: str,
) -> None:
    killed_migration(location, "drop", "_chunks_1", NAME, "n", "nightingales sing at night")
    store = MilvusStore(location)
    try:
        assert store.meta(NAME)["layout"] == lay.LAYOUT  # committed: layout 4 answers
        assert _parts(store) == ["_chunks_1", "_chunks_2"]  # the old part outlived the kill
        assert [h.record_id for h in store.keyword_search(NAME, "herons", 5, None)] == ["h"]
        assert store.get_records(NAME, ["n"]) == []  # the killed write never committed
        store.write_records(NAME, [record("n", ["nightingales sing at night"], "bird")])
    finally:
        store.close()
    _check_migrated(location)
