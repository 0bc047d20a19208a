"""Conversation memory on real chats (SGD + Topical-Chat) with the real model (all-MiniLM-L6-v2).

Three of the ~40 synthetic users (assigned by crc32 of the conversation id, see datasets.py) are
loaded, each with a few of their conversations, to keep embedding quick on a shared machine:
- user-16 and user-15 each own one SGD restaurant-booking dialogue;
- user-25 owns no restaurant dialogue (Topical-Chat conversations only).
The expected conversations are read from the data files, never from the memory's output.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from tokenizers import Tokenizer

from semsearch.memory.conversation import ConversationMemory
from tests.conftest import shared_path
from tests.memory.datasets import Conversation, load_conversations

pytestmark = pytest.mark.slow

RESTAURANT_QUESTION = "Where should we eat tonight? Make a reservation please."
USERS = ("user-16", "user-15", "user-25")
OTHERS_PER_USER = 2  # non-restaurant conversations loaded per user, besides the restaurant ones


def _subset(conversations: list[Conversation]) -> list[Conversation]:
    chosen = []
    for user in USERS:
        mine = [c for c in conversations if c.user_id == user]
        chosen += [c for c in mine if "restaurants" in c.topics]
        chosen += [c for c in mine if "restaurants" not in c.topics][:OTHERS_PER_USER]
    return chosen


@pytest.fixture(scope="module")
def loaded(tmp_path_factory, minilm) -> Iterator[tuple[ConversationMemory, list[Conversation]]]:
    conversations = _subset(load_conversations(shared_path("conversations")))
    path = tmp_path_factory.mktemp("memory") / "chat.embed.db"
    memory = ConversationMemory(str(path), embedder=minilm)  # embeds in the background
    for c in conversations:
        memory.add_conversation(
            c.user_id, c.conversation_id, c.turns, topics=c.topics, created_at=c.created_at
        )
    memory.close(drain=True, timeout=600)
    reopened = ConversationMemory(str(path), embedder=minilm, background=False)
    assert reopened.backfill().embedded == 0  # the worker embedded everything
    yield reopened, conversations
    reopened.close()


def _restaurant_conversations(conversations: list[Conversation], user: str) -> set[str]:
    return {
        c.conversation_id for c in conversations if c.user_id == user and "restaurants" in c.topics
    }


def test_the_data_has_the_users_this_test_needs(loaded):
    _, conversations = loaded
    assert len(_restaurant_conversations(conversations, "user-16")) == 1
    assert len(_restaurant_conversations(conversations, "user-15")) == 1
    assert _restaurant_conversations(conversations, "user-25") == set()


def test_restaurant_question_recalls_the_users_own_restaurant_dialogue(loaded):
    memory, conversations = loaded
    for user in ("user-16", "user-15"):
        hits = memory.search(user, RESTAURANT_QUESTION, limit=3, min_score=0.45)
        assert hits, f"{user} recalled nothing"
        assert {h.message.conversation_id for h in hits} == _restaurant_conversations(
            conversations, user
        )
        assert all(h.message.user_id == user for h in hits)


def test_a_user_without_such_dialogue_gets_nothing_from_the_first_user(loaded):
    memory, conversations = loaded
    first_user_ids = {
        m.id
        for c in conversations
        if c.user_id == "user-16"
        for m in memory.recent("user-16", c.conversation_id, n=1000)
    }
    hits = memory.search("user-25", RESTAURANT_QUESTION, limit=50, min_score=None)
    assert hits  # user-25 has messages; they just are not about restaurants
    assert all(h.message.user_id == "user-25" for h in hits)
    assert not first_user_ids & {h.message.id for h in hits}
    assert (
        memory.search("user-25", RESTAURANT_QUESTION, limit=5, min_score=0.45, mode="semantic")
        == []
    )
    ctx = memory.context("user-25", "new-chat", RESTAURANT_QUESTION, min_score=None, semantic=10)
    assert all(i.message.user_id == "user-25" for i in ctx.items if i.message is not None)


@pytest.mark.parametrize("budget", [15, 40, 80, 160, 400, 4000])
def test_context_never_exceeds_the_budget_counted_independently(loaded, minilm, budget):
    memory, conversations = loaded
    # an independent tokenizer instance read from the model's own tokenizer.json
    tokenizer = Tokenizer.from_file(str(Path(minilm.path) / "tokenizer.json"))
    tokenizer.no_padding()  # the file pads and truncates to 128 for the model's input
    tokenizer.no_truncation()

    def count(text: str) -> int:
        return len(tokenizer.encode(text, add_special_tokens=False).ids)

    current = next(
        c for c in conversations if c.user_id == "user-16" and "restaurants" not in c.topics
    )
    ctx = memory.context(
        "user-16", current.conversation_id, RESTAURANT_QUESTION,
        recent=20, semantic=3, token_budget=budget, min_score=0.45,
    )  # fmt: skip
    assert sum(count(i.content) for i in ctx.items) <= budget
    assert [i.tokens for i in ctx.items] == [count(i.content) for i in ctx.items]
    assert ctx.tokens == sum(i.tokens for i in ctx.items)
    assert ctx.items[-1].source == "query" and ctx.items[-1].content == RESTAURANT_QUESTION
    recent = [i.message.message_index for i in ctx.of("recent")]
    n = len(current.turns)
    assert recent == list(range(n - len(recent), n))  # the newest part of the window
    if budget == 4000:
        assert len(recent) == 20 and len(ctx.of("semantic")) == 3 and ctx.dropped == 0
        assert {i.message.conversation_id for i in ctx.of("semantic")} == (
            _restaurant_conversations(conversations, "user-16")
        )
