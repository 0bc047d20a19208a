"""The Milvus store's cheaper writes (issue 23): what each write asks of Milvus, and that the
counts and pending chunks stay right when vectors come in several calls, fail, or never come.

Real Milvus Lite, fake 8-d vectors (rows of the identity matrix), one chunk per record. The
client's ``upsert`` and ``query`` are wrapped to record which Milvus collection each call hits.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from semsearch.schema import Schema
from semsearch.stores.base import CollectionInfo, RecordWrite
from semsearch.stores.milvus import mutate
from semsearch.stores.milvus.store import MilvusStore
from tests.milvus.helpers import fake8_store, one_chunk_record

NAME = "cost"
_REAL_WRITE_ROWS = mutate.write_rows


def _kinds(calls: list[tuple[str, str]], method: str) -> list[str]:
    """The part kinds (records, chunks, ...) hit by ``method`` calls, in call order."""
    return [re.sub(r"_\d+$", "", name).rsplit("_", 1)[-1] for m, name in calls if m == method]


@pytest.fixture
def store(tmp_path: Path) -> Iterator[MilvusStore]:
    with fake8_store(tmp_path, NAME) as s:
        yield s


@pytest.fixture
def calls(store: MilvusStore, monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, str]]:
    """Milvus calls as (method, Milvus collection): "query", and "upsert" for any write of
    rows (the client's row upsert, or milvus_columns' column-wise write)."""
    return _record_calls(store, monkeypatch)


def _record_calls(store: MilvusStore, monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, str]]:
    """See the ``calls`` fixture."""
    seen: list[tuple[str, str]] = []
    client = store.client()
    for method in ("upsert", "query"):

        def wrapped(name: str, *a: Any, _real: Any = getattr(client, method), _m: str = method,
                    **k: Any) -> Any:  # fmt: skip
            seen.append((_m, name))
            return _real(name, *a, **k)

        setattr(client, method, wrapped)

    def columns(c: Any, name: str, rows: Any, lite: bool, partial: bool = False,
                _real: Any = mutate.write_rows) -> None:  # fmt: skip
        if not partial:  # a partial write goes through client.upsert, recorded above
            seen.append(("upsert", name))
        _real(c, name, rows, lite, partial)

    monkeypatch.setattr(mutate, "write_rows", columns)
    return seen


def test_a_fresh_write_writes_each_row_once_with_its_vector_fake_vectors(
    store: MilvusStore, calls: list[tuple[str, str]]
) -> None:
    result = store.write_records(NAME, [one_chunk_record(f"r{i}", f"text {i}") for i in range(3)])
    # the rows wait in the process for their vectors (the vector is in the chunk row)
    assert [k for k in _kinds(calls, "upsert") if k != "meta"] == []
    calls.clear()
    store.set_vectors(NAME, [p.chunk_id for p in result.pending], np.eye(8, dtype=np.float32)[:3])
    # no read, one write: one-chunk records are their head rows (layout 3), which carry the
    # bodies; no other chunk row comes first
    assert _kinds(calls, "query") == []
    assert [k for k in _kinds(calls, "upsert") if k != "meta"] == ["chunks"]
    s = store.stats(NAME)
    assert (s.records, s.chunks, s.embedded, s.pending, s.failed) == (3, 3, 3, 0, 0)


def test_rows_held_back_are_written_with_placeholders_before_a_read_fake_vectors(
    store: MilvusStore,
) -> None:
    """``embed=False``: no vectors come; the next read writes the batch, chunks pending, and
    vector search finds none of them (the placeholder vector is never returned)."""
    result = store.write_records(NAME, [one_chunk_record(f"r{i}", f"text {i}") for i in range(3)])
    assert store.count(NAME) == 3
    s = store.stats(NAME)
    assert (s.records, s.chunks, s.embedded, s.pending, s.failed) == (3, 3, 0, 3, 0)
    query = np.eye(8, dtype=np.float32)[0]
    assert store.vector_search(NAME, query, 10, None) == []
    assert store.vector_search(NAME, query, 10, None, exact=True) == []
    assert [h.record_id for h in store.keyword_search(NAME, "text", 10, None)] != []
    ids = sorted(p.chunk_id for p in result.pending)
    assert sorted(p.chunk_id for p in store.pending_chunks(NAME, 10)) == ids
    store.set_vectors(NAME, ids, np.eye(8, dtype=np.float32)[:3])  # a reindex: rows rewritten
    assert store.stats(NAME).embedded == 3
    assert store.vector_search(NAME, np.eye(8, dtype=np.float32)[1], 1, None)[0].score == (
        pytest.approx(1.0, abs=1e-6)
    )


def test_the_same_ids_asked_twice_without_a_write_are_one_query_fake_vectors(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A collection this process did not create (written, closed, opened again)."""
    with fake8_store(tmp_path, NAME) as first_store:
        first_store.write_records(NAME, [one_chunk_record("a", "alpha")])
    store = MilvusStore(f"milvus-lite://{tmp_path / f'{NAME}.db'}")
    store.meta(NAME)  # its metadata row, read once
    calls = _record_calls(store, monkeypatch)
    first = store.record_hashes(NAME, ["a", "b"])
    again = store.record_hashes(NAME, ["b", "a"])
    assert first == again == {"a": hashlib.sha256(b"alpha").hexdigest()}
    assert _kinds(calls, "query") == ["chunks"]  # head rows, by primary key
    store.write_records(NAME, [one_chunk_record("b", "beta")])  # a write: asked again
    calls.clear()
    assert set(store.record_hashes(NAME, ["a", "b"])) == {"a", "b"}
    assert _kinds(calls, "query") == ["chunks"]  # head rows, by primary key
    store.close()


