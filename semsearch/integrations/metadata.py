"""How a framework's document metadata becomes a semsearch record, and back (one rule for the
LangChain and the LlamaIndex adapters).

A document (LangChain ``Document``, LlamaIndex ``TextNode``) has an id, a text and a metadata
dict. It is stored as the record ``{"id": id, "text": text, "metadata": {...}}``: the metadata
dict is kept whole, under the key ``metadata``, so any JSON metadata round-trips unchanged (even
keys named ``id`` or ``text``, which are a record's own keys).

Filtering needs declared fields (:mod:`semsearch.schema`): ``fields={"source": "str",
"page": "int"}`` declares the metadata keys ``source`` and ``page`` as fields of those names,
read from ``metadata.source`` and ``metadata.page``; ``where={"page": {"$gte": 2}}`` then filters
before ranking. Metadata keys that are not declared are stored and returned, but a filter on them
raises InvalidFilter. Types are declared, never inferred from the first documents: a type guessed
from ``{"page": 1}`` would refuse a later ``{"page": "iv"}``, and a schema is fixed per
collection (fields can be added by opening it again with more).

``metadata_key=None`` maps metadata onto the record's top-level fields instead: for wrapping an
existing collection (e.g. one built by ``semsearch index`` or ``import``), whose fields then are
the documents' metadata and whose declared fields filter as they always did. There a metadata
key ``id`` or ``text`` is refused (InvalidRecord), because it would overwrite the record's own.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from semsearch.database import Database
from semsearch.embedders.base import Embedder
from semsearch.errors import InvalidRecord
from semsearch.schema import Schema

if TYPE_CHECKING:
    from semsearch.collection import Collection

__all__ = ["METADATA_KEY", "MetadataRule", "check_writable", "connect_collection"]

#: The record key under which a document's metadata is kept (by default).
METADATA_KEY = "metadata"
_RESERVED = ("id", "text")


@dataclass(frozen=True)
class MetadataRule:
    """Where metadata lives in a record: under ``key``, or (``key=None``) at the top level."""

    key: str | None = METADATA_KEY

    def schema(self, fields: Mapping[str, str] | None) -> Schema:
        """The schema declaring ``fields`` (``{"name": "type"}`` or ``"type=dotted.path"``),
        each read from the metadata (``metadata.<name>``) unless it names its own path.

        Raises:
            InvalidQuery / SemsearchError: as :meth:`semsearch.Schema.from_types`.
        """
        mapped: dict[str, str] = {}
        for name, spec in (fields or {}).items():
            if isinstance(spec, str) and "=" not in spec and self.key is not None:
                spec = f"{spec}={self.key}.{name}"
            mapped[name] = spec
        return Schema.from_types(mapped)

    def to_record(
        self, record_id: str, text: str, metadata: Mapping[str, Any] | None
    ) -> dict[str, Any]:
        """The record for one document.

        Raises:
            InvalidRecord: metadata is not a dict, or (``key=None``) has a key ``id``/``text``.
        """
        if metadata is not None and not isinstance(metadata, Mapping):
            raise InvalidRecord(
                f"metadata of {record_id!r} must be a dict, got {type(metadata).__name__}",
                hint='e.g. metadata={"source": "notes/a.md"}',
            )
        meta = dict(metadata or {})
        if self.key is not None:
            return {"id": record_id, "text": text, self.key: meta}
        clash = [k for k in _RESERVED if k in meta]
        if clash:
            raise InvalidRecord(
                f"metadata of {record_id!r} has the key {clash[0]!r}, a record's own key",
                hint="open the store with metadata_key='metadata' (the default) to keep any "
                "metadata, or rename that key",
            )
        return {**meta, "id": record_id, "text": text}

    def from_fields(self, fields: Mapping[str, Any]) -> dict[str, Any]:
        """A record's fields as the document's metadata."""
        if self.key is None:
            return dict(fields)
        meta = fields.get(self.key)
        return dict(meta) if isinstance(meta, Mapping) else {}


def check_writable(schema: Schema, collection: str) -> None:
    """Raise InvalidRecord unless the collection's text is its records' ``text`` key (the
    adapters write a document's text there; a collection whose template reads other fields
    would embed nothing of it)."""
    if tuple(schema.text) != ("text",):
        raise InvalidRecord(
            f"collection {collection!r} builds its text from {', '.join(schema.text)}, not from "
            "a `text` key: documents added here would not be embedded",
            hint="add documents to a collection made by the adapter (the default schema), or "
            "upsert records with the collection's own fields through semsearch",
        )


def connect_collection(
    location: str, name: str, wanted: Schema, embedder: str | Embedder | None
) -> tuple[Database, Collection]:
    """Connect to ``location`` and open (or create) ``name`` with at least the fields of
    ``wanted`` (the adapters' ``open``); the Database is closed again if that fails.

    A new collection gets ``wanted``; an existing one keeps its schema and gains the fields it
    lacks, so an adapter reopened with fewer ``fields`` (or none) than before still opens.

    Raises:
        SchemaConflict: a field of ``wanted`` is stored with another type or path.
        ModelMismatch, DimensionMismatch: as :meth:`semsearch.Database.collection`.
        BackendUnavailable, NotAnIndex: as :func:`semsearch.connect`.
    """
    from semsearch.database import connect

    db = connect(location)
    try:
        return db, _open(db, name, wanted, embedder)
    except BaseException:
        db.close()
        raise


def _open(db: Database, name: str, wanted: Schema, embedder: str | Embedder | None) -> Collection:
    if name not in db.collections():
        return db.collection(name, schema=wanted, embedder=embedder)
    stored = db.collection(name, embedder=embedder).schema
    fields = [wanted.field(f.name) or f for f in stored.fields]
    fields += [f for f in wanted.fields if stored.field(f.name) is None]
    merged = Schema(tuple(fields), stored.text, stored.chunker)
    return db.collection(name, schema=merged, embedder=embedder)
