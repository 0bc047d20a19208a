"""Conversation memory: per-user semantic recall of past chat messages, on any backend.

    memory = ConversationMemory(semsearch.connect("chat.embed.db"))
    memory.add_message("alice", "c1", "user", "I keep having sleepless nights")
    ...
    memory.search("alice", "trouble sleeping")        # alice's messages only
    ctx = memory.context("alice", "c2", "any tips for sleep?", token_budget=2000)
    memory.close()                                     # waits for the background embedder

Messages are records of one :class:`~semsearch.Collection` (default ``"messages"``) with the
declared fields described in :mod:`semsearch.memory.types`; only the content is embedded.
``add_message`` stores the message at once (keyword-searchable, counted as pending) and hands
the embedding to a background :class:`~semsearch.worker.EmbeddingWorker` (one thread, a bounded
queue, batches, exponential backoff). It never calls the embedder itself, so an embedder outage
never makes it fail: the message stays pending, is retried, and :meth:`backfill` embeds whatever
is still pending (also after a crash: the queue lives in the store, not in memory).

Isolation is enforced in the store: every read passes ``{"user_id": ...}`` as a ``where`` filter
that the backend applies before ranking (SQL ``WHERE`` on SQLite/PostgreSQL, a Milvus filter
expression), never by filtering results afterwards. There is no cross-user read API, and each
result's ``user_id`` is checked again before it is returned.

Scores are the search mode's (cosine similarity, BM25, or the calibrated hybrid score in
[0, 1]). ``min_score`` defaults to each mode's floor, the same rule as
:meth:`Collection.search` (semantic: the embedder's calibrated threshold, 0.34 for
all-MiniLM-L6-v2, see :mod:`semsearch.embedders.thresholds`; hybrid: 0.5; keyword: a
meaningful query word), so a question about something the user never wrote about returns
nothing. A value
copied from another model misleads: 0.7 suits ada-002, but with all-MiniLM-L6-v2 paraphrases
such as "insomnia problems" / "I keep having sleepless nights" score about 0.6.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from contextlib import nullcontext
from datetime import datetime
from types import TracebackType
from typing import Literal

from semsearch.collection import Collection
from semsearch.database import Database, connect
from semsearch.embedders.base import Embedder
from semsearch.embedders.query_cache import QueryCache, with_query_cache
from semsearch.memory.admin import backfill, memory_health, memory_stats, pending_count
from semsearch.memory.checks import check_context_request, maintenance_scope, search_scope
from semsearch.memory.context import Context, TokenCounter, build_context, embedder_token_counter
from semsearch.memory.reads import context_matches, recent_messages, search_messages
from semsearch.memory.search import DEFAULT_MEMORY_MODE
from semsearch.memory.types import (
    MESSAGE_SCHEMA,
    BackfillReport,
    MemoryHealth,
    MemoryMode,
    MemoryStats,
    Message,
    MessageHit,
    MessageRef,
)
from semsearch.memory.writes import MessageLog
from semsearch.worker import EmbeddingWorker

__all__ = ["ConversationMemory"]

#: Chunks embedded per step by the worker and by backfill.
EMBED_BATCH = 64


class ConversationMemory:
    """Per-user memory of chat messages: store now, embed in the background, recall by meaning.

    Args:
        db: a Database, or a location for :func:`semsearch.connect` (then the memory owns the
            connection and closes it in :meth:`close`).
        embedder: an Embedder or spec (``"fake:32"``, ``"local:..."``); None uses the stored
            model of an existing collection, else the default all-MiniLM-L6-v2.
        collection: the collection holding the messages (created with the message schema).
        background: embed in a background worker (default). False leaves new messages pending
            until :meth:`backfill` (bulk imports, tests).
        worker: a shared EmbeddingWorker (e.g. the HTTP server's); the memory then neither
            starts nor stops it. None with ``background`` starts a worker owned by the memory.
        token_counter: counts tokens for :meth:`context`; default: the embedder's tokenizer.
        query_cache: an LRU of query vectors (:class:`~semsearch.embedders.query_cache.QueryCache`)
            for :meth:`search` and :meth:`context`; default: one of its own (1024 queries);
            ``False`` turns it off. Its hit rate: ``memory.query_cache.stats()``.
    Raises:
        SchemaConflict: ``collection`` exists with another schema.
        ModelMismatch: ``embedder`` differs from the collection's model.
    """

    def __init__(
        self,
        db: Database | str | os.PathLike[str],
        *,
        embedder: str | Embedder | None = None,
        collection: str = "messages",
        background: bool = True,
        worker: EmbeddingWorker | None = None,
        token_counter: TokenCounter | None = None,
        query_cache: QueryCache | Literal[False] | None = None,
    ) -> None:
        self._owns_db = not isinstance(db, Database)
        self.db = db if isinstance(db, Database) else connect(db)
        self.collection: Collection = self.db.memory_collection(
            collection, schema=MESSAGE_SCHEMA, embedder=embedder
        )  # private: Database.collection refuses it, so no face reads it but through here
        self.query_cache = QueryCache() if query_cache is None else query_cache or None
        self.collection.embedder = with_query_cache(self.collection.embedder, self.query_cache)
        self._count_tokens = token_counter or embedder_token_counter(self.collection.embedder)
        self._tokenizer_name = "custom" if token_counter else self.collection.model_id
        self._owns_worker = background and worker is None
        self.worker = worker if worker is not None else None
        if self._owns_worker:
            self.worker = EmbeddingWorker(batch_size=EMBED_BATCH)
            self.worker.start()
        self._log = MessageLog(self.collection)  # appends in order, deletes
        if self.worker is not None and pending_count(self.collection, None) > 0:
            self.worker.submit(self.collection)  # resume what a previous process left pending

    # -- writes -------------------------------------------------------------------------------

    def add_message(
        self,
        user_id: str,
        conversation_id: str,
        role: str,
        content: str,
        *,
        topics: Iterable[str] = (),
        created_at: datetime | str | float | None = None,
    ) -> MessageRef:
        """Store one message now; its embedding follows in the background.

        The message is committed before this returns (keyword-searchable, counted as pending,
        listed by :meth:`recent`). The embedder is never called here, so an embedder outage
        never makes it fail. ``message_index`` is the next position in the conversation.

        Args:
            user_id, conversation_id: non-blank strings of at most 256 characters.
            role: ``user``, ``assistant``, ``system`` or ``tool``.
            content: the non-blank message text.
            topics: labels to filter searches by (list of non-blank strings).
            created_at: when it was said (datetime, ISO-8601 string or POSIX seconds; naive
                times are UTC); default now. Stored as ISO-8601 UTC.
        Raises:
            InvalidRecord: a bad id, role, content, topics or created_at; nothing is stored.
        """
        (ref,) = self.add_conversation(
            user_id, conversation_id, [(role, content)], topics=topics, created_at=created_at
        )
        return ref

    def add_conversation(
        self,
        user_id: str,
        conversation_id: str,
        turns: Sequence[tuple[str, str]],
        *,
        topics: Iterable[str] = (),
        created_at: datetime | str | float | None = None,
    ) -> list[MessageRef]:
        """Append several ``(role, content)`` turns to a conversation in one transaction.

        For importing history. Same rules as :meth:`add_message`; every turn gets the same
        ``topics`` and ``created_at``, and consecutive message indexes in the given order.

        Raises:
            InvalidRecord: any bad turn; nothing is stored.
        """
        refs = self._log.append(
            user_id, conversation_id, turns, topics=topics, created_at=created_at
        )
        if self.worker is not None and turns:
            self.worker.submit(self.collection)
        return refs

    def delete_conversation(self, user_id: str, conversation_id: str) -> int:
        """Delete a conversation's messages with their chunks, vectors and index entries.

        Returns:
            The number of messages deleted (0 if there were none).
        Raises:
            InvalidQuery: a bad user_id or conversation_id.
        """
        return self._log.delete_conversation(user_id, conversation_id)

    def delete_user(self, user_id: str) -> int:
        """Delete every message of a user (all conversations), with chunks, vectors and index
        entries. Returns the number of messages deleted. Raises InvalidQuery for a bad user_id."""
        return self._log.delete_user(user_id)

    # -- reads --------------------------------------------------------------------------------

    def search(
        self,
        user_id: str,
        query: str,
        *,
        limit: int = 5,
        min_score: float | Literal["default"] | None = "default",
        topics: Iterable[str] | None = None,
        conversation_id: str | None = None,
        exclude_conversation: str | None = None,
        mode: MemoryMode = DEFAULT_MEMORY_MODE,
    ) -> list[MessageHit]:
        """Search one user's messages by meaning, by their words, or both (the default).

        The user (and the optional topic and conversation constraints) is a filter inside the
        store query of every leg, applied before ranking. Messages still pending embedding are
        found by their words (keyword and hybrid), not by meaning.

        Args:
            user_id: whose messages; required.
            query: the text to match.
            limit: at most this many hits, in [1, 1000].
            min_score: ``"default"`` (the default): each mode's floor
                (:mod:`semsearch.memory.search`: the model's cosine threshold, 0.34 for
                all-MiniLM-L6-v2; a hybrid score of 0.5; a meaningful query word). A number is
                a cosine (semantic) or hybrid-score threshold; None keeps all.
            topics: only messages carrying any of these topics.
            conversation_id: only this conversation.
            exclude_conversation: not this conversation (e.g. the current one).
            mode: ``"hybrid"`` (default: BM25 and cosine fused), ``"semantic"`` or
                ``"keyword"``; chosen by measurement, see :mod:`semsearch.memory.search`.
        Returns:
            Best first; ties by id. ``MessageHit.score`` is the mode's score.
        Raises:
            InvalidQuery: bad user_id, empty query, bad limit, min_score or mode.
            EmbedderUnavailable: semantic mode and the query cannot be embedded.
        """
        where = search_scope(user_id, topics, conversation_id, exclude_conversation)
        return search_messages(self.collection, user_id, where, query, limit, min_score, mode)[0]

    def recent(self, user_id: str, conversation_id: str, n: int = 20) -> list[Message]:
        """The last ``n`` messages of a conversation, oldest first (pending ones included).

        Raises:
            InvalidQuery: bad ids, or ``n`` outside [1, 10000].
        """
        return recent_messages(self.collection, user_id, conversation_id, n)

    def context(
        self,
        user_id: str,
        conversation_id: str,
        query: str,
        *,
        recent: int = 20,
        semantic: int = 3,
        token_budget: int = 4000,
        min_score: float | Literal["default"] | None = "default",
        mode: MemoryMode = DEFAULT_MEMORY_MODE,
    ) -> Context:
        """The context for answering ``query``: the recent window, the best matches from the
        user's other conversations, and the query, pruned to ``token_budget`` tokens.

        Repeats are dropped (see :func:`semsearch.memory.context.dedupe`); pruning drops the
        oldest recent messages and the weakest matches first and always keeps the query (see
        :mod:`semsearch.memory.context`). Tokens are counted with the memory's token counter
        (the embedder's tokenizer by default) over each item's content.

        Args:
            recent: at most this many latest messages of ``conversation_id`` (0 for none).
            semantic: at most this many matches from other conversations (0 for none).
            token_budget: total tokens allowed, >= 1.
            min_score: cosine similarity floor for matches, in [-1, 1], None for none, or
                ``"default"`` (the default): the embedder's calibrated threshold; applied as
                :meth:`search` applies it in ``mode``.
            mode: how matches are found: ``"hybrid"`` (default), ``"semantic"`` or
                ``"keyword"`` (see :meth:`search`).
        Returns:
            A Context whose ``tokens`` never exceed ``token_budget``. If the embedder fails, the
            matches are left out and the Context is marked ``degraded``.
        Raises:
            InvalidQuery: bad ids, an empty query, negative counts, a budget < 1, or a query
                longer than the budget.
        """
        check_context_request(query, recent, semantic, token_budget, mode)
        window = self.recent(user_id, conversation_id, recent) if recent else []
        hits, reason = context_matches(
            self.collection, user_id, conversation_id, query, semantic, min_score, mode
        )
        return build_context(
            query, window, hits, semantic, token_budget, self._count_tokens,
            self._tokenizer_name, reason,
        )  # fmt: skip

    # -- maintenance --------------------------------------------------------------------------

    def backfill(
        self, *, conversation_id: str | None = None, user_id: str | None = None
    ) -> BackfillReport:
        """Embed every pending or failed message in the scope, now, in this thread.

        Idempotent: embedded chunks are never embedded again, so a second call embeds 0. While a
        background worker runs, its lock is held so the two never embed the same chunks.

        Args:
            conversation_id: only this conversation (of any user, unless ``user_id`` is given).
            user_id: only this user's messages.
        Returns:
            BackfillReport; on an embedder failure ``error`` says why and the rest stays pending.
        Raises:
            InvalidQuery: a bad user_id or conversation_id.
        """
        where = maintenance_scope(user_id, conversation_id)
        lock = self.worker.exclusive(self.collection.name) if self.worker else nullcontext()
        with lock:
            return backfill(self.collection, where, EMBED_BATCH)

    def stats(self, user_id: str | None = None) -> MemoryStats:
        """Counts of messages, chunks by embedding status, conversations and topics, for one
        user or for everyone. Reads every message's fields in the scope: O(messages)."""
        return memory_stats(self.collection, maintenance_scope(user_id, None))

    def health(self, user_id: str | None = None) -> MemoryHealth:
        """Probe the store (the chunk counts of one user's messages, or everyone's), the
        embedder (embeds a short text), and report the worker's state. Pending and failed
        chunks are counted apart, as :meth:`stats` counts them. Never raises: failures are
        reported.

        Raises:
            InvalidQuery: a bad ``user_id`` (before any probe).
        """
        return memory_health(self.collection, self.worker, maintenance_scope(user_id, None))

    def wait_idle(self, timeout: float = 30.0) -> bool:
        """Block until the background worker has nothing queued or running (True), or until
        ``timeout`` seconds pass (False). True at once without a worker."""
        return self.worker.wait_idle(timeout) if self.worker is not None else True

    def close(self, *, drain: bool = True, timeout: float = 30.0) -> None:
        """Stop the owned worker and close an owned connection.

        Args:
            drain: first wait (up to ``timeout`` seconds) until queued messages are embedded.
                Whatever is not embedded stays pending in the store either way, and is picked
                up by the next ConversationMemory on the same store, or by :meth:`backfill`.
            timeout: seconds to wait for the drain.
        """
        if self.worker is not None and self._owns_worker:
            if drain:
                self.worker.wait_idle(timeout)
            self.worker.stop()
        if self._owns_db:
            self.db.close()

    def __enter__(self) -> ConversationMemory:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"ConversationMemory({self.db.location!r}, collection={self.collection.name!r})"