def test_counts_and_pending_chunks_follow_vector_rows_fake_vectors(store: MilvusStore) -> None:
    result = store.write_records(NAME, [one_chunk_record(f"r{i}", f"text {i}") for i in range(3)])
    ids = [p.chunk_id for p in result.pending]
    store.set_vectors(NAME, ids[:2], np.eye(8, dtype=np.float32)[:2])
    s = store.stats(NAME)
    assert (s.chunks, s.embedded, s.pending, s.failed) == (3, 2, 1, 0)
    assert [p.chunk_id for p in store.pending_chunks(NAME, 10)] == [ids[2]]

    store.mark_failed(NAME, [ids[2]], "embedder down")
    s = store.stats(NAME)
    assert (s.embedded, s.pending, s.failed) == (2, 0, 1)
    assert [p.chunk_id for p in store.pending_chunks(NAME, 10)] == [ids[2]]  # failed ones last

    store.set_vectors(NAME, [ids[2]], np.eye(8, dtype=np.float32)[2:3])  # a reindex
    s = store.stats(NAME)
    assert (s.embedded, s.pending, s.failed) == (3, 0, 0)
    assert store.pending_chunks(NAME, 10) == []


def test_pending_chunks_pending_first_then_failed_fake_vectors(
    store: MilvusStore,
) -> None:
    result = store.write_records(NAME, [one_chunk_record(f"r{i}", f"text {i}") for i in range(5)])
    ids = [p.chunk_id for p in result.pending]
    store.set_vectors(NAME, [ids[0]], np.eye(8, dtype=np.float32)[:1])
    store.mark_failed(NAME, ids[3:], "bad text")
    # within each group sorted by id; a shorter answer takes the pending ones first
    assert [p.chunk_id for p in store.pending_chunks(NAME, 10)] == sorted(ids[1:3]) + sorted(
        ids[3:]
    )
    three = [p.chunk_id for p in store.pending_chunks(NAME, 3)]
    assert three[:2] == sorted(ids[1:3]) and three[2] in ids[3:]
    assert store.pending_chunks(NAME, 1)[0].embed_text in ("text 1", "text 2")


def test_an_update_keeps_its_unchanged_chunks_vector_fake_vectors(store: MilvusStore) -> None:
    # the update finds its chunk through the record's chunk list and keeps the vector
    first = store.write_records(NAME, [one_chunk_record("a", "same text")])
    store.set_vectors(NAME, [first.pending[0].chunk_id], np.eye(8, dtype=np.float32)[:1])
    again = one_chunk_record("a", "same text")
    again = RecordWrite("a", {"x": 1}, {}, "same text", "other-hash", again.chunks)
    result = store.write_records(NAME, [again])
    assert result.pending == [] and result.reused == 0 and result.updated == 1
    assert store.stats(NAME).embedded == 1


