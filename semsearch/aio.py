"""The async twin of the Python API: ``await semsearch.aconnect(...)``.

    db = await semsearch.aconnect("notes.embed.db")
    notes = await db.collection("notes")
    await notes.upsert([{"id": "a", "text": "Water tomatoes twice a week"}])
    result = await notes.search("how often to water?")
    await db.close()

Every verb of :class:`~semsearch.Database`, :class:`~semsearch.Collection` and
:class:`~semsearch.memory.conversation.ConversationMemory` has an async twin with the same arguments, results
and errors. The blocking work (store I/O, embedding) runs in a thread pool owned by the database,
one worker thread by default, so the event loop never waits on it. Why a worker thread and not
the drivers' native async clients: the embedder (ONNX Runtime, or an API client) is blocking
anyway; SQLite has no async driver; and one code path for the three stores keeps their behaviour
(transactions, retries, refills) identical to the sync API. One thread per database serialises
its calls in the order they were awaited: SQLite admits one writer at a time anyway, and the
embedder uses the CPU, so more threads would only contend. ``max_workers`` raises it, e.g. for
many concurrent reads on PostgreSQL (the sync objects are thread-safe: the HTTP server calls them
from its worker threads too). A call whose awaiting task is cancelled still finishes in its
thread (a write is never cut half-way); its result is dropped.
"""

from __future__ import annotations

import asyncio
import functools
import os
from collections.abc import Callable, Coroutine
from concurrent.futures import Future, ThreadPoolExecutor
from types import TracebackType
from typing import Any, Concatenate, ParamSpec, TypeVar

from semsearch.collection import Collection
from semsearch.database import Database, connect
from semsearch.lifecycle import database_closed
from semsearch.memory.conversation import ConversationMemory
from semsearch.schema import Schema

__all__ = ["AsyncCollection", "AsyncConversationMemory", "AsyncDatabase", "aconnect"]

_P = ParamSpec("_P")
_R = TypeVar("_R")


class _Pool(ThreadPoolExecutor):
    """The database's thread pool; after :meth:`shutdown` (the database was closed) a new call
    raises BackendUnavailable, as the sync API does, not the executor's RuntimeError."""

    closed = False

    def submit(self, fn: Callable[_P, _R], /, *args: _P.args, **kwargs: _P.kwargs) -> Future[_R]:
        """As :meth:`ThreadPoolExecutor.submit`; raises BackendUnavailable once closed."""
        try:
            return super().submit(fn, *args, **kwargs)
        except RuntimeError:
            if self.closed:
                raise database_closed() from None
            raise

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        """Refuse new calls (BackendUnavailable), then shut the pool down."""
        self.closed = True
        super().shutdown(wait, cancel_futures=cancel_futures)


class _Twin:
    """An async face over one sync object; its calls run on the database's executor."""

    def __init__(self, sync: Any, executor: _Pool) -> None:
        self._sync = sync
        self._executor = executor

    async def _call(self, fn: Callable[..., _R], *args: Any, **kwargs: Any) -> _R:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._executor, functools.partial(fn, *args, **kwargs))


def _twin(
    method: Callable[Concatenate[Any, _P], _R],
) -> Callable[Concatenate[_Twin, _P], Coroutine[Any, Any, _R]]:
    """The async twin of a sync method: same arguments, result and errors, run in a thread."""
    name = method.__name__

    @functools.wraps(method)
    async def run(self: _Twin, *args: _P.args, **kwargs: _P.kwargs) -> _R:
        result: _R = await self._call(getattr(self._sync, name), *args, **kwargs)
        return result

    return run  # type: ignore[return-value]  # functools.wraps's _Wrapped is this callable


async def aconnect(location: str | os.PathLike[str], *, max_workers: int = 1) -> AsyncDatabase:
    """Open a store by location, as :func:`semsearch.connect`, for use from async code.

    Args:
        location: as :func:`semsearch.connect`.
        max_workers: threads that run this database's blocking calls (default 1: calls run
            one at a time, in the order awaited; see the module doc).
    Raises:
        BackendUnavailable, NotAnIndex: as :func:`semsearch.connect`.
        InvalidQuery: ``max_workers`` is not an int >= 1.
    """
    if isinstance(max_workers, bool) or not isinstance(max_workers, int) or max_workers < 1:
        from semsearch.errors import InvalidQuery

        raise InvalidQuery(
            f"max_workers must be an int >= 1, got {max_workers!r}", hint="e.g. max_workers=1"
        )
    executor = _Pool(max_workers, thread_name_prefix="semsearch-aio")
    try:
        db = await asyncio.get_running_loop().run_in_executor(executor, connect, location)
    except BaseException:
        executor.shutdown(wait=False)
        raise
    return AsyncDatabase(db, executor)


