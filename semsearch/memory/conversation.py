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

Scores are cosine similarities in [-1, 1]. ``min_score`` defaults to the embedder's calibrated
threshold (``"default"``: 0.30 for all-MiniLM-L6-v2, measured on SciFact's judged pairs; see
:mod:`semsearch.embedders.thresholds`), the same rule as :meth:`Collection.search`. A value
copied from another model misleads: 0.7 suits ada-002, but with all-MiniLM-L6-v2 paraphrases
such as "insomnia problems" / "I keep having sleepless nights" score about 0.6.
"""

from __future__ import annotations

import os
import threading
import uuid
from collections import OrderedDict
from collections.abc import Iterable, Mapping, Sequence
from contextlib import nullcontext
from datetime import datetime
from types import TracebackType
from typing import Any, Literal

from semsearch.collection import Collection
from semsearch.database import Database, connect
from semsearch.embedders.base import Embedder
from semsearch.embedders.query_cache import QueryCache, with_query_cache
from semsearch.errors import EmbedderUnavailable, InvalidQuery, InvalidRecord, StoreCorrupted
from semsearch.memory.admin import backfill, memory_health, memory_stats, pending_count
from semsearch.memory.context import (
    Context,
    ContextItem,
    TokenCounter,
    dedupe,
    embedder_token_counter,
    fit_to_budget,
)
from semsearch.memory.search import DEFAULT_MEMORY_MODE, MemoryMode, check_mode, rank_messages
from semsearch.memory.types import (
    MESSAGE_SCHEMA,
    BackfillReport,
    MemoryHealth,
    MemoryStats,
    Message,
    MessageHit,
    MessageRef,
    check_counts,
    check_id,
    check_topics,
    check_turns,
    normalise_time,
    search_scope,
)
from semsearch.search import check_limit
from semsearch.worker import EmbeddingWorker

__all__ = ["ConversationMemory"]

#: Chunks embedded per step by the worker and by backfill.
EMBED_BATCH = 64
#: Conversations whose next message index is cached (least recently used ones are dropped).
INDEX_CACHE = 10_000


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
        self._lock = threading.Lock()
        self._next_index: OrderedDict[tuple[str, str], int] = OrderedDict()  # LRU
        if self.worker is not None and self._has_pending():
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
        if self.worker is not None and turns:
            self.worker.submit(self.collection)
        return refs

    def _last_index(self, user_id: str, conversation_id: str) -> int:
        where = {"user_id": user_id, "conversation_id": conversation_id}
        last = self.collection.find(where, limit=1, order_by="-message_index")
        return int(last[0].fields["message_index"]) if last else -1

    def delete_conversation(self, user_id: str, conversation_id: str) -> int:
        """Delete a conversation's messages with their chunks, vectors and index entries.

        Returns:
            The number of messages deleted (0 if there were none).
        Raises:
            InvalidQuery: a bad user_id or conversation_id.
        """
        user_id = check_id("user_id", user_id)
        conversation_id = check_id("conversation_id", conversation_id)
        with self._lock:
            self._next_index.pop((user_id, conversation_id), None)
            return self.collection.delete_where(
                {"user_id": user_id, "conversation_id": conversation_id}
            )

    def delete_user(self, user_id: str) -> int:
        """Delete every message of a user (all conversations), with chunks, vectors and index
        entries. Returns the number of messages deleted. Raises InvalidQuery for a bad user_id."""
        user_id = check_id("user_id", user_id)
        with self._lock:
            for key in [k for k in self._next_index if k[0] == user_id]:
                del self._next_index[key]
            return self.collection.delete_where({"user_id": user_id})

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
            min_score: a cosine similarity in [-1, 1]: semantic hits below it are dropped, and
                hybrid hits below it unless they hold the query's words
                (:mod:`semsearch.memory.search`); None keeps all; ``"default"`` (the default)
                is the embedder's calibrated threshold (0.30 for all-MiniLM-L6-v2; see
                :mod:`semsearch.embedders.thresholds`). Keyword mode applies none.
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
        return self._search(
            user_id, query, limit, min_score, mode, topics, conversation_id, exclude_conversation
        )[0]

    def _search(
        self,
        user_id: str,
        query: str,
        limit: int,
        min_score: float | Literal["default"] | None,
        mode: MemoryMode,
        topics: Iterable[str] | None = None,
        conversation_id: str | None = None,
        exclude_conversation: str | None = None,
    ) -> tuple[list[MessageHit], str | None]:
        """:meth:`search`, with the reason when hybrid ran without its semantic leg."""
        where = search_scope(user_id, topics, conversation_id, exclude_conversation)
        if not isinstance(query, str) or not query.strip():
            raise InvalidQuery("the query is empty", hint="pass the text to recall by meaning")
        check_limit(limit)  # as Collection.search: limit=0 returned [] silently
        ranked, reason = rank_messages(self.collection, query, mode, limit, min_score, where)
        records = {r.id: r for r in self.collection.get([h.id for h in ranked])}
        hits = []
        for hit in ranked:
            record = records.get(hit.id)
            if record is None:  # deleted between ranking and fetching
                continue
            hits.append(
                MessageHit(self._message(user_id, record.id, record.fields, record.text), hit.score)
            )
        return hits, reason

    @staticmethod
    def _message(user_id: str, record_id: str, fields: Mapping[str, Any], text: str) -> Message:
        message = Message.from_record(record_id, fields, text)
        if message.user_id != user_id:  # the store filter failed: never show it
            raise StoreCorrupted(
                "a read returned another user's message; refusing to show it",
                hint="report this bug; the store's user_id filter is broken",
            )
        return message

    def recent(self, user_id: str, conversation_id: str, n: int = 20) -> list[Message]:
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
        rows = self.collection.find(where, limit=n, order_by=["-message_index", "-created_at"])
        return [self._message(user_id, r.id, r.fields, r.text) for r in reversed(rows)]

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
        check_counts(recent, semantic, token_budget)
        check_mode(mode)
        if not isinstance(query, str) or not query.strip():
            raise InvalidQuery("the query is empty", hint="pass the user's current message")
        window = self.recent(user_id, conversation_id, recent) if recent else []
        hits: list[MessageHit] = []
        reason = None
        if semantic:
            try:
                hits, reason = self._search(
                    user_id, query, min(2 * semantic + 5, 1000), min_score, mode,
                    exclude_conversation=conversation_id,
                )  # fmt: skip
            except EmbedderUnavailable as exc:
                reason = f"semantic recall unavailable ({exc.message}); recent messages only"
        window, hits = dedupe(query, window, hits, semantic)
        items, dropped = fit_to_budget(
            ContextItem("query", "user", query, self._count_tokens(query)),
            [self._item("recent", m, None) for m in window],
            [self._item("semantic", h.message, h.score) for h in hits],
            token_budget,
        )
        return Context(
            items, sum(i.tokens for i in items), token_budget, dropped, self._tokenizer_name,
            reason is not None, reason,
        )  # fmt: skip

    def _item(self, source: Any, message: Message, score: float | None) -> ContextItem:
        tokens = self._count_tokens(message.content)
        return ContextItem(source, message.role, message.content, tokens, score, message)

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
        where: dict[str, Any] = {}
        if user_id is not None:
            where["user_id"] = check_id("user_id", user_id)
        if conversation_id is not None:
            where["conversation_id"] = check_id("conversation_id", conversation_id)
        lock = self.worker.exclusive(self.collection.name) if self.worker else nullcontext()
        with lock:
            return backfill(self.collection, where or None, EMBED_BATCH)

    def _has_pending(self) -> bool:
        return pending_count(self.collection, None) > 0

    def stats(self, user_id: str | None = None) -> MemoryStats:
        """Counts of messages, chunks by embedding status, conversations and topics, for one
        user or for everyone. Reads every message's fields in the scope: O(messages)."""
        where = {"user_id": check_id("user_id", user_id)} if user_id is not None else None
        return memory_stats(self.collection, where)

    def health(self) -> MemoryHealth:
        """Probe the store (a count) and the embedder (embeds a short text), and report the
        worker's state. Never raises: failures are reported."""
        return memory_health(self.collection, self.worker)

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