def test_the_writing_mark_stays_until_the_store_closes_fake_vectors(tmp_path: Path) -> None:
    location = f"milvus-lite://{tmp_path / 'mark.db'}"
    store = MilvusStore(location)
    store.create_collection(CollectionInfo(NAME, Schema.from_types({}).to_json(), "fake:8", 8))
    store.write_records(NAME, [one_chunk_record("a", "alpha")])
    store.write_records(NAME, [one_chunk_record("b", "beta")])
    assert store.meta(NAME).get("writing") is True
    store.close()
    reopened = MilvusStore(location)
    try:
        assert "writing" not in reopened.meta(NAME)
        assert reopened.list_ids(NAME) == ["a", "b"]
    finally:
        reopened.close()


def test_writes_ask_once_whether_windows_exist_until_they_are_created_fake_vectors(
    store: MilvusStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every record write asks for the windows of the chunks it replaces; on Milvus Lite a
    collection without windows is found to have none once, and windows written later in the
    process are still pruned with their content."""
    from semsearch.stores.base import WindowSet
    from semsearch.stores.milvus.windows import windows_name

    client = store.client()
    asked: list[str] = []
    real = client.has_collection
    monkeypatch.setattr(
        client, "has_collection", lambda n, *a, **k: asked.append(n) or real(n, *a, **k)
    )
    name = windows_name(NAME)
    for i in range(3):
        store.write_records(NAME, [one_chunk_record(f"r{i}", f"text {i}")])
    assert asked.count(name) == 1
    [pending] = store.write_records(NAME, [one_chunk_record("w", "old words")]).pending
    store.set_vectors(NAME, [pending.chunk_id], np.eye(8, dtype=np.float32)[:1])
    spans = np.array([[0, 3], [4, 9]], dtype=np.int32)
    store.set_windows(NAME, {pending.chunk_id: WindowSet(spans, np.eye(8, dtype=np.float16)[:2])})
    assert set(store.window_vectors(NAME, [pending.chunk_id])) == {pending.chunk_id}
    store.write_records(NAME, [one_chunk_record("w", "new words")])  # old content: no chunk
    store.flush()
    old_hash = hashlib.sha256(b"old words").hexdigest()
    left = client.query(name, filter=f'content_hash == "{old_hash}"', output_fields=["spans"])
    assert left == []


def test_new_records_ask_nothing_about_windows_fake_vectors(
    store: MilvusStore, calls: list[tuple[str, str]]
) -> None:
    """Only a stored record that changes can leave windows to prune: a batch of new records
    reads no chunk rows for them (it was a ``record_id`` filter over every chunk row)."""
    from semsearch.stores.base import WindowSet

    [pending] = store.write_records(NAME, [one_chunk_record("w", "old words")]).pending
    store.set_vectors(NAME, [pending.chunk_id], np.eye(8, dtype=np.float32)[:1])
    spans = np.array([[0, 3], [4, 9]], dtype=np.int32)
    store.set_windows(NAME, {pending.chunk_id: WindowSet(spans, np.eye(8, dtype=np.float16)[:2])})
    calls.clear()
    store.write_records(NAME, [one_chunk_record(f"n{i}", f"new {i}") for i in range(3)])
    assert "chunks" not in _kinds(calls, "query")
    calls.clear()
    store.write_records(NAME, [one_chunk_record("w", "other words")])  # a stored record
    assert "chunks" in _kinds(calls, "query")


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def test_a_collection_created_here_is_filled_without_reading_records_fake_vectors(
    store: MilvusStore, calls: list[tuple[str, str]]
) -> None:
    """This process created the collection, so it knows every record in it: new records
    are written with no read at all, and the hashes it answers follow writes and deletes."""
    eye = np.eye(8, dtype=np.float32)
    for start in (0, 3):  # two batches, as ingestion writes them
        batch = [one_chunk_record(f"r{i}", f"text {i}") for i in range(start, start + 3)]
        result = store.write_records(NAME, batch)
        store.set_vectors(NAME, [p.chunk_id for p in result.pending], eye[start : start + 3])
    assert _kinds(calls, "query") == []
    store.write_records(NAME, [one_chunk_record("r0", "changed")])
    store.delete_records(NAME, ["r1"])
    calls.clear()
    assert store.record_hashes(NAME, ["r0", "r1", "r5", "x"]) == {
        "r0": _sha("changed"),
        "r5": _sha("text 5"),
    }
    assert _kinds(calls, "query") == []
    assert store.list_ids(NAME) == ["r0", "r2", "r3", "r4", "r5"]  # what Milvus holds


def test_after_a_write_that_raised_record_hashes_are_read_from_milvus_fake_vectors(
    store: MilvusStore, calls: list[tuple[str, str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A write that stops half-way may have stored some record rows: the process no longer
    trusts what it knew and asks Milvus."""
    result = store.write_records(NAME, [one_chunk_record("a", "alpha")])
    store.set_vectors(NAME, [p.chunk_id for p in result.pending], np.eye(8, dtype=np.float32)[:1])
    real = mutate.write_rows
    monkeypatch.setattr(mutate, "write_rows", _records_fail)
    result = store.write_records(NAME, [one_chunk_record("b", "beta")])
    with pytest.raises(RuntimeError):
        store.set_vectors(NAME, [p.chunk_id for p in result.pending], np.eye(8)[1:2])
    monkeypatch.setattr(mutate, "write_rows", real)
    calls.clear()
    assert store.record_hashes(NAME, ["a", "b"]) == {"a": _sha("alpha")}
    assert _kinds(calls, "query") == ["chunks"]  # head rows, by primary key


def test_a_held_back_batch_a_read_failed_to_write_is_read_from_milvus_fake_vectors(
    store: MilvusStore, calls: list[tuple[str, str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A read writes a held-back batch first, outside any write block: when its record rows
    fail, the process asks Milvus again too."""
    store.write_records(NAME, [one_chunk_record("a", "alpha")])  # held back: no vector yet
    real = mutate.write_rows
    monkeypatch.setattr(mutate, "write_rows", _records_fail)
    with pytest.raises(RuntimeError):
        store.count(NAME)
    monkeypatch.setattr(mutate, "write_rows", real)
    calls.clear()
    assert store.record_hashes(NAME, ["a"]) == {}
    assert _kinds(calls, "query") == ["chunks"]  # head rows, by primary key


def _records_fail(c: Any, name: str, rows: Any, lite: bool, partial: bool = False) -> None:
    """mutate.write_rows that writes chunk rows and fails on head rows (rows with a record
    hash: the record rows of layout 3)."""
    if any(r.get("record_hash") for r in rows):
        raise RuntimeError("killed before the record rows")
    _REAL_WRITE_ROWS(c, name, rows, lite, partial)


def test_lite_writes_leave_flushing_to_lite_and_flush_vector_parts_last_fake_vectors(
    store: MilvusStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On Milvus Lite no write flushes, however many rows it writes (Lite flushes by itself,
    as for raw pymilvus); ``flush()`` flushes what was written (layout 3: the chunk part
    only; with more parts, vector parts go last, as Lite starts building a flushed part's
    vector index at once, in the background)."""
    from semsearch.stores.milvus import access

    monkeypatch.setattr(access, "FLUSH_ROWS", 2)
    client = store.client()
    flushed: list[str] = []
    real = client.flush
    monkeypatch.setattr(client, "flush", lambda n, *a, **k: flushed.append(n) or real(n, *a, **k))
    result = store.write_records(NAME, [one_chunk_record(f"r{i}", f"t {i}") for i in range(3)])
    store.set_vectors(NAME, [p.chunk_id for p in result.pending], np.eye(8, dtype=np.float32)[:3])
    assert flushed == []  # 3 rows into each part, past FLUSH_ROWS
    store.flush()
    assert _kinds([("flush", n) for n in flushed], "flush") == ["chunks"]  # the only part
    assert store.count(NAME) == 3
