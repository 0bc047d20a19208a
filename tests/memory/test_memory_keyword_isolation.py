"""Conversation memory's keyword scores come from the user's own messages only, on every
contract backend: BM25's IDF and average length are counted over the messages inside the
user's scope, so another user's words never move them (a score that did would tell a user
how many of other users' messages hold a word). Fake embedder: keyword plumbing; the
expected BM25 values are computed here from the formula, not from the code."""

from __future__ import annotations

import math

import pytest

from semsearch.embedders.fake import FakeEmbedder
from semsearch.memory.conversation import ConversationMemory

ALICE = [
    "peanut allergy noted",  # 3 terms
    "peanut peanut butter toast",  # 4
    "dentist on friday",  # 3
    "call the school",  # 3
    "buy milk",  # 2
    "rain all day",  # 3
]


def rel(ratio: float) -> float:
    """semsearch's relative length: |d| / avgdl up to 1.5 times the average, then growing
    with the logarithm: 1.5 * (1 + ln(ratio / 1.5))."""
    return ratio if ratio <= 1.5 else 1.5 * (1 + math.log(ratio / 1.5))


def bm25(tf: int, length: int, n: int, df: int, avgdl: float) -> float:
    """Okapi BM25 of one term (Robertson & Zaragoza 2009; k1=1.2, b=0.75) with Lucene's IDF,
    as every store ranks (semsearch/keyword_query.py)."""
    k1, b = 1.2, 0.75
    idf = math.log(1 + (n - df + 0.5) / (df + 0.5))
    return idf * tf * (k1 + 1) / (tf + k1 * (1 - b + b * rel(length / avgdl)))


@pytest.fixture
def memory(database):
    m = ConversationMemory(database, embedder=FakeEmbedder(16), background=False)
    yield m
    m.close()


def scores(memory: ConversationMemory, user: str, query: str) -> dict[str, float]:
    hits = memory.search(user, query, mode="keyword", min_score=None, limit=50)
    return {h.message.content: h.score for h in hits}


def test_keyword_scores_come_from_the_users_own_messages_fake_embedder(memory):
    for text in ALICE:
        memory.add_message("alice", "c", "user", text)
    before = scores(memory, "alice", "peanut")
    assert set(before) == {ALICE[0], ALICE[1]}
    avgdl = 18 / 6
    expected = {ALICE[0]: bm25(1, 3, 6, 2, avgdl), ALICE[1]: bm25(2, 4, 6, 2, avgdl)}
    assert before == pytest.approx(expected, rel=1e-5)
    # another user's many messages holding the word change nothing of alice's
    for i in range(40):
        memory.add_message("bob", f"b{i % 3}", "user", f"peanut peanut peanut {i}")
    assert scores(memory, "alice", "peanut") == pytest.approx(before, rel=1e-9)
    assert len(scores(memory, "bob", "peanut")) == 40


def test_hybrid_keyword_leg_ignores_other_users_fake_embedder(memory):
    for text in ALICE:
        memory.add_message("alice", "c", "user", text)
    before = memory.search("alice", "peanut toast", mode="hybrid", min_score=None, limit=6)
    for i in range(30):
        memory.add_message("bob", "b", "user", f"toast toast {i}")
    after = memory.search("alice", "peanut toast", mode="hybrid", min_score=None, limit=6)
    assert [(h.message.id, h.score) for h in after] == [(h.message.id, h.score) for h in before]


def test_a_query_without_matching_words_scans_substrings_in_the_users_scope_fake_embedder(
    memory,
):
    memory.add_message("alice", "c", "user", "我在图书馆看书")
    memory.add_message("bob", "c", "user", "图书馆关门了")
    found = scores(memory, "alice", "图书馆")
    assert list(found) == ["我在图书馆看书"] and found["我在图书馆看书"] >= 1


def test_sqlite_counts_inside_the_filter_from_its_sidecar_without_reading_messages_fake_embedder(
    tmp_path, monkeypatch
):
    import semsearch.memory.keyword as memory_keyword

    memory = ConversationMemory(
        str(tmp_path / "m.embed.db"), embedder=FakeEmbedder(16), background=False
    )
    for text in ALICE:
        memory.add_message("alice", "c", "user", text)
    for i in range(40):
        memory.add_message("bob", "b", "user", f"peanut peanut peanut {i}")
    coll = memory.collection
    coll.store.refresh_keyword_index(coll.name)  # the sidecar is current: no fallback
    monkeypatch.setattr(memory_keyword, "_scope", lambda *a: pytest.fail("messages were read"))
    expected = {ALICE[0]: bm25(1, 3, 6, 2, 3.0), ALICE[1]: bm25(2, 4, 6, 2, 3.0)}
    assert scores(memory, "alice", "peanut") == pytest.approx(expected, rel=1e-5)
    # caught up from the change log after more writes, still alice's statistics only
    memory.add_message("alice", "c", "user", "no nuts here")  # 3 terms: N 7, avgdl 3
    memory.add_message("bob", "b", "user", "peanut")
    expected = {ALICE[0]: bm25(1, 3, 7, 2, 3.0), ALICE[1]: bm25(2, 4, 7, 2, 3.0)}
    assert scores(memory, "alice", "peanut") == pytest.approx(expected, rel=1e-5)
    memory.close()


def test_a_long_message_of_several_chunks_is_one_hit_fake_embedder(memory):
    # FakeEmbedder(16)'s window cuts this message into several chunks, each holding "zebra";
    # a store ranking chunks returned it once per chunk and pushed the short one out
    long = " ".join(f"zebra filler{i} words here and there" for i in range(120))
    memory.add_message("alice", "c", "user", long)
    memory.add_message("alice", "c", "user", "a zebra once")
    assert memory.collection.stats().chunks > 3
    found = memory.search("alice", "zebra", mode="keyword", min_score=None, limit=5)
    assert sorted(h.message.content for h in found) == sorted([long, "a zebra once"])
