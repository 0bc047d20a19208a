"""Writes that stop half-way on Milvus Lite leave nothing behind once the next write runs.

A write finds the chunks it replaces through the record's stored chunk list (primary-key
lookups), so chunks written by a write that died before its record row are listed nowhere; the
``writing`` mark that write left makes the next write sweep them (real Milvus Lite, fake
8-d vectors; the "death" is an exception raised where the record rows would be written).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from semsearch.stores.milvus import mutate
from semsearch.stores.milvus.store import MilvusStore
from tests.milvus.helpers import fake8_store, one_chunk_record

NAME = "half"


def _write(store: MilvusStore, rid: str, text: str) -> None:
    result = store.write_records(NAME, [one_chunk_record(rid, text)])
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
    real = mutate.upsert

    def upsert(store: MilvusStore, collection: str, kind: str, rows: Any, **kw: Any) -> None:
        if kind == "records":
            raise RuntimeError("process killed")
        real(store, collection, kind, rows, **kw)

    monkeypatch.setattr(mutate, "upsert", upsert)


def test_chunks_of_a_write_that_died_are_swept_by_the_next_write_fake_vectors(
    store: MilvusStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    _write(store, "kept", "alpha words")
    with monkeypatch.context() as m:
        _dies_before_record_rows(m)
        with pytest.raises(RuntimeError):
            _write(store, "kept", "beta words")  # an update that died after its chunk rows
        # its new chunk is written and the old one deleted; the record row still says alpha
        assert _texts(store, "kept") == ["beta words"]
        assert store.get_records(NAME, ["kept"])[0].text == "alpha words"
        with pytest.raises(RuntimeError):
            _write(store, "never", "delta words")  # swept the orphan first, then died too
        assert _texts(store, "kept") == []
        assert _texts(store, "never") == ["delta words"]
    _write(store, "kept", "gamma words")
    assert _texts(store, "kept") == ["gamma words"]
    assert _texts(store, "never") == []  # a record that was never written has no chunks
    assert store.get_records(NAME, ["never"]) == []


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
