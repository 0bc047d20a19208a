"""Value types and input checks for conversation memory (:mod:`semsearch.memory.conversation`).

A message is stored as one record of the memory's collection: its ``text`` is the message
content (the only part that is embedded) and its declared fields are ``user_id``,
``conversation_id``, ``message_index`` (0-based position in the conversation), ``role``,
``topics`` and ``created_at``. ``created_at`` is an ISO-8601 string in UTC with microseconds
(``2026-11-30T04:27:48.123456+00:00``): always the same width and offset, so it sorts and
compares as text in every backend's filters.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal

from semsearch.errors import InvalidQuery, InvalidRecord, SemsearchError
from semsearch.schema import Field, Schema
from semsearch.worker import WorkerStatus

__all__ = [
    "MESSAGE_SCHEMA",
    "ROLES",
    "BackfillReport",
    "ComponentHealth",
    "MemoryHealth",
    "MemoryStats",
    "Message",
    "MessageHit",
    "MessageRef",
    "check_counts",
    "check_id",
    "check_role",
    "check_topics",
    "check_turns",
    "normalise_time",
    "search_scope",
]

#: Chat roles a message may have (the OpenAI / Anthropic chat vocabulary).
ROLES = ("user", "assistant", "system", "tool")
#: Longest user_id / conversation_id accepted, in characters.
MAX_ID_CHARS = 256

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
        pending: chunks waiting for a vector (pending + failed).
    """

    ok: bool
    store: ComponentHealth
    embedder: ComponentHealth
    worker: WorkerStatus | None
    pending: int


Provenance = Literal["recent", "semantic", "query"]


def check_id(name: str, value: object, error: type[SemsearchError] = InvalidQuery) -> str:
    """Return ``value`` if it is a usable id (a non-blank string of at most 256 chars).

    Raises:
        ``error`` (InvalidQuery by default, InvalidRecord for writes): not a string, blank, or
        too long.
    """
    if not isinstance(value, str):
        raise error(
            f"{name} must be a string, got {type(value).__name__}",
            hint=f'pass the {name} as text, e.g. {name}="alice"',
        )
    if not value.strip():
        raise error(f"{name} must not be empty", hint=f"pass a non-blank {name}")
    if len(value) > MAX_ID_CHARS:
        raise error(
            f"{name} is {len(value)} characters; at most {MAX_ID_CHARS} are allowed",
            hint=f"use a shorter {name} (e.g. a database key, not a document)",
        )
    return value


def check_role(role: object) -> str:
    """Return ``role`` if it is one of :data:`ROLES`; else raise InvalidRecord."""
    if not isinstance(role, str) or role not in ROLES:
        raise InvalidRecord(
            f"unknown message role {role!r}", hint=f"use one of: {', '.join(ROLES)}"
        )
    return role


def check_turns(turns: Sequence[tuple[str, str]]) -> None:
    """Check ``(role, content)`` pairs: a known role and non-blank text; else InvalidRecord."""
    for turn in turns:
        if not isinstance(turn, tuple | list) or len(turn) != 2:
            raise InvalidRecord(
                f"a turn must be a (role, content) pair, got {turn!r}"[:200],
                hint='e.g. ("user", "hello")',
            )
        check_role(turn[0])
        if not isinstance(turn[1], str) or not turn[1].strip():
            raise InvalidRecord(
                "message content must be non-blank text",
                hint="pass the message text; leave empty messages out",
            )


def check_topics(topics: Iterable[str] | None, error: type[SemsearchError]) -> list[str]:
    """Return topics as a list of non-blank strings (a bare string is refused, not split)."""
    if topics is None:
        return []
    if isinstance(topics, str) or not all(isinstance(t, str) and t.strip() for t in topics):
        raise error(
            f"topics must be a list of non-empty strings, got {topics!r}",
            hint='e.g. topics=["restaurants"]',
        )
    return list(dict.fromkeys(topics))


def normalise_time(value: datetime | str | float | None) -> str:
    """``created_at`` as an ISO-8601 UTC string with microseconds.

    Args:
        value: None (now), an aware datetime (a naive one is taken as UTC), an ISO-8601 string
            (same rule), or a POSIX timestamp in seconds.
    Raises:
        InvalidRecord: an unparseable string, another type, a NaN or infinite timestamp, or a
            time outside the years 1 to 9999 in UTC (e.g. ``1e20`` seconds).
    """
    if value is None:
        moment = datetime.now(UTC)
    elif isinstance(value, datetime):
        moment = value
    elif isinstance(value, str):
        try:
            moment = datetime.fromisoformat(value)
        except ValueError as exc:
            raise InvalidRecord(
                f"created_at {value!r} is not an ISO-8601 time", hint="2026-11-30T04:27:48Z"
            ) from exc
    elif isinstance(value, int | float) and not isinstance(value, bool):
        moment = _from_timestamp(value)
    else:
        raise InvalidRecord(
            f"created_at must be a datetime, ISO-8601 string or timestamp, got {value!r}",
            hint="pass datetime.now(timezone.utc)",
        )
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    try:
        return moment.astimezone(UTC).isoformat(timespec="microseconds")
    except OverflowError as exc:  # e.g. 0001-01-01T00:00+05:00 falls before year 1 in UTC
        raise InvalidRecord(
            f"created_at {value!r} is outside the years 1 to 9999 in UTC", hint=_TIME_RANGE_HINT
        ) from exc


_TIME_RANGE_HINT = "pass a time between years 1 and 9999, e.g. datetime.now(timezone.utc)"


def _from_timestamp(value: float) -> datetime:
    """A POSIX timestamp (seconds) as an aware UTC datetime; InvalidRecord for NaN, infinity
    or one outside what ``datetime`` holds (years 1 to 9999)."""
    try:
        return datetime.fromtimestamp(float(value), UTC)
    except (ValueError, OverflowError, OSError) as exc:  # NaN: ValueError; 1e20: OverflowError
        raise InvalidRecord(
            f"created_at {value!r} is not a usable POSIX timestamp (seconds)",
            hint=_TIME_RANGE_HINT,
        ) from exc


def search_scope(
    user_id: str,
    topics: Iterable[str] | None,
    conversation_id: str | None,
    exclude_conversation: str | None,
) -> dict[str, Any]:
    """The ``where`` filter of a memory read: always the user, plus optional topics (any of),
    one conversation, or every conversation but one. Raises InvalidQuery for bad values."""
    where: dict[str, Any] = {"user_id": check_id("user_id", user_id)}
    labels = check_topics(topics, InvalidQuery)
    if labels:
        where["topics"] = {"$in": labels}
    conversation: dict[str, str] = {}
    if conversation_id is not None:
        conversation["$eq"] = check_id("conversation_id", conversation_id)
    if exclude_conversation is not None:
        conversation["$ne"] = check_id("exclude_conversation", exclude_conversation)
    if conversation:
        where["conversation_id"] = conversation
    return where


def check_counts(recent: int, semantic: int, token_budget: int) -> None:
    """Check context() sizes: recent in [0, 10000], semantic in [0, 1000], token_budget >= 1."""
    for name, value, low, high in (
        ("recent", recent, 0, 10_000),
        ("semantic", semantic, 0, 1000),
        ("token_budget", token_budget, 1, None),
    ):
        if (
            isinstance(value, bool)
            or not isinstance(value, int)
            or value < low
            or (high is not None and value > high)
        ):
            span = f"in [{low}, {high}]" if high is not None else f">= {low}"
            raise InvalidQuery(
                f"{name} must be an integer {span}, got {value!r}", hint=f"e.g. {name}=20"
            )
