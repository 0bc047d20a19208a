"""Values read from an SQLite file are kept only while nothing commits to it.

ReadCache on its own, and through the SQLite store: a collection's row and a chunk's sentence
windows read by one store object change as soon as another store object (another process, as
far as SQLite can tell: another connection) commits. Real SQLite files; the fake embedder
(dimension 8) only does the plumbing.
"""

from __future__ import annotations

import sqlite3

import semsearch
from semsearch.embedders.fake import FakeEmbedder
from semsearch.stores.base import CollectionInfo
from semsearch.stores.sqlite.read_cache import ReadCache
from semsearch.stores.sqlite.store import SQLiteStore


def _reader(calls: list[list[str]], values: dict[str, int]):  # type: ignore[no-untyped-def]
    def read(keys: list[str]) -> dict[str, int]:
        calls.append(list(keys))
        return {k: values[k] for k in keys if k in values}

    return read


def test_read_cache_reads_each_key_once_per_file_state_and_keeps_absent_keys() -> None:
    conn = sqlite3.connect(":memory:")
    cache: ReadCache[str, int] = ReadCache(10)
    calls: list[list[str]] = []
    read = _reader(calls, {"a": 1, "b": 2})
    assert cache.get_many((conn, 1), ["a", "x"], read) == {"a": 1}
    assert cache.get_many((conn, 1), ["a", "b", "x"], read) == {"a": 1, "b": 2}
    assert calls == [["a", "x"], ["b"]]  # "x" was read once and is known to be absent
    assert cache.get_many((conn, 2), ["a"], read) == {"a": 1}  # a commit: read again
    assert calls[-1] == ["a"]
    assert cache.get_many(None, ["a"], read) == {"a": 1}  # nothing to key on: always read
    assert cache.get_many(None, ["a"], read) == {"a": 1}
    assert calls[-2:] == [["a"], ["a"]]


def test_read_cache_drops_the_least_recently_used_past_its_size_but_answers_in_full() -> None:
    conn = sqlite3.connect(":memory:")
    cache: ReadCache[str, int] = ReadCache(2)
    calls: list[list[str]] = []
    read = _reader(calls, {"a": 1, "b": 2, "c": 3})
    assert cache.get_many((conn, 1), ["a", "b", "c"], read) == {"a": 1, "b": 2, "c": 3}
    calls.clear()
    assert cache.get_many((conn, 1), ["b", "c"], read) == {"b": 2, "c": 3}
    assert calls == []  # "a" was the oldest, dropped
    assert cache.get_many((conn, 1), ["a"], read) == {"a": 1}
    assert calls == [["a"]]


def test_fake_embedder_get_collection_sees_another_connections_commit(tmp_path) -> None:
    path = tmp_path / "c.embed.db"
    with semsearch.connect(path) as first, semsearch.connect(path) as second:
        first.collection("c", embedder=FakeEmbedder(8)).upsert([{"id": "a", "text": "x"}])
        store = first.store
        assert isinstance(store, SQLiteStore)
        before = store.get_collection("c")
        assert before is not None and before.options.get("marker") is None
        info = second.store.get_collection("c")
        assert info is not None
        second.store.update_collection(
            CollectionInfo(info.name, info.schema_json, info.model_id, info.dim,
                           {**info.options, "marker": 7}, info.created_at)
        )  # fmt: skip
        after = store.get_collection("c")
        assert after is not None and after.options["marker"] == 7
        after.options["marker"] = 8  # a caller's change to what it got is its own
        again = store.get_collection("c")
        assert again is not None and again.options["marker"] == 7


def test_fake_embedder_window_vectors_follow_a_delete_by_another_connection(tmp_path) -> None:
    path = tmp_path / "w.embed.db"
    old = "The first sentence is long enough. The second sentence is long enough too."
    with semsearch.connect(path) as first, semsearch.connect(path) as second:
        coll = first.collection("c", embedder=FakeEmbedder(8))
        coll.upsert([{"id": "a", "text": old}])
        store = coll.store
        assert isinstance(store, SQLiteStore)
        (chunk_id,) = [r[0] for r in sqlite3.connect(path).execute("SELECT id FROM chunks")]
        before = store.window_vectors("c", [chunk_id])
        assert chunk_id in before and len(before[chunk_id].spans) == 2
        second.collection("c", embedder=FakeEmbedder(8)).delete(["a"])
        assert store.window_vectors("c", [chunk_id]) == {}  # the chunk is gone
