"""Writes that stop half-way on Milvus Lite leave nothing behind once the next write runs.

A write finds the chunks it replaces through the body in the record's head row (primary-key
lookups), so chunks written by a write that died before its head row are listed nowhere; the
``writing`` mark that write left makes the next write sweep them (real Milvus Lite, fake
8-d vectors; the "death" is an exception raised where the head rows would be written, after
the other chunk rows of the write).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from semsearch.results import Chunk
from semsearch.stores.base import ChunkWrite, RecordWrite
from semsearch.stores.milvus import mutate
from semsearch.stores.milvus.store import MilvusStore
from tests.milvus.helpers import fake8_store, one_chunk_record

NAME = "half"


def _two_chunks(rid: str, first: str, second: str) -> RecordWrite:
    """A record whose text is ``first`` and ``second`` joined by a space, one chunk each."""
    text = f"{first} {second}"
    chunks = [
        ChunkWrite(
            Chunk(first, 0, 0, len(first)), first, hashlib.sha256(first.encode()).hexdigest()
        ),
        ChunkWrite(
            Chunk(second, 1, len(first) + 1, len(text)),
            second,
            hashlib.sha256(second.encode()).hexdigest(),
        ),
    ]
    return RecordWrite(rid, {}, {}, text, hashlib.sha256(text.encode()).hexdigest(), chunks)


def _write(store: MilvusStore, rid: str, text: str) -> None:
    _store(store, one_chunk_record(rid, text))


def _write2(store: MilvusStore, rid: str, word: str) -> None:
    _store(store, _two_chunks(rid, f"{word} words", f"{word} more"))


def _store(store: MilvusStore, record: RecordWrite) -> None:
    result = store.write_records(NAME, [record])
    vectors = np.eye(8, dtype=np.float32)[: len(result.pending)]
    store.set_vectors(NAME, [p.chunk_id for p in result.pending], vectors)


def _texts(store: MilvusStore, rid: str) -> list[str]:
    rows = store.rows_by(NAME, "chunks", "record_id", [rid], ["text"])
    return sorted(r["text"] for r in rows)


@pytest.fixture
def store(tmp_path: Path) -> Iterator[MilvusStore]:
    with fake8_store(tmp_path, NAME) as s:
        yield s


def _dies_before_record_rows(monkeypatch: pytest.MonkeyPatch) -> None:
    """Raise where the head rows (the commit marker: rows with a record hash) are written."""
    real = mutate.upsert

    def upsert(store: MilvusStore, collection: str, kind: str, rows: Any, **kw: Any) -> None:
        if any(r.get("record_hash") for r in rows):
            raise RuntimeError("process killed")
        real(store, collection, kind, rows, **kw)

    monkeypatch.setattr(mutate, "upsert", upsert)


def test_chunks_of_a_write_that_died_are_swept_by_the_next_write_fake_vectors(
    store: MilvusStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    _write2(store, "kept", "alpha")
    with monkeypatch.context() as m:
        _dies_before_record_rows(m)
        with pytest.raises(RuntimeError):
            _write2(store, "kept", "beta")  # an update that died after its other chunk rows
        # its second chunk is written; the head row (first chunk + body) still says alpha,
        # and nothing of alpha was deleted (stale rows go after the head)
        assert _texts(store, "kept") == ["alpha more", "alpha words", "beta more"]
        assert store.get_records(NAME, ["kept"])[0].text == "alpha words alpha more"
        with pytest.raises(RuntimeError):
            _write2(store, "never", "delta")  # swept the orphan first, then died too
        assert _texts(store, "kept") == ["alpha more", "alpha words"]
        assert _texts(store, "never") == ["delta more"]
    _write2(store, "kept", "gamma")
    assert _texts(store, "kept") == ["gamma more", "gamma words"]
    assert _texts(store, "never") == []  # a record that was never written has no chunks
    assert store.get_records(NAME, ["never"]) == []


def test_a_one_chunk_update_that_died_leaves_the_old_record_whole_fake_vectors(
    store: MilvusStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    _write(store, "kept", "alpha words")
    with monkeypatch.context() as m:
        _dies_before_record_rows(m)
        with pytest.raises(RuntimeError):
            _write(store, "kept", "beta words")  # its one chunk is its head row: not written
    assert _texts(store, "kept") == ["alpha words"]
    assert store.get_records(NAME, ["kept"])[0].text == "alpha words"
    assert store.record_hashes(NAME, ["kept"]) == {
        "kept": hashlib.sha256(b"alpha words").hexdigest()
    }


def test_an_update_replaces_exactly_the_chunks_its_record_lists_fake_vectors(
    store: MilvusStore,
) -> None:
    _write(store, "a", "first text")
    _write(store, "b", "other text")
    _write(store, "a", "second text")
    assert _texts(store, "a") == ["second text"]
    assert _texts(store, "b") == ["other text"]
    hits = store.vector_search(NAME, np.eye(8, dtype=np.float32)[0], 10, None)
    assert sorted(h.record_id for h in hits) == ["a", "b"]  # one vector each, none stale
