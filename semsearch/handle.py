"""A collection handle's identity and guards: the checks every verb of a Collection runs first.

:class:`CollectionHandle` holds what a :class:`semsearch.Collection` is opened with (store, info,
schema, embedder) and answers whether the handle may still be used: the Database may be closed,
the collection dropped here or by another connection, or opened with another model
(``strict_model=False``). The verbs live above it: reads and search in
:mod:`semsearch.collection_reads`, writes in :mod:`semsearch.collection`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from semsearch.embedders.base import Embedder
from semsearch.errors import (
    BackendUnavailable,
    DimensionMismatch,
    EmbedderUnavailable,
    IndexNotFound,
    ModelMismatch,
    StoreCorrupted,
)
from semsearch.lifecycle import Lifecycle, check_stored
from semsearch.schema import Schema
from semsearch.stores.base import CollectionInfo, Store

__all__ = ["CollectionHandle"]

_T = TypeVar("_T")


class CollectionHandle:
    """What a collection handle holds, and the guards its verbs run (base of Collection).

    Attributes:
        store: the backend. info: the stored collection info this handle opened with.
        schema: declared fields and text template. embedder: the embedding model.
    """

    def __init__(
        self,
        store: Store,
        info: CollectionInfo,
        schema: Schema,
        embedder: Embedder,
        *,
        lifecycle: Lifecycle | None = None,
        mismatch: ModelMismatch | None = None,
    ):
        self.store = store
        self.info = info
        self.schema = schema
        self.embedder = embedder
        self._life = lifecycle or Lifecycle()
        self._generation = self._life.generation(info.name)
        self._gone = False  # set when check_stored found the collection dropped elsewhere
        #: Set when opened with ``strict_model=False`` and another model than the stored one:
        #: the verbs that embed raise it (see ``Database.collection``).
        self._mismatch = mismatch

    def _live(self) -> None:
        """Raise if the Database was closed or this collection dropped (no query)."""
        self._life.check(self.info.name, self._generation)

    def _stored(self) -> CollectionInfo:
        """The stored info; IndexNotFound when another connection dropped (or replaced) it."""
        try:
            return check_stored(self.store, self.info)
        except IndexNotFound:
            self._gone = True
            raise

    @property
    def usable(self) -> bool:
        """False once the Database is closed, the collection dropped through it, or this handle
        found it dropped or replaced by another connection (no query: long-lived caches, such as
        the HTTP and MCP servers', check it and open a new handle)."""
        try:
            self._live()
        except (BackendUnavailable, IndexNotFound):
            return False
        return not self._gone

    def _check_dim(self, stored_dim: int | None) -> None:
        """DimensionMismatch before any write when the embedder's (known) dimension differs
        from the stored vectors' (an embedder whose dimension needs a network probe is checked
        when its vectors are stored, as before)."""
        if stored_dim is None:
            return
        try:
            dim = self.embedder.dim
        except EmbedderUnavailable:
            return
        if dim != stored_dim:
            raise DimensionMismatch(
                f"collection {self.name!r} holds {stored_dim}-d vectors; the embedder gives "
                f"{dim}-d; nothing was written",
                hint="use the model the collection was built with",
            )

    def _read(self, call: Callable[[], _T]) -> _T:
        """Run a store read. An empty answer (a dropped collection reads empty on most stores)
        or StoreCorrupted (Milvus) is first checked with :meth:`_stored`, so a drop by another
        connection raises IndexNotFound; reads with results cost no extra query."""
        try:
            result = call()
        except StoreCorrupted:
            self._stored()
            raise
        if not result:
            self._stored()
        return result

    def _require_model(self) -> None:
        """Raise ModelMismatch when the embedder is not the collection's model."""
        if self._mismatch is not None:
            raise ModelMismatch(self._mismatch.message, hint=self._mismatch.hint)

    @property
    def name(self) -> str:
        """The collection's name."""
        return self.info.name

    @property
    def model_id(self) -> str:
        """The embedder model id stored with the collection."""
        return self.info.model_id

    def __repr__(self) -> str:
        return f"Collection({self.name!r}, model={self.model_id!r})"
