"""connect(): a location string picks the backend; Database holds the collection registry.

A location's form is checked in :mod:`semsearch.location`, and the arguments and stored options
of ``Database.collection`` in :mod:`semsearch.collection_options`; ``check_location``,
``MEMORY_COLLECTION`` and ``MEMORY_OPTION`` stay importable from here.
"""

from __future__ import annotations

import dataclasses
import os
import re
from types import TracebackType

from semsearch.collection import Collection
from semsearch.collection_options import (
    MEMORY_COLLECTION,
    MEMORY_OPTION,
    check_arguments,
    check_options,
    check_stopwords,
    check_window_vectors,
    is_memory,
    keyword_options,
    memory_refused,
    window_vectors_option,
    with_stopwords,
    with_windows,
)
from semsearch.embedders.base import Embedder
from semsearch.embedders.registry import resolve_embedder, same_model
from semsearch.errors import (
    BackendUnavailable,
    DimensionMismatch,
    EmbedderUnavailable,
    IndexNotFound,
    ModelMismatch,
)
from semsearch.lifecycle import Lifecycle
from semsearch.location import check_location, redact
from semsearch.schema import Schema
from semsearch.stores.base import CollectionInfo, Store

__all__ = ["MEMORY_COLLECTION", "MEMORY_OPTION", "Database", "check_location", "connect"]

_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")


def connect(location: str | os.PathLike[str]) -> Database:
    """Open a store by location.

    Args:
        location: a path ending in ``.embed.db`` (SQLite file, created on first write) or
            ``":memory:"``; or ``postgresql://user:pass@host:5432/db`` (also ``postgres://``) for
            PostgreSQL with pgvector (needs ``pip install 'semsearch[postgres]'``); or
            ``milvus-lite:///path/notes.db`` (a Milvus Lite data folder) or
            ``http(s)://[user:pass@]host:19530[?token=...&db=...]`` for Milvus (needs
            ``pip install 'semsearch[milvus]'``).
    Returns:
        A Database. Nothing is loaded or created until it is used.
    Raises:
        BackendUnavailable: any other location (the message lists the supported schemes), or a
            PostgreSQL server that refuses the connection or the credentials.
        NotAnIndex: the path exists but is not a semsearch index (the file is left unchanged).
    """
    loc, backend = check_location(location)
    if backend == "sqlite":
        from semsearch.stores.sqlite.store import SQLiteStore

        return Database(SQLiteStore(loc if loc == ":memory:" else os.path.expanduser(loc)))
    if backend == "postgres":
        from semsearch.stores.postgres.store import PostgresStore

        return Database(PostgresStore(loc))
    from semsearch.stores.milvus.store import MilvusStore

    return Database(MilvusStore(loc))


