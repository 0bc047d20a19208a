"""Value types of conversation memory (:mod:`semsearch.memory.conversation`); the input checks
are in :mod:`semsearch.memory.checks`.

A message is stored as one record of the memory's collection: its ``text`` is the message
content (the only part that is embedded) and its declared fields are ``user_id``,
``conversation_id``, ``message_index`` (0-based position in the conversation), ``role``,
``topics`` and ``created_at``. ``created_at`` is an ISO-8601 string in UTC with microseconds
(``2026-11-30T04:27:48.123456+00:00``): always the same width and offset, so it sorts and
compares as text in every backend's filters.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from semsearch.schema import Field, Schema
from semsearch.worker import WorkerStatus

__all__ = [
    "MEMORY_MODES",
    "MESSAGE_SCHEMA",
    "ROLES",
    "BackfillReport",
    "ComponentHealth",
    "MemoryHealth",
    "MemoryMode",
    "MemoryStats",
    "Message",
    "MessageHit",
    "MessageRef",
    "Provenance",
]

#: Chat roles a message may have (the OpenAI / Anthropic chat vocabulary).
ROLES = ("user", "assistant", "system", "tool")
#: How a memory search ranks (see :mod:`semsearch.memory.search`).
MemoryMode = Literal["semantic", "keyword", "hybrid"]
MEMORY_MODES: tuple[MemoryMode, ...] = ("semantic", "keyword", "hybrid")

MESSAGE_SCHEMA = Schema(
    (
        Field("user_id", "str"),
        Field("conversation_id", "str"),
        Field("message_index", "int"),
        Field("role", "str"),
        Field("topics", "list[str]"),
        Field("created_at", "str"),
    ),
    text=("text",),
)


@dataclass(frozen=True)
class MessageRef:
    """What :meth:`ConversationMemory.add_message` returns: the stored message's address.

    Attributes:
        id: the record id (opaque, unique in the collection).
        user_id, conversation_id: as given.
        message_index: 0-based position in the conversation (assigned in arrival order).
        created_at: ISO-8601 UTC timestamp with microseconds.
    """

    id: str
    user_id: str
    conversation_id: str
    message_index: int
    created_at: str


@dataclass(frozen=True)
class Message:
    """A stored message.

    Attributes:
        id: the record id.
        user_id, conversation_id: who said it, where.
        message_index: 0-based position in the conversation.
        role: one of :data:`ROLES`.
        content: the message text.
        topics: free labels given when it was added.
        created_at: ISO-8601 UTC timestamp with microseconds.
    """

    id: str
    user_id: str
    conversation_id: str
    message_index: int
    role: str
    content: str
    topics: tuple[str, ...]
    created_at: str

    @classmethod
    def from_record(cls, record_id: str, fields: Mapping[str, Any], text: str) -> Message:
        """Build a Message from a stored record's id, fields and text."""
        return cls(
            record_id,
            str(fields["user_id"]),
            str(fields["conversation_id"]),
            int(fields["message_index"]),
            str(fields["role"]),
            text,
            tuple(fields.get("topics") or ()),
            str(fields["created_at"]),
        )


@dataclass(frozen=True)
class MessageHit:
    """One memory search result: a message and its score.

    Attributes:
        message: the matching message (full content, even when only one chunk matched).
        score: in the search's mode: cosine similarity in [-1, 1] between the query and the
            message's best chunk (semantic), BM25 > 0 (keyword), or the fused score
            (hybrid, in [0, 1], comparable within one search only).
    """

    message: Message
    score: float


@dataclass
class BackfillReport:
    """What :meth:`ConversationMemory.backfill` did.

    Attributes:
        embedded: chunks newly embedded by this call (0 when everything was already embedded).
        remaining: chunks in the scope still without a vector afterwards (0 on success).
        error: the embedder's error when it failed part-way (the rest stays pending), else None.
    """

    embedded: int = 0
    remaining: int = 0
    error: str | None = None

    @property
    def ok(self) -> bool:
        """True when nothing in the scope is left without a vector."""
        return self.error is None and self.remaining == 0


@dataclass(frozen=True)
class MemoryStats:
    """Counts for one user, or for the whole memory.

    Attributes:
        messages: stored messages.
        embedded, pending, failed: chunks by embedding status (a message longer than the
            model's token window has several chunks; shorter ones have exactly one). ``failed``
            chunks are retried by the worker's next round and by :meth:`backfill`.
        conversations: distinct conversations.
        topics: ``{topic: number of messages carrying it}``, sorted by topic.
    """

    messages: int
    embedded: int
    pending: int
    failed: int
    conversations: int
    topics: dict[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class ComponentHealth:
    """One part's health: ``ok`` and one line saying why (no absolute paths)."""

    ok: bool
    detail: str


@dataclass(frozen=True)
class MemoryHealth:
    """What :meth:`ConversationMemory.health` found.

    Attributes:
        ok: store and embedder both work.
        store: the store answered a count.
        embedder: the embedder embedded a probe text.
        worker: the background worker's state, or None without one.
        pending: chunks never tried yet, as ``stats().pending`` counts them.
        failed: chunks whose embedding failed (an outage, or a text the model cannot embed),
            as ``stats().failed`` counts them; ``backfill`` or the worker's next batch retries
            them.
    """

    ok: bool
    store: ComponentHealth
    embedder: ComponentHealth
    worker: WorkerStatus | None
    pending: int
    failed: int = 0


Provenance = Literal["recent", "semantic", "query"]
