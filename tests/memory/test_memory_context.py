"""The context builder: de-duplication, pruning order and the budget (fake embedder; the token
counter is a plain whitespace word count so every expected number is countable by eye)."""

from __future__ import annotations

from pathlib import Path

import pytest

from semsearch import InvalidQuery
from semsearch.embedders.fake import FakeEmbedder
from semsearch.memory.context import ContextItem, fit_to_budget
from semsearch.memory.conversation import ConversationMemory


def words(text: str) -> int:
    return len(text.split())


def item(source, name, tokens, score=None):
    return ContextItem(source, "user", name, tokens, score)


# -- fit_to_budget: the pure pruning rule -------------------------------------------------------

RECENT = [item("recent", f"r{i}", 10) for i in range(5)]  # oldest r0 ... newest r4
SEMANTIC = [item("semantic", f"s{i}", 10, 0.9 - i / 10) for i in range(3)]  # best s0
QUERY = item("query", "q", 5)


def names(items):
    return [i.content for i in items]


def test_everything_fits_in_context_order():
    items, dropped = fit_to_budget(QUERY, RECENT, SEMANTIC, 1000)
    assert names(items) == ["s0", "s1", "s2", "r0", "r1", "r2", "r3", "r4", "q"]
    assert dropped == 0


@pytest.mark.parametrize(
    ("budget", "kept"),
    [
        # ranking: r4 s0 r3 s1 r2 s2 r1 r0 -> dropped from the end: r0, r1, s2, r2, s1, ...
        (85, ["s0", "s1", "s2", "r0", "r1", "r2", "r3", "r4", "q"]),
        (84, ["s0", "s1", "s2", "r1", "r2", "r3", "r4", "q"]),
        (75, ["s0", "s1", "s2", "r1", "r2", "r3", "r4", "q"]),
        (65, ["s0", "s1", "s2", "r2", "r3", "r4", "q"]),
        (64, ["s0", "s1", "r2", "r3", "r4", "q"]),
        (45, ["s0", "s1", "r3", "r4", "q"]),
        (35, ["s0", "r3", "r4", "q"]),
        (25, ["s0", "r4", "q"]),
        (15, ["r4", "q"]),
        (14, ["q"]),
        (5, ["q"]),
    ],
)
def test_pruning_drops_oldest_recent_and_weakest_matches_first(budget, kept):
    items, dropped = fit_to_budget(QUERY, RECENT, SEMANTIC, budget)
    assert names(items) == kept
    assert dropped == 9 - len(kept)
    assert sum(i.tokens for i in items) <= budget


def test_query_longer_than_budget_is_an_error():
    with pytest.raises(InvalidQuery) as err:
        fit_to_budget(QUERY, RECENT, SEMANTIC, 4)
    assert "token_budget" in err.value.hint


# -- context(): the whole builder on a real SQLite file --------------------------------------


@pytest.fixture
def memory(tmp_path: Path):
    m = ConversationMemory(
        str(tmp_path / "ctx.embed.db"),
        embedder=FakeEmbedder(32),
        background=False,
        token_counter=words,
    )
    yield m
    m.close()


def test_context_combines_recent_window_matches_and_query_with_fake_embedder(memory):
    memory.add_conversation("u", "old", [("user", "my dog loves long walks"), ("assistant", "ok")])
    memory.add_message("someone", "x", "user", "my dog loves long walks in the park")
    memory.add_conversation(
        "u", "now", [("user", "hi"), ("assistant", "hello, how can I help"), ("user", "dog walks")]
    )
    memory.backfill()
    ctx = memory.context("u", "now", "dog walks", min_score=0.5, mode="semantic")
    assert [(i.source, i.content) for i in ctx.items] == [
        ("semantic", "my dog loves long walks"),
        ("recent", "hi"),
        ("recent", "hello, how can I help"),
        ("query", "dog walks"),  # the just-added copy of the query is not repeated
    ]
    assert [i.tokens for i in ctx.items] == [5, 1, 5, 2]
    assert ctx.tokens == 13 and ctx.dropped == 0 and ctx.tokenizer == "custom"
    semantic = ctx.of("semantic")[0]
    assert 0.5 <= semantic.score <= 1.0 and semantic.message.conversation_id == "old"
    assert all(i.score is None for i in ctx.items if i.source != "semantic")
    assert ctx.messages()[-1] == {"role": "user", "content": "dog walks"}


