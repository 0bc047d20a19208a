"""HTTP endpoints for conversation memory under ``/memory`` (see :mod:`semsearch.memory.conversation`).

Whose memory a request reads or changes is decided by the caller's identity, never by the
request: ``user_id`` is derived from the API key the request was authenticated with
(``key-`` + the first 16 hex digits of its SHA-256, so the key itself is never stored), and is
``local`` in local mode (no keys configured, loopback only). A body that names a ``user_id`` is
refused (422). Give each end user their own key, or call the library from your own backend.

Routes: ``POST /memory/messages``; ``GET /memory/conversations/{id}/messages``; ``DELETE
/memory/conversations/{id}``; ``POST /memory/search``; ``POST /memory/context``; ``GET
/memory/stats``; ``GET /memory/health``; ``POST /memory/backfill``; ``DELETE /memory``
(everything of the caller).
Messages live in the collection ``messages`` of the server's database and are embedded by the
server's background worker.
"""

from __future__ import annotations

import dataclasses
import hashlib
import threading
from typing import Annotated

from fastapi import APIRouter, Depends, Query, Request
from pydantic import BaseModel, ConfigDict, Field

from semsearch.embedders.base import Embedder
from semsearch.embedders.registry import resolve_embedder
from semsearch.memory.admin import probe_embedder
from semsearch.memory.checks import check_context_request
from semsearch.memory.context import Context, build_context, embedder_token_counter
from semsearch.memory.conversation import ConversationMemory
from semsearch.memory.search import DEFAULT_MEMORY_MODE
from semsearch.memory.types import (
    BackfillReport,
    ComponentHealth,
    MemoryHealth,
    MemoryMode,
    MemoryStats,
    Message,
    MessageHit,
    MessageRef,
)
from semsearch.server.http.auth import Role, request_key, requires
from semsearch.server.http.errors import error_responses, redact_paths
from semsearch.server.http.models import MAX_TEXT, MinScore
from semsearch.server.http.paths import refuse_unaddressable
from semsearch.server.http.state import MEMORY_COLLECTION, ServerState

__all__ = ["MEMORY_COLLECTION", "caller_user_id", "memory_router"]

#: Longest message content accepted, in characters.
MAX_CONTENT = 100_000
_COMMON = (400, 401, 403, 422, 429)
_lock = threading.Lock()


class MessageIn(BaseModel):
    """A message to remember (the user is the caller)."""

    model_config = ConfigDict(extra="forbid", strict=True)
    conversation_id: str = Field(min_length=1, max_length=256)
    role: str = Field(description="user, assistant, system or tool")
    content: str = Field(min_length=1, max_length=MAX_CONTENT)
    topics: list[str] = Field(default_factory=list, max_length=100)
    created_at: str | float | None = Field(
        None, description="ISO-8601 string or POSIX seconds; default now (UTC)"
    )


class SearchMemoryIn(BaseModel):
    """A search over the caller's messages (``mode``: hybrid by default, semantic or keyword)."""

    model_config = ConfigDict(extra="forbid", strict=True)
    query: str = Field(min_length=1, max_length=MAX_TEXT)
    limit: int = Field(5, ge=1, le=1000)
    min_score: MinScore = "default"
    mode: MemoryMode = DEFAULT_MEMORY_MODE
    topics: list[str] | None = Field(None, max_length=100)
    conversation_id: str | None = None
    exclude_conversation: str | None = None


class ContextIn(BaseModel):
    """A context request: recent window + matches from other conversations, within a budget."""

    model_config = ConfigDict(extra="forbid", strict=True)
    conversation_id: str = Field(min_length=1, max_length=256)
    query: str = Field(min_length=1, max_length=MAX_TEXT)
    recent: int = Field(20, ge=0, le=10_000)
    semantic: int = Field(3, ge=0, le=1000)
    token_budget: int = Field(4000, ge=1)
    min_score: MinScore = "default"
    mode: MemoryMode = DEFAULT_MEMORY_MODE