class Database:
    """One store and its collections. Use as a context manager to close it.

    After :meth:`close`, every method (and every verb of a Collection it gave out) raises
    BackendUnavailable; after :meth:`drop_collection`, that collection's handles raise
    IndexNotFound (see :mod:`semsearch.lifecycle`).
    """

    def __init__(self, store: Store) -> None:
        self.store = store
        self._life = Lifecycle()

    @property
    def location(self) -> str:
        """Where the store lives (a file path, ``:memory:``, or a URL without password)."""
        return redact(self.store.location)

    def exists(self) -> bool:
        """True when the index exists (for SQLite: the file exists)."""
        self._life.check_open()
        return self.store.exists()

    def collections(self, *, include_memory: bool = False) -> list[str]:
        """Names of the collections in the store, sorted; conversation memory only with
        ``include_memory`` (servers resuming its pending embeddings), see MEMORY_COLLECTION."""
        self._life.check_open()
        listed = self.store.list_collections()
        return [c.name for c in listed if include_memory or not is_memory(c)]

    def is_memory(self, name: str) -> bool:
        """True when ``name`` is conversation memory, reachable only through the memory API."""
        self._life.check_open()
        info = self.store.get_collection(name) if name != MEMORY_COLLECTION else None
        return name == MEMORY_COLLECTION or (info is not None and is_memory(info))

    def collection(
        self,
        name: str,
        *,
        schema: Schema | None = None,
        embedder: str | Embedder | None = None,
        create: bool = True,
        keyword_tokenizer: str | None = None,
        strict_model: bool = True,
        sentence_windows: bool | None = None,
        keyword_stopwords: str | None = None,
        window_vectors: str | None = None,
    ) -> Collection:
        """Open (or create) a collection.

        Args:
            name: 1-64 chars of letters, digits, ``_ . -``, starting with a letter or digit.
            schema: declared fields and text template. For an existing collection it may add new
                fields; anything else that differs raises SchemaConflict.
            embedder: an Embedder or a spec string (``local:<path-or-name>``, ``fake:<dim>``).
                None means the stored model for an existing collection, else the default
                (``SEMSEARCH_MODEL`` or all-MiniLM-L6-v2). Nothing is loaded yet.
            create: create the collection if it does not exist.
            keyword_tokenizer: how keyword search splits text, fixed at creation: ``"porter"``
                (default: English words, stemmed) or ``"trigram"`` (any substring of 3+
                characters, for Chinese, Japanese or Korean; see docs/retrieval.md). Kept in
                the collection's options; None keeps what is stored.
            strict_model: True raises ModelMismatch here when ``embedder`` is another model
                than the stored one. False opens the collection anyway: keyword search, ``get``,
                ``find``, ``count``, ``stats`` and ``delete`` work (they need no embedder), and
                the verbs that embed (semantic and hybrid search, ``upsert``, ``reindex``,
                ``embed_pending``) raise ModelMismatch. The CLI, HTTP and MCP faces use False
                for their configured model (``SEMSEARCH_MODEL``).
            sentence_windows: True (the default for a new collection) embeds each chunk's
                sentences too and ranks chunks by the mix of chunk and best-sentence cosine
                (:mod:`semsearch.windows`); False embeds and scores whole chunks only (about
                half the embedding work). Kept in the collection's options; None keeps what
                is stored. Turning it on later gives windows to chunks embedded from then on.
            window_vectors: how sentence windows are embedded (:mod:`semsearch.windows`):
                ``"separate"`` (the default: each window a text of its own) or ``"late"``
                (from its chunk's own forward pass, where the model can: indexing about 2x
                faster, with the small ranking changes measured in docs/retrieval.md). Fixed
                at creation (``semsearch reembed --window-vectors`` rebuilds); None keeps
                what is stored.
            keyword_stopwords: the words keyword search leaves out of a query
                (:mod:`semsearch.keyword_query`): ``"english"`` (the default) or ``"none"``.
                Query side only (the index keeps every word), so it may change at any time;
                kept in the collection's options; None keeps what is stored.
        Raises:
            IndexNotFound: the collection does not exist and ``create`` is False.
            InvalidQuery: ``name`` is conversation memory (:data:`MEMORY_COLLECTION`, or a
                collection a ConversationMemory opened): it holds every user's messages and
                is reachable only through :class:`semsearch.memory.conversation.ConversationMemory`.
            SchemaConflict: ``keyword_tokenizer`` differs from the stored one.
            InvalidQuery: an unknown ``keyword_tokenizer`` or ``keyword_stopwords``; ``schema``
                not a Schema,
                ``embedder`` neither a spec string nor an Embedder, or ``create`` or
                ``strict_model`` not a bool.
            ModelMismatch: ``embedder`` differs from the model the collection was built with
                (with ``strict_model``).
            DimensionMismatch: the embedder's dimension differs from the stored one.
            EmbedderUnavailable: creating a collection with an unknown provider, or a
                ``local:`` folder that holds no model (nothing is created).
            BackendUnavailable: the Database was closed.
        """
        self._life.check_open()
        if not isinstance(name, str) or not _NAME.fullmatch(name):
            from semsearch.errors import InvalidQuery

            raise InvalidQuery(
                f"invalid collection name {name!r}", hint="e.g. 'notes' or 'spells-2024'"
            )
        if self.is_memory(name):
            raise memory_refused(name)
        if sentence_windows is not None and not isinstance(sentence_windows, bool):
            from semsearch.errors import InvalidQuery

            raise InvalidQuery(
                f"sentence_windows must be a bool or None, got {sentence_windows!r}",
                hint="sentence_windows=False",
            )
        check_stopwords(keyword_stopwords)
        kind = window_vectors_option(window_vectors)
        coll = self._open(name, schema, embedder, create, keyword_tokenizer, strict_model, kind)
        check_window_vectors(coll.info, window_vectors)
        return with_stopwords(with_windows(coll, sentence_windows), keyword_stopwords)

    def memory_collection(
        self, name: str = MEMORY_COLLECTION, *, schema: Schema, embedder: str | Embedder | None
    ) -> Collection:
        """Open (or create) a conversation-memory collection, marked private (MEMORY_OPTION).

        For :class:`semsearch.memory.conversation.ConversationMemory` and the servers' memory routes only:
        the collection returned reads every user's messages. Arguments and errors as
        :meth:`collection` (with ``create=True``, minus the memory refusal); also
        SchemaConflict when ``name`` is an existing collection that does not hold messages.
        """
        self._life.check_open()
        if not isinstance(name, str) or not _NAME.fullmatch(name):
            from semsearch.errors import InvalidQuery

            raise InvalidQuery(f"invalid collection name {name!r}", hint="e.g. 'messages'")
        info = self.store.get_collection(name)
        if info is not None and not is_memory(info) and not _holds_messages(info, schema):
            from semsearch.schema import SchemaConflict

            raise SchemaConflict(
                f"collection {name!r} exists and does not hold conversation memory; making it "
                "memory would hide its records from every search",
                hint="give the memory another collection name (collection=...), or drop that "
                "collection first; nothing was changed",
            )
        coll = self._open(name, schema, embedder, True, None, True, {MEMORY_OPTION: True})
        info = self.store.get_collection(name)
        if info is not None and not is_memory(info):  # made before the marker existed
            self.store.update_collection(
                dataclasses.replace(info, options={**info.options, MEMORY_OPTION: True})
            )
        return coll

    def _open(
        self,
        name: str,
        schema: Schema | None,
        embedder: str | Embedder | None,
        create: bool,
        keyword_tokenizer: str | None,
        strict_model: bool,
        extra_options: dict[str, object] | None = None,
    ) -> Collection:
        """:meth:`collection` without the memory refusal; ``extra_options`` go to a new one."""
        check_arguments(schema, embedder, create=create, strict_model=strict_model)
        options: dict[str, object] = {**keyword_options(keyword_tokenizer)}
        info = self.store.get_collection(name)
        if info is None:
            options.update(extra_options or {})
            return self._create(name, schema, embedder, create, options)
        check_options(info, options)
        stored = Schema.from_json(info.schema_json)
        merged = stored.merge(schema) if schema is not None else stored
        if merged != stored:
            info = dataclasses.replace(info, schema_json=merged.to_json())
            self.store.update_collection(info)
        emb, mismatch = self._embedder_for(info, embedder, strict_model)
        return Collection(self.store, info, merged, emb, lifecycle=self._life, mismatch=mismatch)

    def _create(
        self,
        name: str,
        schema: Schema | None,
        embedder: str | Embedder | None,
        create: bool,
        options: dict[str, object],
    ) -> Collection:
        if not create:
            existing = self.collections()
            where = f"in {self.location}" if self.exists() else f"at {self.location}"
            raise IndexNotFound(
                f"no collection {name!r} {where}",
                hint=f"existing collections: {', '.join(existing)}"
                if existing
                else f"build it with `semsearch index <folder>` or `semsearch import <file> "
                f"--collection {name}`, or name another index with --index",
            )
        emb = resolve_embedder(embedder)
        check = getattr(emb, "check_configured", None)  # the Embedder protocol does not ask it
        if callable(check):
            check()
        schema = schema or Schema()
        info = CollectionInfo(name, schema.to_json(), emb.model_id, None, options)
        self.store.create_collection(info)
        info = self.store.get_collection(name) or info  # with its creation stamp
        return Collection(self.store, info, schema, emb, lifecycle=self._life)

    @staticmethod
    def _embedder_for(
        info: CollectionInfo, embedder: str | Embedder | None, strict: bool
    ) -> tuple[Embedder, ModelMismatch | None]:
        """The embedder, and the ModelMismatch to raise later when not ``strict``."""
        if embedder is None:
            return resolve_embedder(info.model_id), None
        emb = resolve_embedder(embedder)
        if not same_model(info.model_id, emb.model_id):
            mismatch = ModelMismatch(
                f"collection {info.name!r} was built with model {info.model_id}; "
                f"asked to use {emb.model_id}",
                hint="use the original model, or switch explicitly with "
                "`semsearch reembed --model SPEC` (nothing was re-embedded or dropped)",
            )
            if strict:
                raise mismatch
            return emb, mismatch  # its dimension is irrelevant: it never embeds here
        try:
            dim = emb.dim
        except EmbedderUnavailable:
            # An API model whose dim needs a network probe must not block opening (keyword search
            # keeps working during an outage); stored vectors are dim-checked on every write.
            return emb, None
        if info.dim is not None and dim != info.dim:
            raise DimensionMismatch(
                f"collection {info.name!r} holds {info.dim}-d vectors; the embedder gives {dim}-d",
                hint="use the model the collection was built with",
            )
        return emb, None

    def drop_collection(self, name: str) -> bool:
        """Delete a collection and all its records. Returns False if it did not exist.

        Collection handles opened before raise IndexNotFound from then on.
        Raises:
            BackendUnavailable: the Database was closed.
        """
        self._life.check_open()
        dropped = self.store.drop_collection(name)
        self._life.dropped(name)
        return dropped

    def compact(self) -> tuple[int, int]:
        """Reclaim space: prune what every reader has consumed and rewrite the file (SQLite:
        the change log, then VACUUM; see docs/storage.md). On PostgreSQL: give collections
        written by earlier versions their keyword statistics, then VACUUM (ANALYZE) semsearch's
        tables (docs/postgres.md). Milvus compacts its own segments; there this brings
        collections written by earlier versions to the current layout (docs/milvus.md), as
        their first write would. Safe while other processes read.

        Returns:
            (bytes before, bytes after) of the index file and its WAL (PostgreSQL: of
            semsearch's tables with their indexes; a Milvus Lite folder; (0, 0) for a Milvus
            server).
        Raises:
            BackendUnavailable: the Database was closed, the file is not writable, or the
                store has no compact step.
        """

        self._life.check_open()
        compact = getattr(self.store, "compact", None)
        if compact is None:
            raise BackendUnavailable(
                f"{type(self.store).__name__} has no compact step",
                hint="reclaim space with the backend's own tools (VACUUM, compaction); the built-in "
                "SQLite, PostgreSQL and Milvus stores all have a compact step",
            )
        before, after = compact()
        return int(before), int(after)

    def close(self) -> None:
        """Close the store; closing twice is harmless. Handles raise BackendUnavailable after."""
        self._life.closed = True
        self.store.close()

    def __enter__(self) -> Database:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"Database({self.location!r})"


def _holds_messages(info: CollectionInfo, schema: Schema) -> bool:
    """True when ``info`` declares every field of the message ``schema``: a memory collection
    made before the memory marker existed (anything else is not memory)."""
    stored = {f.name for f in Schema.from_json(info.schema_json).fields}
    return {f.name for f in schema.fields} <= stored
