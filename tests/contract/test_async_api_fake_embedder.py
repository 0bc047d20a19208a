"""The contract suite's core cases through the async API (``semsearch.aconnect``), on every store.

Expected values come from the hand-made table in ``spells.py`` and from the fake embedder's own
vectors (numpy), never from a store. Also: the event loop keeps running while a slow embedder
works, and ConversationMemory's async twin keeps each user's messages apart.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator

import pytest
import pytest_asyncio

import semsearch
from semsearch.embedders.fake import FakeEmbedder
from semsearch.errors import InvalidFilter, InvalidRecord
from tests.contract.conftest import StoreUnderTest
from tests.contract.helpers import as_stored
from tests.contract.spells import ALL_IDS, FILTER_CASES, RECORDS, SCHEMA

pytestmark = pytest.mark.asyncio


@pytest_asyncio.fixture
async def adb(store: StoreUnderTest) -> AsyncIterator[semsearch.AsyncDatabase]:
    db = await semsearch.aconnect(store.location)
    yield db
    await db.close()


async def _spells(adb: semsearch.AsyncDatabase, emb: FakeEmbedder | None = None):
    coll = await adb.collection("spells", schema=SCHEMA, embedder=emb or FakeEmbedder(32))
    await coll.upsert(RECORDS)
    return coll


async def test_async_upsert_reports_records_and_chunks_then_skips_unchanged(adb) -> None:
    emb = FakeEmbedder(32)
    coll = await adb.collection("spells", schema=SCHEMA, embedder=emb)
    report = await coll.upsert(RECORDS)
    assert (report.added, report.updated, report.unchanged, report.chunks_embedded) == (7, 0, 0, 7)
    calls = emb.texts_embedded
    again = await coll.upsert(RECORDS)
    assert (again.added, again.unchanged, again.chunks_embedded) == (0, 7, 0)
    assert emb.texts_embedded == calls
    assert await coll.count() == 7
    assert await coll.ids() == ALL_IDS


async def test_async_get_delete_and_invalid_record_writes_nothing(adb) -> None:
    coll = await _spells(adb)
    got = await coll.get(["wish", "missing", "alarm"])
    assert [r.id for r in got] == ["wish", "alarm"]
    assert got[0].text == "wish is the mightiest spell of all"
    assert await coll.delete(["wish", "missing"]) == 1
    assert await coll.count() == 6
    with pytest.raises(InvalidRecord):
        await coll.upsert([{"id": "bad", "text": "x", "level": "three"}])
    assert await coll.count() == 6


@pytest.mark.parametrize(("where", "expected"), FILTER_CASES[:8])
async def test_async_find_applies_filters(adb, where, expected) -> None:
    coll = await _spells(adb)
    assert sorted(r.id for r in await coll.find(where)) == expected


async def test_async_find_orders_and_pages(adb) -> None:
    coll = await _spells(adb)
    assert [r.id for r in await coll.find(order_by="-level")] == [
        "wish", "fireball", "alarm", "cure", "detect", "light", "note"]  # fmt: skip
    assert [r.id for r in await coll.find(limit=2, offset=5)] == ["note", "wish"]
    with pytest.raises(InvalidFilter):
        await coll.find({"undeclared": 1})


async def test_async_semantic_scores_are_the_fake_embedders_cosines(adb, store) -> None:
    coll = await _spells(adb)
    emb = FakeEmbedder(32)
    query = "magic flame burst"
    docs = as_stored(store.backend, emb.embed_documents([r["text"] for r in RECORDS]))
    expected = dict(
        zip([r["id"] for r in RECORDS], (docs @ emb.embed_query(query)).tolist(), strict=True)
    )
    result = await coll.search(query, limit=10, min_score=None)
    assert result.mode == "semantic"
    assert result.ids == sorted(expected, key=lambda i: (-expected[i], i))
    for hit in result:
        assert hit.score == pytest.approx(expected[hit.id], abs=1e-5)


async def test_async_search_by_vector_matches_search_by_text(adb) -> None:
    coll = await _spells(adb)
    vector = FakeEmbedder(32).embed_query(RECORDS[3]["text"])
    result = await coll.search_by_vector(vector * 7.0, limit=3, min_score=None)  # normalised
    assert result.ids[0] == "fireball"
    assert result[0].score == pytest.approx(1.0, abs=1e-5)
    by_text = await coll.search(RECORDS[3]["text"], limit=3, min_score=None)
    assert result.ids == by_text.ids


async def test_async_keyword_and_hybrid_search(adb) -> None:
    coll = await _spells(adb)
    keyword = await coll.search("flame", mode="keyword")
    assert keyword.ids == ["fireball"] and keyword[0].score > 0
    hybrid = await coll.search("burst of flame", mode="hybrid", limit=3)
    assert hybrid.ids[0] == "fireball"
    comps = hybrid[0].components
    assert comps is not None and comps["keyword"].rank == 1 and comps["semantic"].rank == 1


async def test_async_outage_keeps_records_pending_and_reindex_recovers(adb) -> None:
    down = FakeEmbedder(32, fail=True)
    coll = await adb.collection("spells", schema=SCHEMA, embedder=down)
    report = await coll.upsert(RECORDS)
    assert (report.added, report.chunks_pending, report.chunks_failed) == (7, 0, 7)
    assert report.errors
    down.fail = False
    assert (await coll.reindex()).chunks_embedded == 7
    stats = await coll.stats()
    assert (stats.records, stats.embedded, stats.pending, stats.failed) == (7, 7, 0, 0)


async def test_async_database_lists_and_drops_collections(adb) -> None:
    await _spells(adb)
    await adb.collection("other", embedder=FakeEmbedder(32))
    assert await adb.collections() == ["other", "spells"]
    assert await adb.drop_collection("spells") is True
    assert await adb.collections() == ["other"]


class _SlowEmbedder(FakeEmbedder):
    """The fake embedder, 0.3 s per batch: long enough to see whether the loop was blocked."""

    def _embed_batch(self, texts, kind):
        time.sleep(0.3)
        return super()._embed_batch(texts, kind)


async def test_async_upsert_does_not_block_the_event_loop(adb) -> None:
    coll = await adb.collection("slow", embedder=_SlowEmbedder(32))
    ticks: list[float] = []

    async def ticker() -> None:
        while True:
            ticks.append(time.monotonic())
            await asyncio.sleep(0.01)

    task = asyncio.create_task(ticker())
    started = time.monotonic()
    await coll.upsert([{"id": "a", "text": "slow to embed"}])
    elapsed = time.monotonic() - started
    task.cancel()
    assert elapsed >= 0.3
    # a blocked loop would tick once or twice; a free one ticks every ~10 ms meanwhile
    assert len([t for t in ticks if started <= t <= started + elapsed]) >= 10


async def test_async_memory_recalls_one_users_messages_only(adb) -> None:
    memory = await adb.memory(embedder=FakeEmbedder(32), background=False)
    try:
        await memory.add_message("alice", "c1", "user", "my cat sleeps all day")
        await memory.add_message("bob", "c2", "user", "my cat sleeps on the sofa")
        assert (await memory.backfill()).embedded == 2
        hits = await memory.search("alice", "cat sleeps", min_score=None)
        assert [h.message.user_id for h in hits] == ["alice"]
        recent = await memory.recent("bob", "c2")
        assert [m.content for m in recent] == ["my cat sleeps on the sofa"]
        assert await memory.delete_user("alice") == 1
        assert await memory.search("alice", "cat", min_score=None) == []
    finally:
        await memory.close()


async def test_aconnect_refuses_bad_max_workers() -> None:
    with pytest.raises(semsearch.InvalidQuery):
        await semsearch.aconnect(":memory:", max_workers=0)
