"""semsearch: semantic, keyword and hybrid search over your own data.

import semsearch
db = semsearch.connect("notes.embed.db")
notes = db.collection("notes")
notes.upsert([{"id": "a.md", "text": "How to link notes with [[wikilinks]]"}])
for hit in notes.search("connect two notes"):
    print(hit.id, hit.score)

This module is the public API: ``connect``/``aconnect``, ``Database``, ``Collection``,
``ConversationMemory``, ``Schema``, the result types and the error tree, each imported on first
use. Any code may import it; nothing inside the package imports it except the applications and
faces on top (docs/architecture.md draws the layers).
"""

from importlib import import_module
from typing import TYPE_CHECKING, Any

from semsearch.errors import (
    BackendUnavailable,
    DimensionMismatch,
    EmbedderUnavailable,
    FolderMismatch,
    IndexNotFound,
    IndexUnhealthy,
    InvalidFilter,
    InvalidQuery,
    InvalidRecord,
    ModelMismatch,
    NotAnIndex,
    RerankerUnavailable,
    SemsearchError,
    StoreCorrupted,
)

if TYPE_CHECKING:
    from semsearch.aio import AsyncCollection, AsyncConversationMemory, AsyncDatabase, aconnect
    from semsearch.collection import Collection, CollectionStats
    from semsearch.database import Database, connect
    from semsearch.memory.conversation import ConversationMemory
    from semsearch.rerank import Reranker
    from semsearch.results import Chunk, Hit, LegScore, Record, SearchResult, UpsertReport
    from semsearch.schema import Field, Schema, SchemaConflict

# Imported on first use (PEP 562), so that `semsearch --help` and keyword-only commands do not
# pay for numpy, the stores and the chunker before they need them.
_LAZY = {
    "AsyncCollection": "semsearch.aio",
    "AsyncConversationMemory": "semsearch.aio",
    "AsyncDatabase": "semsearch.aio",
    "aconnect": "semsearch.aio",
    "Collection": "semsearch.collection",
    "CollectionStats": "semsearch.collection",
    "Database": "semsearch.database",
    "connect": "semsearch.database",
    "ConversationMemory": "semsearch.memory.conversation",
    "Reranker": "semsearch.rerank",
    "Chunk": "semsearch.results",
    "Hit": "semsearch.results",
    "LegScore": "semsearch.results",
    "Record": "semsearch.results",
    "SearchResult": "semsearch.results",
    "UpsertReport": "semsearch.results",
    "Field": "semsearch.schema",
    "Schema": "semsearch.schema",
    "SchemaConflict": "semsearch.schema",
}

__version__ = "0.1.0"

__all__ = [
    "AsyncCollection",
    "AsyncConversationMemory",
    "AsyncDatabase",
    "BackendUnavailable",
    "Chunk",
    "Collection",
    "CollectionStats",
    "ConversationMemory",
    "Database",
    "DimensionMismatch",
    "EmbedderUnavailable",
    "Field",
    "FolderMismatch",
    "Hit",
    "IndexNotFound",
    "IndexUnhealthy",
    "InvalidFilter",
    "InvalidQuery",
    "InvalidRecord",
    "LegScore",
    "ModelMismatch",
    "NotAnIndex",
    "Record",
    "Reranker",
    "RerankerUnavailable",
    "Schema",
    "SchemaConflict",
    "SearchResult",
    "SemsearchError",
    "StoreCorrupted",
    "UpsertReport",
    "__version__",
    "aconnect",
    "connect",
]


def __getattr__(name: str) -> Any:
    """Import the public classes and ``connect`` on first use."""
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'semsearch' has no attribute {name!r}")
    value = getattr(import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
