"""Collections in layout 2 (``_records`` + ``_chunks_1`` with vectors in the chunk rows) under
layout 3's store: read unchanged with nothing written, migrated by the first write (record
bodies into head rows, long bodies into part rows, no ``_records``), and a migration killed
(SIGKILL, a real subprocess) before or after its commit point leaves a readable collection that
the next write finishes. Real Milvus Lite, fake 8-d vectors (rows of the identity matrix).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from semsearch.filters import parse_filter
from semsearch.stores.milvus import layout as lay
from semsearch.stores.milvus.store import MilvusStore
from tests.milvus.helpers import killed_migration, one_chunk_record
from tests.milvus.layout1 import snapshot
from tests.milvus.layout2 import SCHEMA, Item, build, record

NAME = "old2"
EYE = np.eye(8, dtype=np.float32)
LONG_NOTE = "ü" * 20000  # an undeclared field: the body needs two parts of 16383 characters
#: a, b (two chunks) and l embedded (axes 0, 1, 2, 3), c failed, d pending, e without text.
ITEMS = [
    Item("a", ["alpha words"], "spell", [EYE[0].tolist()]),
    Item("b", ["beta words", "beta more"], "monster", [EYE[1].tolist(), EYE[2].tolist()]),
    Item("c", ["gamma words"], "spell", [None], failed=True),
    Item("d", ["delta words"], "spell", [None]),
    Item("e", [], "monster", []),
    Item("l", ["long words"], "spell", [EYE[3].tolist()], extra={"note": LONG_NOTE}),
]


@pytest.fixture
def location(tmp_path: Path) -> Iterator[str]:
    loc = f"milvus-lite://{tmp_path / 'old2.db'}"
    store = MilvusStore(loc)
    try:
        build(store, NAME, ITEMS)
    finally:
        store.close()
    yield loc


def _hits(
    store: MilvusStore, axis: int, where: dict[str, str] | None = None
) -> list[tuple[str, float]]:
    ast = parse_filter(where, SCHEMA) if where is not None else None
    found = store.vector_search(NAME, EYE[axis], 10, ast)
    return [(h.record_id, round(h.score, 4)) for h in found]


def _check_reads(store: MilvusStore, extra: int = 0) -> None:
    """The six records read as written: vectors, filters, BM25, counts, pending, bodies."""
    assert _hits(store, 0)[0] == ("a", 1.0)
    assert _hits(store, 2)[0] == ("b", 1.0)
    assert _hits(store, 3)[0] == ("l", 1.0)
    assert _hits(store, 1, {"kind": "monster"}) == [("b", 1.0), ("b", 0.0)]
    assert [h.record_id for h in store.keyword_search(NAME, "gamma", 5, None)] == ["c"]
    s = store.stats(NAME)
    # chunks: a 1, b 2, c 1, d 1, l 1 (e has none); embedded: a, b's two, l
    assert (s.records, s.chunks, s.embedded, s.pending, s.failed) == (
        6 + extra,
        6 + extra,
        4 + extra,
        1,
        1,
    )
    assert [p.record_id for p in store.pending_chunks(NAME, 10)] == ["d", "c"]
    vectors = store.chunk_vectors(NAME, ["b", "c"])
    assert vectors["c"] == [None] and np.allclose(vectors["b"][1], EYE[2])
    by_id = {r.id: r for r in store.get_records(NAME, ["b", "e", "l"])}
    assert (by_id["b"].text, by_id["b"].fields) == ("beta words beta more", {"kind": "monster"})
    assert (by_id["e"].text, by_id["e"].fields) == ("", {"kind": "monster"})
    assert by_id["l"].fields == {"kind": "spell", "note": LONG_NOTE}
    assert store.record_hashes(NAME, ["e", "zz"]) == {"e": record(ITEMS[4]).content_hash}
    monster = parse_filter({"kind": "monster"}, SCHEMA)
    assert [r.id for r in store.find(NAME, monster, 10, 0, [])] == ["b", "e"]
    assert store.list_ids(NAME)[:6] == ["a", "b", "c", "d", "e", "l"]
    assert store.count(NAME) == 6 + extra


def _parts(store: MilvusStore) -> list[str]:
    names = store.client().list_collections()
    return sorted(n.removeprefix(lay.prefix(NAME)) for n in names if n.startswith(lay.prefix(NAME)))


def _write_n(store: MilvusStore) -> None:
    result = store.write_records(NAME, [one_chunk_record("n", "nu words")])
    store.set_vectors(NAME, [p.chunk_id for p in result.pending], EYE[4:5])


def test_a_layout2_collection_is_read_unchanged_and_nothing_is_written_fake_vectors(
    location: str,
) -> None:
    store = MilvusStore(location)
    try:
        before = snapshot(store, NAME)
        _check_reads(store)
        store.flush()
        assert snapshot(store, NAME) == before
        assert store.meta(NAME)["layout"] == 2
    finally:
        store.close()
    store = MilvusStore(location)  # closing wrote nothing either
    try:
        assert snapshot(store, NAME) == before
    finally:
        store.close()


def test_the_first_write_migrates_layout2_to_head_rows_fake_vectors(location: str) -> None:
    store = MilvusStore(location)
    try:
        _write_n(store)
        assert store.meta(NAME)["layout"] == lay.LAYOUT
        assert _parts(store) == ["_chunks_2"]
        _check_reads(store, extra=1)
        assert _hits(store, 4)[0] == ("n", 1.0)
        # l's body is a head row and one part row; b's first chunk became its head row
        rows = store.rows_by(NAME, "chunks", "record_id", ["l", "b"], ["record_id", "ordinal"])
        assert sorted((r["record_id"], r["ordinal"]) for r in rows) == [
            ("b", 0),
            ("b", 1),
            ("l", -1),
            ("l", 0),
        ]
        # b's first chunk unchanged keeps its own vector through the head row; the second is new
        changed = Item("b", ["beta words", "beta other"], "monster", [None, None])
        result = store.write_records(NAME, [record(changed)])
        assert (result.updated, result.reused, len(result.pending)) == (1, 0, 1)
        assert _hits(store, 1)[0] == ("b", 1.0)
        texts = store.rows_by(NAME, "chunks", "record_id", ["b"], ["text"])
        assert sorted(r["text"] for r in texts) == ["beta other", "beta words"]
        # l shrinks to one part: its part row goes
        store.write_records(NAME, [record(Item("l", ["long words now"], "spell", [None]))])
        rows = store.rows_by(NAME, "chunks", "record_id", ["l"], ["ordinal"])
        assert [r["ordinal"] for r in rows] == [0]
        assert store.get_records(NAME, ["l"])[0].fields == {"kind": "spell"}
    finally:
        store.close()


def _killed_migration(location: str, where: str) -> None:
    killed_migration(location, where, "_records", NAME, "n", "nu words")


def test_a_layout2_migration_killed_before_its_commit_point_is_redone_fake_vectors(
    location: str,
) -> None:
    _killed_migration(location, "copy")
    store = MilvusStore(location)
    try:
        left = snapshot(store, NAME)
        assert store.meta(NAME)["layout"] == 2  # still layout 2, whole
        assert _parts(store) == ["_chunks_1", "_chunks_2", "_records"]
        _check_reads(store)
        assert snapshot(store, NAME) == left  # reading wrote nothing, not even the cleanup
        _write_n(store)
        assert store.meta(NAME)["layout"] == lay.LAYOUT
        assert _parts(store) == ["_chunks_2"]  # the leftover dropped, redone
        _check_reads(store, extra=1)
    finally:
        store.close()


def test_a_layout2_migration_killed_after_its_commit_point_is_cleaned_fake_vectors(
    location: str,
) -> None:
    _killed_migration(location, "drop")
    store = MilvusStore(location)
    try:
        assert store.meta(NAME)["layout"] == lay.LAYOUT
        assert _parts(store) == ["_chunks_1", "_chunks_2", "_records"]  # outlived the kill
        _check_reads(store)  # the killed write's record "n" was never committed
        _write_n(store)
        assert _parts(store) == ["_chunks_2"]
        _check_reads(store, extra=1)
    finally:
        store.close()
