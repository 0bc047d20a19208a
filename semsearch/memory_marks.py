"""Which collection is conversation memory, and the rule its writes follow.

In the engine layer, as ``ingest`` asks :func:`reuse_scope` for every record it writes;
``collection_options`` re-exports these names with the rules ``Database.collection`` applies.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from semsearch.stores.base import CollectionInfo

__all__ = ["MEMORY_COLLECTION", "MEMORY_OPTION", "MEMORY_USER_FIELD", "is_memory", "reuse_scope"]


#: The collection of conversation memory (:class:`semsearch.memory.conversation.ConversationMemory`). It holds
#: every user's messages, so only the memory API, which scopes each read to one user, opens it:
#: ``Database.collection`` refuses it and ``Database.collections`` leaves it out, and every face
#: (CLI, HTTP, MCP) goes through those two. A memory kept under another name is marked with the
#: option :data:`MEMORY_OPTION` when the memory opens it, and is private from then on.
MEMORY_COLLECTION = "messages"


MEMORY_OPTION = "conversation_memory"

#: The declared field of a memory message that names its user (:mod:`semsearch.memory.types`).
MEMORY_USER_FIELD = "user_id"


def is_memory(info: CollectionInfo) -> bool:
    """True when ``info`` is a conversation memory collection (by name or by option)."""
    return info.name == MEMORY_COLLECTION or bool(info.options.get(MEMORY_OPTION))


def reuse_scope(info: CollectionInfo, fields: Mapping[str, Any]) -> str:
    """Within what a chunk may take the stored vector of a chunk with the same embedded text
    (stores reuse vectors by content hash): "" for the whole collection, except in
    conversation memory, where it is the message's user. Reuse across users would tell a user
    that another user stored the same text: their message would be embedded at once (its
    status, the memory's pending count and the write's timing show it)."""
    if not is_memory(info):
        return ""
    return str(fields.get(MEMORY_USER_FIELD, ""))
