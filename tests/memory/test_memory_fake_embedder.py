"""Conversation memory plumbing with the deterministic fake embedder (no meaning is tested here).

The fake embedder hashes words to vectors, so identical texts score 1.0 and texts sharing no word
score near 0: enough to check isolation, filters, ordering, deletes and counts.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import pytest

from semsearch import InvalidQuery, InvalidRecord, connect
from semsearch.embedders.fake import FakeEmbedder
from semsearch.memory.conversation import ConversationMemory


def _ids(hits):
    return [h.message.id for h in hits]


def test_add_message_stores_at_once_as_pending_with_fake_embedder(fake_memory):
    ref = fake_memory.add_message("alice", "c1", "user", "hello there")
    assert ref.message_index == 0
    assert fake_memory.recent("alice", "c1")[0].content == "hello there"
    stats = fake_memory.stats()
    assert (stats.messages, stats.embedded, stats.pending) == (1, 0, 1)
    # pending messages are not semantically searchable until embedded, but their words are
    assert fake_memory.search("alice", "hello there", min_score=None, mode="semantic") == []
    assert _ids(fake_memory.search("alice", "hello there", mode="keyword")) == [ref.id]
    assert _ids(fake_memory.search("alice", "hello there")) == [ref.id]  # hybrid
    assert fake_memory.backfill().embedded == 1
    assert _ids(fake_memory.search("alice", "hello there")) == [ref.id]


def test_message_index_counts_per_conversation_and_survives_reopen(tmp_path: Path):
    path = str(tmp_path / "m.embed.db")
    memory = ConversationMemory(path, embedder=FakeEmbedder(32), background=False)
    a = [memory.add_message("u", "c1", "user", f"m{i}").message_index for i in range(3)]
    b = memory.add_message("u", "c2", "user", "other").message_index
    c = memory.add_message("v", "c1", "user", "other user").message_index
    memory.close()
    assert (a, b, c) == ([0, 1, 2], 0, 0)
    again = ConversationMemory(path, embedder=FakeEmbedder(32), background=False)
    assert again.add_message("u", "c1", "assistant", "m3").message_index == 3
    assert [m.content for m in again.recent("u", "c1")] == ["m0", "m1", "m2", "m3"]
    again.close()


def test_recent_returns_last_n_in_order_with_fake_embedder(fake_memory):
    turns = [("user" if i % 2 == 0 else "assistant", f"turn {i}") for i in range(7)]
    fake_memory.add_conversation("u", "c", turns)
    last = fake_memory.recent("u", "c", n=3)
    assert [m.content for m in last] == ["turn 4", "turn 5", "turn 6"]
    assert [m.role for m in last] == ["user", "assistant", "user"]
    assert [m.message_index for m in last] == [4, 5, 6]


def test_search_never_returns_another_users_message_with_fake_embedder(fake_memory):
    fake_memory.add_message("alice", "c1", "user", "my cat is called Tom")
    bob = fake_memory.add_message("bob", "c1", "user", "my cat is called Tom")
    fake_memory.backfill()
    hits = fake_memory.search("bob", "my cat is called Tom", min_score=None, limit=10)
    assert _ids(hits) == [bob.id]
    assert fake_memory.search("carol", "my cat is called Tom", min_score=None) == []


def test_search_scope_filters_topics_and_conversations_with_fake_embedder(fake_memory):
    r1 = fake_memory.add_message("u", "c1", "user", "pasta dinner", topics=["food"])
    r2 = fake_memory.add_message("u", "c2", "user", "pasta recipe", topics=["food", "cooking"])
    r3 = fake_memory.add_message("u", "c3", "user", "pasta night", topics=["travel"])
    fake_memory.backfill()
    kw = {"min_score": None, "limit": 10}
    assert set(_ids(fake_memory.search("u", "pasta", **kw))) == {r1.id, r2.id, r3.id}
    assert set(_ids(fake_memory.search("u", "pasta", topics=["food"], **kw))) == {r1.id, r2.id}
    assert set(_ids(fake_memory.search("u", "pasta", topics=["cooking", "travel"], **kw))) == {
        r2.id,
        r3.id,
    }
    assert _ids(fake_memory.search("u", "pasta", conversation_id="c2", **kw)) == [r2.id]
    excluded = fake_memory.search("u", "pasta", exclude_conversation="c1", **kw)
    assert set(_ids(excluded)) == {r2.id, r3.id}


def test_search_min_score_and_limit_with_fake_embedder(fake_memory):
    same = fake_memory.add_message("u", "c", "user", "alpha beta gamma")
    fake_memory.add_message("u", "c", "user", "delta epsilon zeta")
    fake_memory.backfill()
    hits = fake_memory.search("u", "alpha beta gamma", min_score=0.99, mode="semantic")
    assert _ids(hits) == [same.id]
    assert hits[0].score == pytest.approx(1.0, abs=1e-5)
    assert len(fake_memory.search("u", "alpha", min_score=None, limit=1)) == 1


@pytest.mark.parametrize("limit", [0, -1, 1001, True, 2.0])
@pytest.mark.parametrize("mode", ["semantic", "keyword", "hybrid"])
def test_search_refuses_a_limit_outside_1_to_1000_as_collection_search_does(
    fake_memory, mode, limit
):
    """limit=0 returned [] silently; Collection.search raises for it, and now memory does."""
    fake_memory.add_message("u", "c", "user", "alpha beta gamma")
    with pytest.raises(InvalidQuery, match=r"limit must be an int in \[1, 1000\]") as err:
        fake_memory.search("u", "alpha", min_score=None, limit=limit, mode=mode)
    assert err.value.hint
    with pytest.raises(InvalidQuery, match=r"limit must be an int in \[1, 1000\]"):
        fake_memory.collection.search("alpha", limit=limit)


@pytest.mark.parametrize("bad", [None, "", "   ", 42, ["alice"], "x" * 257])
def test_user_id_is_required_and_validated(fake_memory, bad):
    with pytest.raises(InvalidRecord):
        fake_memory.add_message(bad, "c", "user", "hi")
    for call in (
        lambda: fake_memory.search(bad, "hi"),
        lambda: fake_memory.recent(bad, "c"),
        lambda: fake_memory.context(bad, "c", "hi"),
        lambda: fake_memory.delete_user(bad),
        lambda: fake_memory.delete_conversation(bad, "c"),
    ):
        with pytest.raises(InvalidQuery):
            call()
    if bad is not None:  # stats(None) means every user
        with pytest.raises(InvalidQuery):
            fake_memory.stats(bad)
    assert fake_memory.stats().messages == 0


@pytest.mark.parametrize(
    "kwargs",
    [
        {"role": "robot"},
        {"content": "   "},
        {"content": 7},
        {"topics": "food"},
        {"topics": ["ok", ""]},
        {"created_at": "yesterday"},
        {"created_at": float("nan")},  # was a raw ValueError
        {"created_at": float("inf")},
        {"created_at": 1e20},  # about 3e12 years: was a raw OverflowError
        {"created_at": "0001-01-01T00:00:00+05:00"},  # before year 1 once moved to UTC
        {"conversation_id": ""},
        # a NUL or lone surrogate: no filter can name them (was InvalidFilter, or for a topic
        # stored and then unsearchable)
        {"user_id": "u\x00"},
        {"conversation_id": "c\ud800"},
        {"topics": ["ok", "t\x00"]},
    ],
)
def test_bad_message_is_refused_and_nothing_stored(fake_memory, kwargs):
    args = {"user_id": "u", "conversation_id": "c", "role": "user", "content": "hi"} | kwargs
    with pytest.raises(InvalidRecord) as err:
        fake_memory.add_message(**args)
    assert err.value.hint
    assert fake_memory.stats().messages == 0


def test_topics_from_a_generator_are_all_kept(fake_memory):
    """The check read the generator once, and the store got what was left: nothing."""
    fake_memory.add_message("u", "c", "user", "hi", topics=(t for t in ["food", "travel"]))
    assert list(fake_memory.recent("u", "c")[0].topics) == ["food", "travel"]


def test_memory_refuses_to_take_over_a_collection_with_other_records(tmp_path: Path):
    """Before, the collection was marked as memory: its records vanished from every search,
    and ``stats()`` raised KeyError('user_id')."""
    from semsearch.schema import SchemaConflict

    with connect(tmp_path / "m.embed.db") as db:
        db.collection("chat", embedder=FakeEmbedder(32)).upsert([{"id": "doc1", "text": "notes"}])
        with pytest.raises(SchemaConflict) as err:
            ConversationMemory(db, collection="chat", embedder=FakeEmbedder(32), background=False)
        assert "collection=" in str(err.value.hint)
        assert [h.id for h in db.collection("chat").search("notes", mode="keyword")] == ["doc1"]
        memory = ConversationMemory(db, embedder=FakeEmbedder(32), background=False)
        memory.add_message("u", "c", "user", "hello")  # its own collection still works
        reopened = ConversationMemory(db, embedder=FakeEmbedder(32), background=False)
        assert reopened.stats().messages == 1


def test_created_at_is_normalised_to_utc_iso(fake_memory):
    paris = timezone(timedelta(hours=1))
    fake_memory.add_message(
        "u", "c", "user", "a", created_at=datetime(2026, 1, 2, 13, 0, tzinfo=paris)
    )
    fake_memory.add_message("u", "c", "user", "b", created_at="2026-01-02T12:30:00")
    fake_memory.add_message("u", "c", "user", "c", created_at=0)
    times = [m.created_at for m in fake_memory.recent("u", "c")]
    assert times == [
        "2026-01-02T12:00:00.000000+00:00",
        "2026-01-02T12:30:00.000000+00:00",
        "1970-01-01T00:00:00.000000+00:00",
    ]
    now = datetime.fromisoformat(fake_memory.add_message("u", "c", "user", "d").created_at)
    assert abs(now - datetime.now(UTC)) < timedelta(minutes=5)


def test_delete_conversation_removes_messages_chunks_and_vectors_with_fake_embedder(fake_memory):
    gone = fake_memory.add_conversation("u", "c1", [("user", "red apple"), ("assistant", "green")])
    kept = fake_memory.add_message("u", "c2", "user", "red apple")
    other = fake_memory.add_message("v", "c1", "user", "red apple")
    fake_memory.backfill()
    assert fake_memory.delete_conversation("u", "c1") == 2
    assert fake_memory.delete_conversation("u", "c1") == 0
    coll = fake_memory.collection
    assert coll.get([r.id for r in gone]) == []
    hits = fake_memory.search("u", "red apple", min_score=None, limit=10)
    assert _ids(hits) == [kept.id]
    assert _ids(fake_memory.search("v", "red apple", min_score=None)) == [other.id]
    assert fake_memory.recent("u", "c1") == []
    # store-level counts: 2 messages, 2 chunks left, no orphaned chunk rows
    s = coll.stats()
    assert (s.records, s.chunks, s.embedded) == (2, 2, 2)
    # the conversation starts again at index 0
    assert fake_memory.add_message("u", "c1", "user", "again").message_index == 0


def test_delete_user_removes_every_conversation_with_fake_embedder(fake_memory):
    for c in ("c1", "c2", "c3"):
        fake_memory.add_message("u", c, "user", f"hello from {c}")
    stay = fake_memory.add_message("w", "c1", "user", "hello from c1")
    fake_memory.backfill()
    assert fake_memory.delete_user("u") == 3
    assert fake_memory.search("u", "hello from c1", min_score=None) == []
    assert fake_memory.stats("u").messages == 0
    assert _ids(fake_memory.search("w", "hello from c1", min_score=None)) == [stay.id]
    assert fake_memory.collection.stats().chunks == 1


def test_delete_is_visible_to_a_second_connection(tmp_path: Path):
    path = str(tmp_path / "m.embed.db")
    writer = ConversationMemory(path, embedder=FakeEmbedder(32), background=False)
    reader = ConversationMemory(path, embedder=FakeEmbedder(32), background=False)
    writer.add_message("u", "c", "user", "secret plan")
    writer.backfill()
    assert len(reader.search("u", "secret plan")) == 1  # reader's matrix cache is now warm
    writer.delete_user("u")
    assert reader.search("u", "secret plan", min_score=None) == []
    writer.close()
    reader.close()


def test_stats_per_user_and_overall_with_fake_embedder(fake_memory):
    fake_memory.add_conversation("u", "c1", [("user", "a b"), ("assistant", "c d")], topics=["x"])
    fake_memory.add_message("u", "c2", "user", "e f", topics=["x", "y"])
    fake_memory.add_message("v", "c1", "user", "g h")
    fake_memory.backfill(user_id="u")
    u = fake_memory.stats("u")
    assert (u.messages, u.embedded, u.pending, u.failed, u.conversations) == (3, 3, 0, 0, 2)
    assert u.topics == {"x": 3, "y": 1}
    everyone = fake_memory.stats()
    assert (everyone.messages, everyone.embedded, everyone.pending) == (4, 3, 1)
    assert everyone.conversations == 3  # (u, c1), (u, c2), (v, c1)


def test_backfill_is_scoped_and_idempotent_with_fake_embedder(fake_memory):
    fake_memory.add_conversation("u", "c1", [("user", "one"), ("assistant", "two")])
    fake_memory.add_message("u", "c2", "user", "three")
    fake_memory.add_message("v", "c1", "user", "four")
    first = fake_memory.backfill(conversation_id="c1", user_id="u")
    assert (first.embedded, first.remaining, first.ok) == (2, 0, True)
    assert fake_memory.stats("u").pending == 1
    assert fake_memory.stats("v").pending == 1
    assert fake_memory.backfill(user_id="v").embedded == 1
    assert fake_memory.backfill().embedded == 1
    assert fake_memory.backfill().embedded == 0


def test_backfill_reports_embedder_failure_and_keeps_messages(tmp_path: Path):
    embedder = FakeEmbedder(32, fail=True)
    memory = ConversationMemory(str(tmp_path / "m.embed.db"), embedder=embedder, background=False)
    memory.add_message("u", "c", "user", "keep me")
    report = memory.backfill()
    assert report.error and not report.ok and report.remaining == 1
    assert memory.stats().failed == 1
    embedder.fail = False
    assert memory.backfill().embedded == 1
    assert memory.stats().failed == 0
    memory.close()


def test_health_reports_store_and_embedder(tmp_path: Path):
    embedder = FakeEmbedder(32)
    memory = ConversationMemory(str(tmp_path / "m.embed.db"), embedder=embedder, background=False)
    memory.add_message("u", "c", "user", "x")
    health = memory.health()
    assert health.ok and health.store.ok and health.embedder.ok and health.pending == 1
    assert health.worker is None
    embedder.fail = True
    sick = memory.health()
    assert not sick.ok and sick.store.ok and not sick.embedder.ok
    assert "switched off" in sick.embedder.detail
    memory.close()


def test_memory_reuses_an_existing_database_and_leaves_it_open(tmp_path: Path):
    db = connect(tmp_path / "shared.embed.db")
    memory = ConversationMemory(db, embedder="fake:32", background=False, collection="chat")
    memory.add_message("u", "c", "user", "x")
    memory.close()
    assert db.collections(include_memory=True) == ["chat"]  # still open: db works
    assert db.collections() == []  # memory is private (issue 19)
    again = ConversationMemory(db, embedder="fake:32", background=False, collection="chat")
    assert [m.content for m in again.recent("u", "c")] == ["x"]
    db.close()


def test_search_returns_full_content_of_a_long_message(fake_memory):
    long = " ".join(f"word{i}" for i in range(300))  # the fake window is 64 tokens
    ref = fake_memory.add_message("u", "c", "user", long)
    fake_memory.backfill()
    assert fake_memory.stats().embedded > 1  # several chunks
    hit = fake_memory.search("u", "word250 word251", min_score=None)[0]
    assert hit.message.id == ref.id and hit.message.content == long


def test_conversation_memory_is_exported_lazily():
    import subprocess
    import sys

    import semsearch

    assert semsearch.ConversationMemory is ConversationMemory
    assert "ConversationMemory" in semsearch.__all__
    code = "import sys, semsearch; print('semsearch.memory' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"  # `import semsearch` stays light (no worker, tenacity)


@pytest.mark.parametrize("turns", [[("user",)], ["hello"], [("user", "ok"), ("bot", "hi")]])
def test_a_bad_turn_refuses_the_whole_conversation(fake_memory, turns):
    with pytest.raises(InvalidRecord):
        fake_memory.add_conversation("u", "c", turns)
    assert fake_memory.stats().messages == 0


def test_a_vector_is_reused_within_a_user_never_across_users_plumbing(fake_memory):
    # stores reuse a vector by content hash; across users that would tell the second writer
    # that someone already stored this exact text (their message would be embedded at once)
    secret = "my locker code is 4711"
    fake_memory.add_message("alice", "c", "user", secret)
    fake_memory.backfill()
    assert fake_memory.stats("alice").embedded == 1
    fake_memory.add_message("mallory", "c", "user", secret)
    assert (fake_memory.stats("mallory").embedded, fake_memory.stats("mallory").pending) == (0, 1)
    # the same user repeating herself still reuses her own vector
    fake_memory.add_message("alice", "c2", "user", secret)
    assert (fake_memory.stats("alice").embedded, fake_memory.stats("alice").pending) == (2, 0)
