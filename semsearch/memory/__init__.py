"""Conversation memory: per-user semantic recall of past chat messages, on any backend.

What lives here, by job: ``conversation.py`` (:class:`ConversationMemory`, the public class),
``types.py`` (value types: messages, hits, reports, the message schema), ``checks.py`` (input
checks: ids, roles, turns, topics, times, read scopes, sizes), ``writes.py`` (appending messages
with their next message index, deleting conversations and users), ``reads.py`` (one user's
messages back, each checked to be theirs), ``search.py`` (how one user's messages are ranked),
``context.py`` (the context builder's pure parts: token counts, de-duplication, budgets) and
``admin.py`` (backfill, counts, the health probe).

It sits on top of :class:`semsearch.Collection` and never imports ``semsearch.server``; who may
import it: the top-level API (``semsearch.ConversationMemory``), ``semsearch.aio`` and the HTTP
server. ``from semsearch.memory import ConversationMemory`` keeps working (docs/memory.md).
"""

from semsearch.memory.conversation import ConversationMemory

__all__ = ["ConversationMemory"]
