"""Conversation memory's reads: one user's messages back as :class:`Message` values.

Every read passes the user in its ``where`` filter, which the store applies before ranking (see
:mod:`semsearch.memory.conversation`); each record read back is checked once more to belong to
that user, and a mismatch raises StoreCorrupted instead of showing another user's message.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from semsearch.collection import Collection
from semsearch.errors import EmbedderUnavailable, InvalidQuery, StoreCorrupted
from semsearch.memory.checks import check_id, search_scope
from semsearch.memory.search import rank_messages
from semsearch.memory.types import MemoryMode, Message, MessageHit
from semsearch.search import check_limit

__all__ = ["checked_message", "context_matches", "recent_messages", "search_messages"]

MinScore = float | Literal["default"] | None


def search_messages(
    collection: Collection,
    user_id: str,
    where: Mapping[str, Any],
    query: str,
    limit: int,
    min_score: MinScore,
    mode: MemoryMode,
) -> tuple[list[MessageHit], str | None]:
    """The user's best ``limit`` messages for ``query`` inside ``where`` (the user's scope,
    from :func:`~semsearch.memory.checks.search_scope`), with the reason when hybrid ran
    without its semantic leg. Scores as :func:`~semsearch.memory.search.rank_messages` gives.

    Raises:
        InvalidQuery: an empty query, a bad limit, min_score or mode.
        EmbedderUnavailable: semantic mode and the query cannot be embedded.
    """
    if not isinstance(query, str) or not query.strip():
        raise InvalidQuery("the query is empty", hint="pass the text to recall by meaning")
    check_limit(limit)  # as Collection.search: limit=0 returned [] silently
    ranked, reason = rank_messages(collection, query, mode, limit, min_score, where)
    records = {r.id: r for r in collection.get([h.id for h in ranked])}
    hits = []
    for hit in ranked:
        record = records.get(hit.id)
        if record is None:  # deleted between ranking and fetching
            continue
        hits.append(
            MessageHit(checked_message(user_id, record.id, record.fields, record.text), hit.score)
        )
    return hits, reason


def context_matches(
    collection: Collection,
    user_id: str,
    conversation_id: str,
    query: str,
    semantic: int,
    min_score: MinScore,
    mode: MemoryMode,
) -> tuple[list[MessageHit], str | None]:
    """Candidates for a context's ``semantic`` matches from the user's other conversations
    (more than asked, as repeats are dropped later), and why they are missing when the
    embedder failed: then the context is built from the recent messages only. None of either
    when ``semantic`` is 0.

    Raises:
        InvalidQuery: a bad user_id or conversation_id (named ``exclude_conversation``), limit,
            min_score or mode.
    """
    if not semantic:
        return [], None
    where = search_scope(user_id, None, None, conversation_id)
    try:
        return search_messages(
            collection, user_id, where, query, min(2 * semantic + 5, 1000), min_score, mode
        )
    except EmbedderUnavailable as exc:
        return [], f"semantic recall unavailable ({exc.message}); recent messages only"


def recent_messages(
    collection: Collection, user_id: str, conversation_id: str, n: int
) -> list[Message]:
    """The last ``n`` messages of a conversation, oldest first (pending ones included).

    Raises:
        InvalidQuery: bad ids, or ``n`` outside [1, 10000].
    """
    where = {
        "user_id": check_id("user_id", user_id),
        "conversation_id": check_id("conversation_id", conversation_id),
    }
    if isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= 10_000:
        raise InvalidQuery(f"n must be an integer in [1, 10000], got {n!r}", hint="n=20")
    rows = collection.find(where, limit=n, order_by=["-message_index", "-created_at"])
    return [checked_message(user_id, r.id, r.fields, r.text) for r in reversed(rows)]


def checked_message(user_id: str, record_id: str, fields: Mapping[str, Any], text: str) -> Message:
    """The record as a Message; StoreCorrupted if it is not ``user_id``'s (never shown)."""
    message = Message.from_record(record_id, fields, text)
    if message.user_id != user_id:  # the store filter failed: never show it
        raise StoreCorrupted(
            "a read returned another user's message; refusing to show it",
            hint="report this bug; the store's user_id filter is broken",
        )
    return message
