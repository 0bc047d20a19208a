"""A collection dropped or replaced by ANOTHER connection, on every backend (fake embedder).

The handle of the first connection must notice (IndexNotFound with a hint) instead of
answering empty results or writing into the new collection of the same name, and a write
refused for its vector dimension must write nothing.
"""

from __future__ import annotations

import pytest

from semsearch.embedders.fake import FakeEmbedder
from semsearch.errors import DimensionMismatch, IndexNotFound


def _every_verb(coll):
    return {
        "search": lambda: coll.search("hello"),
        "keyword search": lambda: coll.search("hello", mode="keyword"),
        "count": coll.count,
        "get": lambda: coll.get("x"),
        "ids": coll.ids,
        "find": coll.find,
        "stats": coll.stats,
        "upsert": lambda: coll.upsert([{"id": "z", "text": "new"}]),
        "delete": lambda: coll.delete("x"),
        "reindex": coll.reindex,
    }


def test_a_drop_by_another_connection_raises_index_not_found_fake_embedder(store) -> None:
    db1 = store.connect()
    c1 = db1.collection("n", embedder=FakeEmbedder(8))
    c1.upsert([{"id": "x", "text": "hello world"}])
    db2 = store.connect()  # after the first write: a Milvus Lite folder must exist to be read
    try:
        assert db2.drop_collection("n") is True
        for verb, call in _every_verb(c1).items():
            with pytest.raises(IndexNotFound) as info:
                call()
            assert "'n' no longer exists" in info.value.message, verb
            assert "db.collection('n')" in (info.value.hint or ""), verb
        assert db2.collections() == []  # the refused upsert created nothing
    finally:
        db1.close()
        db2.close()


def test_an_old_handle_never_writes_into_a_collection_created_again_fake_embedder(store) -> None:
    db1 = store.connect()
    c1 = db1.collection("n", embedder=FakeEmbedder(8))
    c1.upsert([{"id": "x", "text": "hello world"}])
    db2 = store.connect()  # after the first write: a Milvus Lite folder must exist to be read
    try:
        db2.drop_collection("n")
        c2 = db2.collection("n", embedder=FakeEmbedder(16))
        c2.upsert([{"id": "w", "text": "other words"}])
        with pytest.raises(IndexNotFound) as info:
            c1.upsert([{"id": "y", "text": "why"}])
        assert "dropped and created again" in info.value.message
        assert c2.ids() == ["w"]  # nothing from the refused call was written
        assert c2.stats().dim == 16
    finally:
        db1.close()
        db2.close()


class _WrongDim(FakeEmbedder):
    """Claims the collection's model id ``fake:32`` but gives 16-d vectors."""

    def __init__(self) -> None:
        super().__init__(16)
        self.model_id = "fake:32"


def test_a_dimension_mismatch_at_upsert_writes_nothing_fake_embedder(database) -> None:
    coll = database.collection("dims", embedder=FakeEmbedder(32))
    coll.upsert([{"id": "a", "text": "alpha"}])
    coll.embedder = _WrongDim()
    with pytest.raises(DimensionMismatch) as info:
        coll.upsert([{"id": "b", "text": "beta gamma"}, {"id": "a", "text": "changed"}])
    assert "nothing was written" in info.value.message
    assert coll.get("b") == []
    assert [r.text for r in coll.get("a")] == ["alpha"]
    assert coll.stats().records == 1