class DeletedOut(BaseModel):
    """How many messages were deleted."""

    deleted: int


def caller_user_id(request: Request) -> str:
    """The memory user of the request's caller: derived from its API key, ``local`` without keys.

    Call only after an auth dependency accepted the request (it guarantees a known key)."""
    state: ServerState = request.app.state.semsearch
    if state.keys.empty:
        return "local"
    key = request_key(request) or ""
    return "key-" + hashlib.sha256(key.encode()).hexdigest()[:16]


def _memory(request: Request) -> ConversationMemory:
    """The app's ConversationMemory, opened once on the server's database and worker."""
    with _lock:
        memory: ConversationMemory | None = getattr(request.app.state, "memory", None)
        if memory is None or not memory.collection.usable:  # none yet, or dropped elsewhere
            state: ServerState = request.app.state.semsearch
            memory = ConversationMemory(
                state.db, embedder=state.embedder, collection=MEMORY_COLLECTION,
                worker=state.worker, query_cache=state.query_cache or False,
            )  # fmt: skip  # one query cache (and hit rate) for the whole server
            request.app.state.memory = memory
        return memory


def _existing_memory(request: Request) -> ConversationMemory | None:
    """The app's memory if its collection exists, else None: a read never creates it."""
    with _lock:
        memory: ConversationMemory | None = getattr(request.app.state, "memory", None)
        if memory is None or not memory.collection.usable:
            state: ServerState = request.app.state.semsearch
            if state.db.store.get_collection(MEMORY_COLLECTION) is None:
                return None
    return _memory(request)


def _server_embedder(request: Request) -> Embedder:
    """The embedder a new memory collection would get: the server's."""
    spec = request.app.state.semsearch.embedder
    return spec if isinstance(spec, Embedder) else resolve_embedder(spec)


def _query_only_context(request: Request, body: ContextIn) -> Context:
    """The context of an empty memory: the query alone (validated as ConversationMemory does)."""
    check_context_request(body.query, body.recent, body.semantic, body.token_budget, body.mode)
    embedder = _server_embedder(request)
    counter = embedder_token_counter(embedder)
    return build_context(
        body.query, [], [], body.semantic, body.token_budget, counter, embedder.model_id
    )


def _health(request: Request, user: str, memory: ConversationMemory | None) -> MemoryHealth:
    """``memory.health(user)``, or before the memory exists: no messages, the server's embedder
    probed; the details with absolute paths shortened (they reach a client)."""
    if memory is not None:
        found = memory.health(user)
    else:
        state: ServerState = request.app.state.semsearch
        embedder = _server_embedder(request)
        probe = probe_embedder(embedder, embedder.model_id)
        store = ComponentHealth(True, f"0 messages: no collection {MEMORY_COLLECTION!r} yet")
        found = MemoryHealth(probe.ok, store, probe, state.worker.status(MEMORY_COLLECTION), 0, 0)
    return dataclasses.replace(
        found,
        store=dataclasses.replace(found.store, detail=redact_paths(found.store.detail)),
        embedder=dataclasses.replace(found.embedder, detail=redact_paths(found.embedder.detail)),
    )


def _reader(request: Request, role: Annotated[Role, Depends(requires(Role.read))]) -> str:
    return caller_user_id(request)


def _writer(request: Request, role: Annotated[Role, Depends(requires(Role.write))]) -> str:
    return caller_user_id(request)


Memory = Annotated[ConversationMemory, Depends(_memory)]
#: For reads and deletes: None when the memory collection does not exist yet (they answer
#: empty / nothing deleted, and never create it).
ReadMemory = Annotated[ConversationMemory | None, Depends(_existing_memory)]
ReaderId = Annotated[str, Depends(_reader)]
WriterId = Annotated[str, Depends(_writer)]


