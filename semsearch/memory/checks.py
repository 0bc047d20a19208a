"""Input checks of conversation memory: ids, roles, turns, topics, times, scopes and sizes.

Each check returns the value it accepts (normalised where said) or raises the error its
docstring names, with a hint; writes raise InvalidRecord (nothing is stored), reads InvalidQuery.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import UTC, datetime
from typing import Any

from semsearch.errors import InvalidQuery, InvalidRecord, SemsearchError
from semsearch.memory.types import MEMORY_MODES, ROLES, MemoryMode
from semsearch.validation import check_text

__all__ = [
    "MAX_ID_CHARS",
    "check_context_request",
    "check_id",
    "check_mode",
    "check_role",
    "check_topics",
    "check_turns",
    "maintenance_scope",
    "normalise_time",
    "search_scope",
]

#: Longest user_id / conversation_id accepted, in characters.
MAX_ID_CHARS = 256


def check_id(name: str, value: object, error: type[SemsearchError] = InvalidQuery) -> str:
    """Return ``value`` if it is a usable id (a non-blank string of at most 256 chars).

    Raises:
        ``error`` (InvalidQuery by default, InvalidRecord for writes): not a string, blank,
        too long, or holding a NUL or a lone surrogate.
    """
    if not isinstance(value, str):
        raise error(
            f"{name} must be a string, got {type(value).__name__}",
            hint=f'pass the {name} as text, e.g. {name}="alice"',
        )
    check_text(name, value, error, no_nul=True)  # a NUL or lone surrogate no filter can match
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
    if not isinstance(topics, str):
        topics = list(topics)  # read once: a generator would be empty the second time
    if isinstance(topics, str) or not all(isinstance(t, str) and t.strip() for t in topics):
        raise error(
            f"topics must be a list of non-empty strings, got {topics!r}",
            hint='e.g. topics=["restaurants"]',
        )
    for topic in topics:  # stored, a topic no filter could name would be unsearchable
        check_text("each topic", topic, error, no_nul=True)
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


def check_context_request(
    query: object, recent: int, semantic: int, token_budget: int, mode: object
) -> None:
    """Check context() arguments, in this order: recent in [0, 10000], semantic in [0, 1000],
    token_budget >= 1, a known ``mode`` and a non-blank ``query``; else InvalidQuery."""
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
    check_mode(mode)
    if not isinstance(query, str) or not query.strip():
        raise InvalidQuery("the query is empty", hint="pass the user's current message")


def maintenance_scope(user_id: str | None, conversation_id: str | None) -> dict[str, Any] | None:
    """The ``where`` of backfill and stats: the user and the conversation when given (either
    alone, or both), None for everything. Raises InvalidQuery for a bad id."""
    where: dict[str, Any] = {}
    if user_id is not None:
        where["user_id"] = check_id("user_id", user_id)
    if conversation_id is not None:
        where["conversation_id"] = check_id("conversation_id", conversation_id)
    return where or None


def check_mode(mode: object) -> MemoryMode:
    """``mode`` if it is one of MEMORY_MODES.

    Raises:
        InvalidQuery: any other value, naming the three.
    """
    if mode not in MEMORY_MODES:
        raise InvalidQuery(
            f"unknown memory search mode {mode!r}", hint=f"use one of: {', '.join(MEMORY_MODES)}"
        )
    return mode
