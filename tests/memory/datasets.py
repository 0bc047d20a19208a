"""Load the real conversation data sets as per-user chat histories (for tests and benchmarks).

Topical-Chat (``conversations/topical_chat/test_freq.json``, 539 human-human chats) and SGD
(``conversations/sgd/test_dialogues_001.json``, 128 task-oriented dialogues) are assigned to
``users`` synthetic users deterministically: ``user-NN`` with NN = crc32(conversation id) mod
``users``. Speakers map to chat roles: agent_1 / USER -> user, agent_2 / SYSTEM -> assistant.
SGD dialogues carry their services as topics (``Restaurants_2`` -> ``restaurants``); Topical-Chat
conversations have none. Conversations get increasing, hour-spaced ``created_at`` times in file
order (Topical-Chat first).
"""

from __future__ import annotations

import json
import zlib
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

ROLE_OF = {"agent_1": "user", "USER": "user", "agent_2": "assistant", "SYSTEM": "assistant"}
START = datetime(2026, 1, 1, tzinfo=UTC)


@dataclass(frozen=True)
class Conversation:
    """One dialogue assigned to a synthetic user."""

    user_id: str
    conversation_id: str
    turns: list[tuple[str, str]]
    topics: tuple[str, ...]
    created_at: datetime
    source: str


def user_for(conversation_id: str, users: int = 40) -> str:
    """The synthetic user that owns a conversation (crc32 of its id, modulo ``users``)."""
    return f"user-{zlib.crc32(conversation_id.encode()) % users:02d}"


def load_conversations(data_dir: Path, users: int = 40) -> list[Conversation]:
    """Every conversation of both data sets, Topical-Chat first, each in file order."""
    out: list[Conversation] = []
    topical = json.loads((data_dir / "topical_chat" / "test_freq.json").read_text())
    for key, chat in topical.items():
        turns = [
            (ROLE_OF[t["agent"]], t["message"]) for t in chat["content"] if t["message"].strip()
        ]
        out.append(_conversation(f"tc-{key}", turns, (), "topical_chat", len(out), users))
    sgd = json.loads((data_dir / "sgd" / "test_dialogues_001.json").read_text())
    for dialogue in sgd:
        turns = [(ROLE_OF[t["speaker"]], t["utterance"]) for t in dialogue["turns"]]
        topics = tuple(dict.fromkeys(s.split("_")[0].lower() for s in dialogue["services"]))
        out.append(
            _conversation(f"sgd-{dialogue['dialogue_id']}", turns, topics, "sgd", len(out), users)
        )
    return out


def _conversation(
    cid: str, turns: list[tuple[str, str]], topics: tuple[str, ...], source: str, n: int, users: int
) -> Conversation:
    return Conversation(
        user_for(cid, users), cid, turns, topics, START + timedelta(hours=n), source
    )
