"""What the engine needs from a collection: its store, embedder, schema and identity.

Search (:mod:`semsearch.search`), ingest (:mod:`semsearch.ingest`) and search by vector
(:mod:`semsearch.vector_query`) take a :class:`CollectionParts`, not a
:class:`semsearch.Collection`: they sit on a floor below ``collection.py``, which calls them with
itself (a Collection has every attribute named here), so no import runs back up.
"""

from __future__ import annotations

from typing import Protocol

from semsearch.embedders.base import Embedder
from semsearch.schema import Schema
from semsearch.stores.base import CollectionInfo, Store

__all__ = ["CollectionParts"]


class CollectionParts(Protocol):
    """The narrow view of a collection that search and ingest use.

    Attributes:
        name: the collection's name, as the store knows it.
        store: the backend (any :class:`~semsearch.stores.base.Store`).
        info: the stored collection info (model id, dim, options) this handle opened with.
        schema: the declared fields and text template.
        embedder: the embedding model (loaded lazily; float32[n, dim], unit-normalised).
    """

    @property
    def name(self) -> str: ...

    @property
    def store(self) -> Store: ...

    @property
    def info(self) -> CollectionInfo: ...

    @property
    def schema(self) -> Schema: ...

    @property
    def embedder(self) -> Embedder: ...