def memory_router() -> APIRouter:
    """The ``/memory`` routes; mount with ``app.include_router(memory_router())``."""
    router = APIRouter(prefix="/memory", tags=["memory"])

    @router.post(
        "/messages", status_code=201, response_model=MessageRef, responses=error_responses(*_COMMON)
    )
    def add_message(body: MessageIn, user: WriterId, memory: Memory) -> MessageRef:
        """Remember a message now; it is embedded in the background (never waits for it)."""
        refuse_unaddressable([body.conversation_id], "conversation_id", slashes=False)
        return memory.add_message(
            user, body.conversation_id, body.role, body.content,
            topics=body.topics, created_at=body.created_at,
        )  # fmt: skip

    @router.get(
        "/conversations/{conversation_id}/messages",
        response_model=list[Message],
        responses=error_responses(*_COMMON),
    )
    def recent(
        conversation_id: str,
        user: ReaderId,
        memory: ReadMemory,
        n: int = Query(20, ge=1, le=10_000),
    ) -> list[Message]:
        """The last ``n`` messages of one of the caller's conversations, oldest first."""
        return memory.recent(user, conversation_id, n) if memory else []

    @router.delete(
        "/conversations/{conversation_id}",
        response_model=DeletedOut,
        responses=error_responses(*_COMMON),
    )
    def delete_conversation(conversation_id: str, user: WriterId, memory: ReadMemory) -> DeletedOut:
        """Delete one of the caller's conversations (messages, vectors, index entries)."""
        return DeletedOut(
            deleted=memory.delete_conversation(user, conversation_id) if memory else 0
        )

    @router.post(
        "/search", response_model=list[MessageHit], responses=error_responses(*_COMMON, 503)
    )
    def search(body: SearchMemoryIn, user: ReaderId, memory: ReadMemory) -> list[MessageHit]:
        """Search the caller's own messages only (hybrid by default)."""
        if memory is None:
            return []
        return memory.search(
            user, body.query, limit=body.limit, min_score=body.min_score, topics=body.topics,
            conversation_id=body.conversation_id, exclude_conversation=body.exclude_conversation,
            mode=body.mode,
        )  # fmt: skip

    @router.post("/context", response_model=Context, responses=error_responses(*_COMMON))
    def context(request: Request, body: ContextIn, user: ReaderId, memory: ReadMemory) -> Context:
        """The caller's context for a query, pruned to ``token_budget`` tokens."""
        if memory is None:
            return _query_only_context(request, body)
        return memory.context(
            user, body.conversation_id, body.query, recent=body.recent,
            semantic=body.semantic, token_budget=body.token_budget, min_score=body.min_score,
            mode=body.mode,
        )  # fmt: skip

    @router.get("/stats", response_model=MemoryStats, responses=error_responses(*_COMMON))
    def stats(user: ReaderId, memory: ReadMemory) -> MemoryStats:
        """Counts of the caller's messages, conversations and topics (zeros before any)."""
        return memory.stats(user) if memory else MemoryStats(0, 0, 0, 0, 0)

    @router.get("/health", response_model=MemoryHealth, responses=error_responses(*_COMMON))
    def health(request: Request, user: ReaderId, memory: ReadMemory) -> MemoryHealth:
        """Probe the store (the caller's chunk counts, pending and failed apart as /stats
        gives them), the embedder (embeds a short text) and the background worker, as
        ``ConversationMemory.health()`` does. 200 with ``ok`` false when a part fails; never
        creates the memory."""
        return _health(request, user, memory)

    @router.post("/backfill", response_model=BackfillReport, responses=error_responses(*_COMMON))
    def backfill(user: WriterId, memory: ReadMemory) -> BackfillReport:
        """Embed the caller's pending messages now."""
        return memory.backfill(user_id=user) if memory else BackfillReport()

    @router.delete("", response_model=DeletedOut, responses=error_responses(*_COMMON))
    def delete_user(user: WriterId, memory: ReadMemory) -> DeletedOut:
        """Delete every message of the caller."""
        return DeletedOut(deleted=memory.delete_user(user) if memory else 0)

    return router
