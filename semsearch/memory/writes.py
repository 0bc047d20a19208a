"""Conversation memory's writes: messages appended in order, conversations and users deleted.

Each conversation's next ``message_index`` is read from the store once (its highest stored index
+ 1) and then kept in a bounded LRU, under one lock, so appends to one conversation from several
threads get consecutive indexes. Deleting a conversation or a user forgets its entries. Messages
are written with ``embed=False``: the embedder is never called here (the memory's worker or
backfill embeds them).
"""

from __future__ import annotations

import threading
import uuid
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from datetime import datetime

from semsearch.collection import Collection
from semsearch.errors import InvalidRecord
from semsearch.memory.checks import check_id, check_topics, check_turns, normalise_time
from semsearch.memory.types import MessageRef

__all__ = ["INDEX_CACHE", "MessageLog"]

#: Conversations whose next message index is cached (least recently used ones are dropped).
INDEX_CACHE = 10_000


class MessageLog:
    """Appends and deletes the messages of one memory collection; thread-safe.

    Every input is checked first (:mod:`semsearch.memory.checks`): a bad one raises
    InvalidRecord for an append (nothing is stored), InvalidQuery for a delete.
    """

    def __init__(self, collection: Collection) -> None:
        self.collection = collection
        self._lock = threading.Lock()
        self._next_index: OrderedDict[tuple[str, str], int] = OrderedDict()  # LRU

    def append(
        self,
        user_id: str,
        conversation_id: str,
        turns: Sequence[tuple[str, str]],
        *,
        topics: Iterable[str],
        created_at: datetime | str | float | None,
    ) -> list[MessageRef]:
        """Store ``(role, content)`` turns in one transaction, with consecutive message indexes
        after the conversation's last; every turn gets the same ``topics`` and ``created_at``
        (normalised to ISO-8601 UTC by :func:`~semsearch.memory.checks.normalise_time`)."""
        user_id = check_id("user_id", user_id, InvalidRecord)
        conversation_id = check_id("conversation_id", conversation_id, InvalidRecord)
        labels = check_topics(topics, InvalidRecord)
        when = normalise_time(created_at)
        check_turns(turns)
        key = (user_id, conversation_id)
        with self._lock:
            start = self._next_index.get(key)
            if start is None:
                start = self._last_index(user_id, conversation_id) + 1
            refs = [
                MessageRef(uuid.uuid4().hex, user_id, conversation_id, start + i, when)
                for i in range(len(turns))
            ]
            records = [
                {"id": ref.id, "text": content, "user_id": user_id,
                 "conversation_id": conversation_id, "message_index": ref.message_index,
                 "role": role, "topics": labels, "created_at": when}
                for ref, (role, content) in zip(refs, turns, strict=True)
            ]  # fmt: skip
            self.collection.upsert(records, embed=False)
            self._next_index[key] = start + len(turns)
            self._next_index.move_to_end(key)
            if len(self._next_index) > INDEX_CACHE:
                self._next_index.popitem(last=False)
        return refs

    def _last_index(self, user_id: str, conversation_id: str) -> int:
        where = {"user_id": user_id, "conversation_id": conversation_id}
        last = self.collection.find(where, limit=1, order_by="-message_index")
        return int(last[0].fields["message_index"]) if last else -1

    def delete_conversation(self, user_id: str, conversation_id: str) -> int:
        """Delete a conversation's messages; returns how many there were."""
        user_id = check_id("user_id", user_id)
        conversation_id = check_id("conversation_id", conversation_id)
        with self._lock:
            self._next_index.pop((user_id, conversation_id), None)
            return self.collection.delete_where(
                {"user_id": user_id, "conversation_id": conversation_id}
            )

    def delete_user(self, user_id: str) -> int:
        """Delete every message of a user; returns how many there were."""
        user_id = check_id("user_id", user_id)
        with self._lock:
            for key in [k for k in self._next_index if k[0] == user_id]:
                del self._next_index[key]
            return self.collection.delete_where({"user_id": user_id})
