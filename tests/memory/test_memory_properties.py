"""Property test: random interleavings of add, backfill, search, recent, context,
delete_conversation and delete_user across several users, on every backend of the contract suite,
with searches and contexts in every mode (semantic, keyword and hybrid: isolation in both legs).

Uses the deterministic fake embedder (plumbing, not meaning). After every step: no result ever
holds another user's message or a deleted one, and what a search must find is found.
"""

from __future__ import annotations

import itertools

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule, run_state_machine_as_test

import semsearch
from semsearch.embedders.fake import FakeEmbedder
from semsearch.memory.conversation import ConversationMemory
from semsearch.memory.types import Message

USERS = st.sampled_from(["ann", "bob", "cy"])
CONVERSATIONS = st.sampled_from(["c1", "c2", "c3"])
ROLES = st.sampled_from(["user", "assistant"])
WORDS = st.lists(
    st.sampled_from(["apple", "river", "music", "train", "cheese", "storm", "blue"]),
    min_size=1,
    max_size=4,
).map(" ".join)

MODES = st.sampled_from(["semantic", "keyword", "hybrid"])

_names = itertools.count()


def machine_on(location: str) -> type[RuleBasedStateMachine]:
    """The state machine class, bound to one backend location."""

    class MemoryMachine(RuleBasedStateMachine):
        def __init__(self) -> None:
            super().__init__()
            self.db = semsearch.connect(location)
            self.name = f"mem{next(_names)}"
            self.memory = ConversationMemory(
                self.db, embedder=FakeEmbedder(16), collection=self.name, background=False
            )
            self.live: dict[str, tuple[str, str, str]] = {}  # id -> (user, conversation, text)
            self.deleted: set[str] = set()
            self.embedded: set[str] = set()

        def check(self, user: str, messages: list[Message]) -> None:
            for m in messages:
                assert m.id not in self.deleted, f"deleted message {m.id} returned"
                assert m.id in self.live, f"unknown message {m.id} returned"
                assert self.live[m.id][0] == user == m.user_id, "another user's message"
                assert (m.conversation_id, m.content) == self.live[m.id][1:]

        @rule(user=USERS, conversation=CONVERSATIONS, role=ROLES, text=WORDS)
        def add(self, user: str, conversation: str, role: str, text: str) -> None:
            ref = self.memory.add_message(user, conversation, role, text)
            assert ref.id not in self.live and ref.id not in self.deleted
            # a live embedded message of the same user with the same text lends its vector:
            # the stores reuse vectors by content hash, scoped to the user in memory
            if any(v[::2] == (user, text) for i, v in self.live.items() if i in self.embedded):
                self.embedded.add(ref.id)
            self.live[ref.id] = (user, conversation, text)

        @rule()
        def backfill(self) -> None:
            assert self.memory.backfill().ok
            self.embedded = set(self.live)

        @rule(user=USERS, query=WORDS, mode=MODES)
        def search(self, user: str, query: str, mode: str) -> None:
            hits = self.memory.search(user, query, min_score=None, limit=20, mode=mode)
            self.check(user, [h.message for h in hits])
            mine = {i for i, v in self.live.items() if v[0] == user}
            embedded = mine & self.embedded  # every embedded message is a semantic candidate
            worded = {i for i in mine if set(query.split()) & set(self.live[i][2].split())}
            expected = {"semantic": embedded, "keyword": worded, "hybrid": embedded | worded}
            assert len(hits) == min(20, len(expected[mode]))
            assert {h.message.id for h in hits} <= expected[mode]

        @rule(data=st.data())
        def search_finds_exact_text(self, data: st.DataObject) -> None:
            ready = sorted(i for i in self.embedded if i in self.live)
            if not ready:
                return
            user, _, text = self.live[data.draw(st.sampled_from(ready))]
            hits = self.memory.search(user, text, min_score=0.999, limit=20, mode="semantic")
            self.check(user, [h.message for h in hits])
            assert text in {h.message.content for h in hits}

        @rule(
            user=USERS, conversation=CONVERSATIONS, query=WORDS, budget=st.integers(4, 40),
            mode=MODES,
        )  # fmt: skip
        def context(self, user: str, conversation: str, query: str, budget: int, mode: str) -> None:
            ctx = self.memory.context(
                user, conversation, query, min_score=None, token_budget=budget, mode=mode
            )
            self.check(user, [i.message for i in ctx.items if i.message is not None])
            assert ctx.tokens <= budget
            for item in ctx.of("semantic"):
                assert item.message is not None and item.message.conversation_id != conversation

        @rule(user=USERS, conversation=CONVERSATIONS)
        def recent(self, user: str, conversation: str) -> None:
            messages = self.memory.recent(user, conversation, n=50)
            self.check(user, messages)
            expected = [i for i, v in self.live.items() if v[:2] == (user, conversation)]
            assert sorted(m.id for m in messages) == sorted(expected)

        @rule(user=USERS, conversation=CONVERSATIONS)
        def delete_conversation(self, user: str, conversation: str) -> None:
            gone = {i for i, v in self.live.items() if v[:2] == (user, conversation)}
            assert self.memory.delete_conversation(user, conversation) == len(gone)
            self._forget(gone)

        @rule(user=USERS)
        def delete_user(self, user: str) -> None:
            gone = {i for i, v in self.live.items() if v[0] == user}
            assert self.memory.delete_user(user) == len(gone)
            self._forget(gone)

        def _forget(self, gone: set[str]) -> None:
            for i in gone:
                del self.live[i]
            self.deleted |= gone

        @invariant()
        def counts_match(self) -> None:
            assert self.memory.collection.count() == len(self.live)

        def teardown(self) -> None:
            self.memory.close()
            self.db.drop_collection(self.name)
            self.db.close()

    return MemoryMachine


def test_no_result_holds_another_users_or_a_deleted_message_fake_embedder(store) -> None:
    """Hypothesis-generated interleavings on each backend (``store`` is the contract fixture)."""
    examples = 10 if store.backend == "milvus" else 30  # Milvus Lite: ~1 s per new collection
    run_state_machine_as_test(
        machine_on(store.location),
        settings=settings(max_examples=examples, stateful_step_count=30, deadline=None),
    )
