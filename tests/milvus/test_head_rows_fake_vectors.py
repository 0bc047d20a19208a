"""Layout 3's head rows: records without chunks, vectors set on a head row after its batch was
written, and a vector for an old version's first chunk arriving after the record changed.

Real Milvus Lite, fake 8-d vectors (rows of the identity matrix).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from semsearch.filters import parse_filter
from semsearch.results import Chunk
from semsearch.schema import Schema
from semsearch.stores.base import ChunkWrite, CollectionInfo, RecordWrite, WindowSet
from semsearch.stores.milvus import layout as lay
from semsearch.stores.milvus.store import MilvusStore
from tests.milvus.helpers import one_chunk_record

NAME = "heads"
SCHEMA = Schema.from_types({"kind": "str"})
EYE = np.eye(8, dtype=np.float32)


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def _empty(rid: str, kind: str) -> RecordWrite:
    """A record with a field and no text: no chunk."""
    fields = {"kind": kind}
    return RecordWrite(rid, fields, fields, "", _sha(rid + kind), [])


def _with_kind(rid: str, text: str, kind: str) -> RecordWrite:
    fields = {"kind": kind}
    chunk = ChunkWrite(Chunk(text, 0, 0, len(text)), text, _sha(text))
    return RecordWrite(rid, fields, fields, text, _sha(text + kind), [chunk])


@pytest.fixture
def store(tmp_path: Path) -> Iterator[MilvusStore]:
    s = MilvusStore(f"milvus-lite://{tmp_path / 'heads.db'}")
    s.create_collection(CollectionInfo(NAME, SCHEMA.to_json(), "fake:8", 8))
    try:
        yield s
    finally:
        s.close()


def test_a_record_without_chunks_is_a_record_and_never_a_chunk_fake_vectors(
    store: MilvusStore,
) -> None:
    result = store.write_records(NAME, [_empty("e", "spell"), _with_kind("a", "alpha", "spell")])
    assert (result.added, len(result.pending)) == (2, 1)  # only "a" has a chunk to embed
    store.set_vectors(NAME, [result.pending[0].chunk_id], EYE[:1])
    assert store.count(NAME) == 2
    assert store.list_ids(NAME) == ["a", "e"]
    assert store.record_hashes(NAME, ["e"]) == {"e": _sha("espell")}
    [empty] = store.get_records(NAME, ["e"])
    assert (empty.text, empty.fields) == ("", {"kind": "spell"})
    spell = parse_filter({"kind": "spell"}, SCHEMA)
    assert [r.id for r in store.find(NAME, spell, 10, 0, [])] == ["a", "e"]
    s = store.stats(NAME)
    assert (s.records, s.chunks, s.embedded, s.pending, s.failed) == (2, 1, 1, 0, 0)
    assert store.stats(NAME, spell).records == 2
    assert store.pending_chunks(NAME, 10) == []
    # every vector search, ANN, exact or filtered, finds "a" only (the head row of "e" holds
    # the placeholder [1, 0, ...], which is EYE[0]: it would score 1.0 if it were searched)
    assert [h.record_id for h in store.vector_search(NAME, EYE[0], 10, None)] == ["a"]
    assert [h.record_id for h in store.vector_search(NAME, EYE[0], 10, None, exact=True)] == ["a"]
    assert [h.record_id for h in store.vector_search(NAME, EYE[0], 10, spell)] == ["a"]
    assert store.keyword_search(NAME, "spell", 10, None) == []
    assert store.chunk_vectors(NAME, ["e"]) == {}
    assert store.delete_records(NAME, ["e"]) == 1
    assert (store.count(NAME), store.get_records(NAME, ["e"])) == (1, [])


def test_a_record_that_loses_its_text_keeps_only_its_head_fake_vectors(
    store: MilvusStore,
) -> None:
    result = store.write_records(NAME, [_with_kind("a", "alpha", "spell")])
    store.set_vectors(NAME, [result.pending[0].chunk_id], EYE[:1])
    store.write_records(NAME, [_empty("a", "monster")])
    assert [(r.text, r.fields) for r in store.get_records(NAME, ["a"])] == [
        ("", {"kind": "monster"})
    ]
    s = store.stats(NAME)
    assert (s.records, s.chunks, s.embedded) == (1, 0, 0)
    assert store.vector_search(NAME, EYE[0], 10, None) == []
    store.write_records(NAME, [_with_kind("a", "beta", "spell")])  # and gets text again
    s = store.stats(NAME)
    assert (s.records, s.chunks, s.pending) == (1, 1, 1)


def test_a_vector_for_a_written_head_row_keeps_the_body_fake_vectors(
    store: MilvusStore,
) -> None:
    result = store.write_records(NAME, [_with_kind("a", "alpha", "spell")])
    assert store.count(NAME) == 1  # a read: the batch is written with a placeholder
    [pending] = store.pending_chunks(NAME, 10)
    assert pending.chunk_id == result.pending[0].chunk_id  # the same id handed out
    store.set_vectors(NAME, [pending.chunk_id], EYE[3:4])  # the stored head row is rewritten
    assert [(r.text, r.fields) for r in store.get_records(NAME, ["a"])] == [
        ("alpha", {"kind": "spell"})
    ]
    assert store.record_hashes(NAME, ["a"]) == {"a": _sha("alphaspell")}
    [hit] = store.vector_search(NAME, EYE[3], 1, None)
    assert (hit.record_id, round(hit.score, 4)) == ("a", 1.0)
    assert store.get_chunks(NAME, [pending.chunk_id])[pending.chunk_id].text == "alpha"
    assert store.get_chunks(NAME, [hit.chunk_id])[hit.chunk_id].text == "alpha"


@pytest.mark.parametrize("written", [False, True])
def test_a_vector_for_an_old_version_of_a_head_chunk_is_not_stored_fake_vectors(
    store: MilvusStore, written: bool
) -> None:
    """The head row's id is the same for every version of a record; the id handed out for
    its chunk is not, so a late vector (or failure, or windows) for the old text is dropped
    instead of landing on the new text. ``written``: the new version's batch was written
    (with a placeholder) before the late vector came, else it is still held back."""
    old = store.write_records(NAME, [one_chunk_record("a", "old text")]).pending[0]
    store.mark_failed(NAME, [old.chunk_id], "down")  # old: stored, failed
    new = store.write_records(NAME, [one_chunk_record("a", "new text")]).pending[0]
    assert new.chunk_id != old.chunk_id
    if written:
        assert store.count(NAME) == 1
    store.set_vectors(NAME, [old.chunk_id], EYE[5:6])
    store.mark_failed(NAME, [old.chunk_id], "late failure")
    windows = WindowSet(np.array([[0, 3]], dtype=np.int32), EYE[:1].astype(np.float16))
    store.set_windows(NAME, {old.chunk_id: windows})
    assert store.window_vectors(NAME, [old.chunk_id]) == {}
    assert store.get_chunks(NAME, [old.chunk_id]) == {}
    s = store.stats(NAME)
    assert (s.chunks, s.embedded, s.pending, s.failed) == (1, 0, 1, 0)
    assert [p.chunk_id for p in store.pending_chunks(NAME, 10)] == [new.chunk_id]
    store.set_vectors(NAME, [new.chunk_id], EYE[6:7])
    [hit] = store.vector_search(NAME, EYE[6], 1, None)
    assert (hit.record_id, round(hit.score, 4)) == ("a", 1.0)
    assert store.get_records(NAME, ["a"])[0].text == "new text"


def test_head_and_part_ids_are_stable_and_distinct_plumbing() -> None:
    assert lay.head_id("a") == lay.head_id("a") != lay.head_id("b")
    assert lay.part_id(1, "a", "h") != lay.part_id(2, "a", "h") != lay.part_id(1, "a", "g")
    ids = [lay.head_id("a"), lay.part_id(1, "a", "h")]
    assert all(0 <= i < 2**63 for i in ids)


def test_a_forgotten_ticket_leaves_its_chunk_pending_until_handed_out_again_fake_vectors(
    store: MilvusStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    from semsearch.stores.milvus import writes

    monkeypatch.setattr(writes, "TICKETS_MAX", 2)
    handed = [
        store.write_records(NAME, [one_chunk_record(f"r{i}", f"text {i}")]).pending[0].chunk_id
        for i in range(3)
    ]  # r0's ticket is the oldest of three: forgotten
    store.set_vectors(NAME, handed, EYE[:3])
    s = store.stats(NAME)
    assert (s.embedded, s.pending) == (2, 1)
    [again] = store.pending_chunks(NAME, 10)
    assert (again.record_id, again.chunk_id) == ("r0", handed[0])
    store.set_vectors(NAME, [again.chunk_id], EYE[:1])
    assert store.stats(NAME).embedded == 3
    [hit] = store.vector_search(NAME, EYE[0], 1, None)
    assert (hit.record_id, round(hit.score, 4)) == ("r0", 1.0)