class AsyncDatabase(_Twin):
    """The async twin of :class:`~semsearch.Database` (from :func:`aconnect`); an async
    context manager. ``sync`` is the Database itself."""

    _sync: Database

    @property
    def sync(self) -> Database:
        """The sync Database (do not call it from the event loop: it blocks)."""
        return self._sync

    @property
    def location(self) -> str:
        """As :attr:`semsearch.Database.location`."""
        return self._sync.location

    async def collection(
        self,
        name: str,
        *,
        schema: Schema | None = None,
        embedder: Any = None,
        create: bool = True,
        keyword_tokenizer: str | None = None,
        strict_model: bool = True,
        sentence_windows: bool | None = None,
        keyword_stopwords: str | None = None,
    ) -> AsyncCollection:
        """Open (or create) a collection; arguments and errors as
        :meth:`semsearch.Database.collection` (the embedder is not loaded yet)."""
        coll = await self._call(
            self._sync.collection, name, schema=schema, embedder=embedder, create=create,
            keyword_tokenizer=keyword_tokenizer, strict_model=strict_model,
            sentence_windows=sentence_windows, keyword_stopwords=keyword_stopwords,
        )  # fmt: skip
        return AsyncCollection(coll, self._executor)

    async def memory(self, **kwargs: Any) -> AsyncConversationMemory:
        """A :class:`~semsearch.memory.conversation.ConversationMemory` on this database, async; keyword
        arguments as its constructor. Close it (``await memory.close()``) before the database."""
        made = await self._call(ConversationMemory, self._sync, **kwargs)
        return AsyncConversationMemory(made, self._executor)

    exists = _twin(Database.exists)
    collections = _twin(Database.collections)
    is_memory = _twin(Database.is_memory)
    drop_collection = _twin(Database.drop_collection)
    compact = _twin(Database.compact)

    async def close(self) -> None:
        """Close the store (after the calls already queued), then the thread pool; closing
        twice is harmless. Every call on this database or its collections and memories after
        raises BackendUnavailable."""
        if self._executor.closed:
            return
        try:
            await self._call(self._sync.close)
        finally:
            self._executor.shutdown(wait=False)

    async def __aenter__(self) -> AsyncDatabase:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()

    def __repr__(self) -> str:
        return f"AsyncDatabase({self.location!r})"


class AsyncCollection(_Twin):
    """The async twin of :class:`~semsearch.Collection`: every verb, awaited."""

    _sync: Collection

    @property
    def sync(self) -> Collection:
        """The sync Collection (do not call it from the event loop: it blocks)."""
        return self._sync

    @property
    def name(self) -> str:
        """The collection's name."""
        return self._sync.name

    @property
    def model_id(self) -> str:
        """The embedder model id stored with the collection."""
        return self._sync.model_id

    @property
    def schema(self) -> Schema:
        """The collection's schema."""
        return self._sync.schema

    upsert = _twin(Collection.upsert)
    get = _twin(Collection.get)
    delete = _twin(Collection.delete)
    delete_where = _twin(Collection.delete_where)
    count = _twin(Collection.count)
    ids = _twin(Collection.ids)
    find = _twin(Collection.find)
    search = _twin(Collection.search)
    search_by_vector = _twin(Collection.search_by_vector)
    stats = _twin(Collection.stats)
    reindex = _twin(Collection.reindex)
    embed_pending = _twin(Collection.embed_pending)
    vectors = _twin(Collection.vectors)

    def __repr__(self) -> str:
        return f"AsyncCollection({self.name!r}, model={self.model_id!r})"


class AsyncConversationMemory(_Twin):
    """The async twin of :class:`~semsearch.memory.conversation.ConversationMemory` (from
    :meth:`AsyncDatabase.memory`). Embedding still happens in the memory's own background
    worker; these calls only move the store I/O off the event loop."""

    _sync: ConversationMemory

    @property
    def sync(self) -> ConversationMemory:
        """The sync ConversationMemory."""
        return self._sync

    add_message = _twin(ConversationMemory.add_message)
    add_conversation = _twin(ConversationMemory.add_conversation)
    delete_conversation = _twin(ConversationMemory.delete_conversation)
    delete_user = _twin(ConversationMemory.delete_user)
    search = _twin(ConversationMemory.search)
    recent = _twin(ConversationMemory.recent)
    context = _twin(ConversationMemory.context)
    backfill = _twin(ConversationMemory.backfill)
    stats = _twin(ConversationMemory.stats)
    health = _twin(ConversationMemory.health)
    wait_idle = _twin(ConversationMemory.wait_idle)
    close = _twin(ConversationMemory.close)
