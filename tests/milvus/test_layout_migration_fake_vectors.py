"""Collections in layout 1 (``_chunks`` + ``_vectors`` + ``_hashes``) under the current store:
read unchanged with nothing written, migrated by the first write, and a migration killed
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
from tests.milvus.layout1 import SCHEMA, Item, build, snapshot

NAME = "old"
EYE = np.eye(8, dtype=np.float32)
#: a and b embedded (axes 0 and 1), c failed, d pending.
ITEMS = [
    Item("a", "alpha words", "spell", EYE[0].tolist()),
    Item("b", "beta words", "monster", EYE[1].tolist()),
    Item("c", "gamma words", "spell", None, failed=True),
    Item("d", "delta words", "spell", None),
]


@pytest.fixture
def location(tmp_path: Path) -> Iterator[str]:
    loc = f"milvus-lite://{tmp_path / 'old.db'}"
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
    """The four records read as written: vectors, filters, BM25, counts, pending order."""
    assert _hits(store, 0)[:2] == [("a", 1.0), ("b", 0.0)]
    assert _hits(store, 1, {"kind": "monster"}) == [("b", 1.0)]
    assert [h.record_id for h in store.keyword_search(NAME, "gamma", 5, None)] == ["c"]
    s = store.stats(NAME)
    assert (s.records, s.chunks, s.embedded, s.pending, s.failed) == (
        4 + extra,
        4 + extra,
        2 + extra,
        1,
        1,
    )
    assert [p.record_id for p in store.pending_chunks(NAME, 10)] == ["d", "c"]
    vectors = store.chunk_vectors(NAME, ["a", "c"])
    assert vectors["c"] == [None] and np.allclose(vectors["a"][0], EYE[0])
    assert [r.text for r in store.get_records(NAME, ["b"])] == ["beta words"]


def _parts(store: MilvusStore) -> list[str]:
    names = store.client().list_collections()
    return sorted(n.removeprefix(lay.prefix(NAME)) for n in names if n.startswith(lay.prefix(NAME)))


def _write_e(store: MilvusStore) -> None:
    result = store.write_records(NAME, [one_chunk_record("e", "epsilon words")])
    store.set_vectors(NAME, [p.chunk_id for p in result.pending], EYE[2:3])


def test_a_layout1_collection_is_read_unchanged_and_nothing_is_written_fake_vectors(
    location: str,
) -> None:
    store = MilvusStore(location)
    try:
        before = snapshot(store, NAME)
        _check_reads(store)
        store.flush()
        assert snapshot(store, NAME) == before
        assert "layout" not in store.meta(NAME)
    finally:
        store.close()
    store = MilvusStore(location)  # closing wrote nothing either
    try:
        assert snapshot(store, NAME) == before
    finally:
        store.close()


def test_the_first_write_migrates_layout1_to_the_current_layout_fake_vectors(
    location: str,
) -> None:
    store = MilvusStore(location)
    try:
        _write_e(store)
        assert store.meta(NAME)["layout"] == lay.LAYOUT
        assert _parts(store) == ["_chunks_2"]
        _check_reads(store, extra=1)
        assert _hits(store, 2)[0] == ("e", 1.0)
        # an unchanged chunk of an updated record keeps its vector (found via the body's list)
        again = one_chunk_record("a", "alpha words")
        kept = store.write_records(
            NAME, [type(again)("a", {}, {}, "alpha words", "new", again.chunks)]
        )
        assert (kept.updated, kept.reused, kept.pending) == (1, 0, [])
        # another record's content: its vector is reused across records
        copy = store.write_records(NAME, [one_chunk_record("f", "beta words")])
        assert (copy.added, copy.reused, copy.pending) == (1, 1, [])
        assert sorted(r for r, _ in _hits(store, 1)[:2]) == ["b", "f"]
    finally:
        store.close()


def _killed_migration(location: str, where: str) -> None:
    killed_migration(location, where, "_vectors", NAME, "e", "epsilon words")


def test_a_migration_killed_before_its_commit_point_is_redone_by_the_next_write_fake_vectors(
    location: str,
) -> None:
    _killed_migration(location, "copy")
    store = MilvusStore(location)
    try:
        left = snapshot(store, NAME)
        assert "layout" not in store.meta(NAME)  # still layout 1, whole
        assert _parts(store) == ["_chunks", "_chunks_2", "_hashes", "_records", "_vectors"]
        _check_reads(store)
        assert snapshot(store, NAME) == left  # reading wrote nothing, not even the cleanup
        _write_e(store)
        assert store.meta(NAME)["layout"] == lay.LAYOUT
        assert _parts(store) == ["_chunks_2"]  # the leftover dropped, redone
        _check_reads(store, extra=1)
    finally:
        store.close()


def test_a_migration_killed_after_its_commit_point_is_cleaned_by_the_next_write_fake_vectors(
    location: str,
) -> None:
    _killed_migration(location, "drop")
    store = MilvusStore(location)
    try:
        assert store.meta(NAME)["layout"] == lay.LAYOUT
        assert "_vectors" in _parts(store)  # the old parts outlived the kill
        _check_reads(store)  # the killed write's record "e" was never committed
        _write_e(store)
        assert _parts(store) == ["_chunks_2"]
        _check_reads(store, extra=1)
    finally:
        store.close()