def test_context_deduplicates_repeated_matches_with_fake_embedder(memory):
    for c in ("a", "b", "c"):
        memory.add_message("u", c, "user", "where is the train station")
    memory.add_message("u", "d", "user", "the train station is closed")
    memory.add_message("u", "now", "user", "hello")
    memory.backfill()
    ctx = memory.context("u", "now", "train station", semantic=3, min_score=None)
    contents = [i.content for i in ctx.of("semantic")]
    assert sorted(contents) == ["the train station is closed", "where is the train station"]
    # a match repeating a message of the recent window is left out
    memory.add_message("u", "now", "user", "where is the train station")
    ctx2 = memory.context("u", "now", "station?", semantic=3, min_score=None)
    assert [i.content for i in ctx2.of("recent")] == ["hello", "where is the train station"]
    assert [i.content for i in ctx2.of("semantic")] == ["the train station is closed"]


def test_context_respects_budget_and_keeps_newest_recent_with_fake_embedder(memory):
    turns = [("user", f"turn number {i} here") for i in range(10)]  # 4 words each
    memory.add_conversation("u", "now", turns)
    memory.add_message("u", "old", "user", "number turn here again")
    memory.backfill()
    for budget in (3, 7, 11, 20, 29, 100):
        ctx = memory.context(
            "u", "now", "turn here", recent=10, semantic=1, token_budget=budget, min_score=None
        )
        assert ctx.tokens == sum(words(i.content) for i in ctx.items) <= budget
        recent = [i.message.message_index for i in ctx.of("recent")]
        assert recent == list(range(10 - len(recent), 10))  # the newest, contiguous
        assert ctx.items[-1].source == "query"
    with pytest.raises(InvalidQuery):
        memory.context("u", "now", "turn here", token_budget=1)


def test_context_without_semantic_or_recent_and_bad_arguments(memory):
    memory.add_message("u", "now", "user", "hello")
    memory.backfill()
    only_query = memory.context("u", "now", "question", recent=0, semantic=0)
    assert [i.source for i in only_query.items] == ["query"]
    for bad in ({"recent": -1}, {"semantic": -1}, {"token_budget": 0}, {"recent": 1.5}):
        with pytest.raises(InvalidQuery):
            memory.context("u", "now", "q", **bad)
    with pytest.raises(InvalidQuery):
        memory.context("u", "now", "   ")


def test_context_degrades_to_recent_when_embedder_fails(tmp_path: Path):
    embedder = FakeEmbedder(32)
    memory = ConversationMemory(
        str(tmp_path / "m.embed.db"), embedder=embedder, background=False, token_counter=words
    )
    memory.add_message("u", "old", "user", "tea time")
    memory.add_message("u", "now", "user", "coffee time")
    memory.backfill()
    embedder.fail = True
    ctx = memory.context("u", "now", "tea time", min_score=None, mode="semantic")
    assert ctx.degraded and "unavailable" in ctx.degraded_reason
    assert [i.source for i in ctx.items] == ["recent", "query"]
    # hybrid (the default) keeps the matches its keyword leg finds, and says what is missing
    ctx = memory.context("u", "now", "tea please", min_score=None)
    assert ctx.degraded and "keyword matches only" in ctx.degraded_reason
    assert [(i.source, i.content) for i in ctx.items] == [
        ("semantic", "tea time"), ("recent", "coffee time"), ("query", "tea please")
    ]  # fmt: skip
    memory.close()


def test_default_token_count_is_the_embedders_tokenizer(tmp_path: Path):
    memory = ConversationMemory(
        str(tmp_path / "m.embed.db"), embedder=FakeEmbedder(32), background=False
    )
    ctx = memory.context("u", "c", "Hello, world!", semantic=0)
    # the fake embedder's tokens are words and single punctuation marks: Hello , world !
    assert ctx.items[0].tokens == 4 and ctx.tokenizer == "fake:32"
    memory.close()
