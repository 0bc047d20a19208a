"""semsearch: semantic, keyword and hybrid search over your own data.

import semsearch
db = semsearch.connect("notes.embed.db")
notes = db.collection("notes")
notes.upsert([{"id": "a.md", "text": "How to link notes with [[wikilinks]]"}])
for hit in notes.search("connect two notes"):
    print(hit.id, hit.score)
"""

from typing import TYPE_CHECKING, Any

from semsearch.collection import Collection, CollectionStats
from semsearch.database import Database, connect
from semsearch.errors import (
    BackendUnavailable,
    DimensionMismatch,
    EmbedderUnavailable,
    IndexNotFound,
    IndexUnhealthy,
    InvalidFilter,
    InvalidQuery,
    InvalidRecord,
    ModelMismatch,
    NotAnIndex,
    SemsearchError,
    StoreCorrupted,
)
from semsearch.results import Chunk, Hit, LegScore, Record, SearchResult, UpsertReport
from semsearch.schema import Field, Schema, SchemaConflict

if TYPE_CHECKING:
    from semsearch.memory import ConversationMemory

__version__ = "0.1.0"

__all__ = [
    "BackendUnavailable",
    "Chunk",
    "Collection",
    "CollectionStats",
    "ConversationMemory",
    "Database",
    "DimensionMismatch",
    "EmbedderUnavailable",
    "Field",
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
    "Schema",
    "SchemaConflict",
    "SearchResult",
    "SemsearchError",
    "StoreCorrupted",
    "UpsertReport",
    "__version__",
    "connect",
]


def __getattr__(name: str) -> Any:
    """Import ConversationMemory on first use (it loads the background worker and tenacity)."""
    if name == "ConversationMemory":
        from semsearch.memory import ConversationMemory

        return ConversationMemory
    raise AttributeError(f"module 'semsearch' has no attribute {name!r}")
