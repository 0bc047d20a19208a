"""Index health on every backend (issue 12): the state is stored in the collection's options,
read back by a second connection, and a quarantine refuses semantic and hybrid search while
keyword search answers, marked degraded. Plumbing with the fake embedder."""

from __future__ import annotations

import pytest

from semsearch.embedders.fake import FakeEmbedder
from semsearch.errors import IndexUnhealthy
from semsearch.health import begin_sync, end_sync, quarantine, read_health
from tests.contract.conftest import StoreUnderTest

RECORDS = [
    {"id": "a", "text": "the heron waits by the river"},
    {"id": "b", "text": "a kettle of tea on the stove"},
]


def test_health_round_trips_and_quarantine_gates_search_fake_embedder(
    store: StoreUnderTest,
) -> None:
    with store.connect() as db:
        coll = db.collection("notes", embedder=FakeEmbedder())
        coll.upsert(RECORDS)
        assert read_health(db.store, "notes").state == "ok"  # never written: ok
        begin_sync(db.store, "notes", "test sync")
        assert read_health(db.store, "notes").state == "syncing"  # owner (this process) alive
        quarantine(db.store, "notes", "the embedder failed mid-batch")

    with store.connect() as db:  # another connection reads what the first stored
        coll = db.collection("notes", create=False, embedder=FakeEmbedder())
        health = read_health(db.store, "notes")
        assert (health.state, health.reason) == ("quarantined", "the embedder failed mid-batch")
        for mode in ("semantic", "hybrid"):
            with pytest.raises(IndexUnhealthy):
                coll.search("heron river", mode=mode)
        keyword = coll.search("heron", mode="keyword")
        assert keyword.ids == ["a"] and keyword.degraded
        assert coll.stats().health == health.to_dict()

        end_sync(db.store, "notes", errors=[], failed=["broken.md"])
        assert read_health(db.store, "notes").failed == ("broken.md",)
        assert coll.search("heron river", mode="semantic", min_score=None).ids[0] == "a"
        end_sync(db.store, "notes", errors=[], failed=[])
        assert read_health(db.store, "notes").state == "ok"
        assert not coll.search("heron", mode="keyword").degraded
