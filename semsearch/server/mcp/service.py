"""The library side of ``semsearch mcp``: every tool's logic over one index, with privacy scope.

This module knows nothing about MCP. :class:`McpService` opens the index lazily (the missing-index
check runs before any model is loaded), applies the ``--exclude`` / ``--read-paths`` scope to
every output, and returns plain JSON-ready dicts (built by :mod:`semsearch.server.mcp.views`,
whose :func:`~semsearch.server.mcp.views.safe_message` turns a
:class:`~semsearch.errors.SemsearchError` into text a model can act on, without absolute paths).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from semsearch.collection import Collection
from semsearch.database import Database, check_location, connect
from semsearch.embedders.query_cache import DEFAULT_CAPACITY, QueryCache, with_query_cache
from semsearch.errors import IndexNotFound, InvalidQuery, InvalidRecord, SemsearchError
from semsearch.health import read_health
from semsearch.rerank import resolve_reranker
from semsearch.rerank.stage import retrieval_reason
from semsearch.schema import Schema
from semsearch.scope import has_dot_segment
from semsearch.search import PathScope
from semsearch.server.mcp.views import (
    chunk_view,
    result_view,
    safe_message,
    scoped_health,
    scrub_paths,
    title_of,
)

__all__ = ["MAX_HITS", "McpConfig", "McpService"]

#: Tool-side cap on ``limit`` (the library allows 1000; agents get at most 100 per call).
MAX_HITS = 100


@dataclass(frozen=True)
class McpConfig:
    """What ``semsearch mcp`` serves.

    Attributes:
        location: an index file (``*.embed.db``) or a store URL, as for :func:`semsearch.connect`.
        collection: the collection tools use when the caller names none.
        exclude: globs on record ids (paths) that no tool ever returns.
        read_paths: when non-empty, an allowlist: only ids matching one of these globs are shown.
        allow_writes: expose ``upsert``, ``delete`` and ``reindex``.
        model: embedder spec overriding the stored one (``SEMSEARCH_MODEL``), or None.
        keyword_tokenizer: for a collection the ``upsert`` tool creates: ``porter`` (default)
            or ``trigram``; an existing collection must already use it.
        reranker: the reranker spec every search uses unless the call sends
            ``rerank: false`` (``semsearch mcp --reranker``), or None.
        rerank_top_n: hits it rescores (None: 50).
        query_cache: query vectors kept in the LRU (0 turns it off).
    """

    location: str
    collection: str = "notes"
    exclude: tuple[str, ...] = ()
    read_paths: tuple[str, ...] = ()
    allow_writes: bool = False
    model: str | None = None
    keyword_tokenizer: str | None = None
    reranker: str | None = None
    rerank_top_n: int | None = None
    query_cache: int = DEFAULT_CAPACITY

    def __post_init__(self) -> None:
        """Raises BackendUnavailable for a location that can never be an index (its form is
        checked before its existence, so no tool hints a command that cannot work)."""
        check_location(self.location)

    @property
    def is_file(self) -> bool:
        """True when ``location`` is a local file path rather than a URL or ``:memory:``."""
        return "://" not in self.location and self.location != ":memory:"


class McpService:
    """Tool logic over one index. Thread-safe: calls are serialised (one model, one store)."""

    def __init__(self, config: McpConfig) -> None:
        self.config = config
        self.scope = PathScope(None, config.exclude, config.read_paths)
        self._lock = threading.RLock()
        self._db: Database | None = None
        self._collections: dict[str, Collection] = {}
        self._embedder_errors: dict[str, str] = {}
        self.reranker = resolve_reranker(config.reranker) if config.reranker else None
        self.query_cache = QueryCache(config.query_cache) if config.query_cache > 0 else None

    # -- opening ----------------------------------------------------------------------------

    def _database(self, *, create: bool = False) -> Database:
        """The open index. Raises IndexNotFound (before any model load) when it does not exist."""
        if self._db is not None:
            return self._db
        name = os.path.basename(self.config.location) if self.config.is_file else "the store"
        missing = IndexNotFound(
            f"no semsearch index at {name}",
            hint="build it with `semsearch index <folder> --index "
            f"{name if self.config.is_file else '<location>'}`, then call this tool again",
        )
        if not create and self.config.is_file and not os.path.exists(self.config.location):
            raise missing
        db = connect(self.config.location)
        if not create and not db.exists():
            db.close()
            raise missing
        self._db = db
        return db

    def collection(self, name: str | None, *, create: bool = False) -> Collection:
        """Open a collection (the default one when ``name`` is None); the model is not loaded."""
        name = name or self.config.collection
        cached = self._collections.get(name)
        if cached is None or not cached.usable:  # dropped elsewhere since: open it again
            db = self._database(create=create)
            tokenizer = self.config.keyword_tokenizer if create else None
            self._collections[name] = db.collection(
                name,
                create=create,
                embedder=self.config.model,
                strict_model=False,
                keyword_tokenizer=tokenizer,
            )  # another model: keyword search works, semantic search raises ModelMismatch
            coll = self._collections[name]
            coll.embedder = with_query_cache(coll.embedder, self.query_cache)
        return self._collections[name]

    def close(self) -> None:
        """Close the index."""
        with self._lock:
            if self._db is not None:
                self._db.close()
            self._db = None
            self._collections.clear()

    # -- read tools -------------------------------------------------------------------------

    def search(
        self,
        query: str,
        *,
        mode: str = "hybrid",
        limit: int = 10,
        min_score: float | Literal["default"] | None = "default",
        folder: str | None = None,
        collection: str | None = None,
        where: Mapping[str, Any] | None = None,
        hypothetical_answer: str | None = None,
        rerank: bool | None = None,
    ) -> dict[str, Any]:
        """Ranked search; see the ``search`` tool. Embedder failure gives degraded keyword hits.

        ``rerank``: None reranks with the server's reranker when it has one, False never,
        True requires one (InvalidQuery when the server has none).
        """
        if not isinstance(query, str) or (not query.strip() and not where and not folder):
            raise InvalidQuery(  # a whole-index listing would only flood the agent's context
                "the query is empty; the search tool does not list every record",
                hint="pass the question or words to look for as `query`, "
                "or a `where` filter or `folder` to list matching records",
            )
        if not 1 <= limit <= MAX_HITS:
            raise InvalidQuery(f"limit must be in [1, {MAX_HITS}], got {limit}", hint="e.g. 10")
        if rerank is True and self.reranker is None:
            raise InvalidQuery(
                "this server has no reranker",
                hint="start it with `semsearch mcp --reranker SPEC`, or leave `rerank` unset",
            )
        with self._lock:
            coll = self.collection(collection)
            result = coll.search(
                query,
                mode=mode,
                limit=limit,
                min_score=min_score,
                where=where,
                folder=folder or None,
                exclude=self.config.exclude,
                include=self.config.read_paths,
                hypothetical_answer=hypothetical_answer,
                fallback="keyword",
                rerank=None if rerank is False else self.reranker,
                rerank_top_n=self.config.rerank_top_n,
            )
            reason = retrieval_reason(result)  # a failed reranking says nothing of the embedder
            if (reason and result.mode != "hybrid") or _embedder_missing(reason):
                self._embedder_errors[coll.name] = scrub_paths(reason or "")
            return result_view(coll.name, result)

    def get(
        self,
        record_id: str,
        *,
        collection: str | None = None,
        chunk: int | None = None,
        max_chars: int = 20_000,
    ) -> dict[str, Any]:
        """One record's full text (or one chunk of it) and fields; hidden ids are "not found"."""
        rid = record_id.strip().removeprefix("./")
        with self._lock:
            coll = self.collection(collection)
            records = coll.get([rid]) if rid and self.scope.allows(rid) else []
            if not records:
                raise SemsearchError(
                    f"no record {record_id!r} in collection {coll.name!r}",
                    hint="use the `id` of a search hit, e.g. a note's path relative to the vault",
                )
            record = records[0]
            out: dict[str, Any] = {
                "id": record.id,
                "collection": coll.name,
                "title": title_of(record.id, record.fields),
                "fields": record.fields,
            }
            text = record.text
            if chunk is not None:
                out["chunk"] = chunk_view(coll, record.text, record.fields, chunk)
                text = out["chunk"].pop("text")
            out["chars"] = len(text)
            out["truncated"] = len(text) > max_chars
            out["text"] = text[:max_chars]
            return out

    def list_collections(self) -> dict[str, Any]:
        """Every collection but conversation memory: schema, counts, model and pending
        embeddings (no model load)."""
        with self._lock:
            db = self._database()
            rows = []
            visible = set(db.collections())  # conversation memory is left out (database.py)
            for info in db.store.list_collections():
                if info.name not in visible:
                    continue
                schema = Schema.from_json(info.schema_json)
                st = db.store.stats(info.name)
                rows.append(
                    {
                        "name": info.name,
                        "default": info.name == self.config.collection,
                        "records": st.records,
                        "chunks": st.chunks,
                        "pending_embeddings": st.pending + st.failed,
                        "model": scrub_paths(info.model_id),
                        "dim": info.dim,
                        "fields": {f.name: f.type for f in schema.fields},
                        "text_template": list(schema.text),
                        "chunker": schema.chunker,
                        "last_indexed": st.last_updated,
                    }
                )
            return {"collections": rows}

    def stats(self) -> dict[str, Any]:
        """Index health: counts per collection, models, last write and whether semantic works."""
        with self._lock:
            db = self._database()
            listed = self.list_collections()["collections"]
            for row in listed:
                usable, reason = self._semantic_status(row["name"], row)
                health = read_health(db.store, row["name"])  # issue 12: the index health
                row["index_health"] = scoped_health(health.to_dict(), self.scope)
                if usable and not health.semantic_ok:
                    usable, reason = False, f"index quarantined: {health.reason}"
                row["semantic"] = {"usable": usable, "reason": reason}
            times = [r["last_indexed"] for r in listed if r["last_indexed"]]
            size = getattr(db.store, "file_size", lambda: None)()
            return {
                "index": os.path.basename(self.config.location) if self.config.is_file else None,
                "bytes": size,
                "healthy": all(r["semantic"]["usable"] for r in listed) and bool(listed),
                "last_indexed": max(times) if times else None,
                "default_collection": self.config.collection,
                "writes_allowed": self.config.allow_writes,
                "path_filters_active": bool(self.config.exclude or self.config.read_paths),
                "reranker": scrub_paths(self.reranker.model_id) if self.reranker else None,
                "query_cache": self.query_cache.stats().to_dict() if self.query_cache else None,
                "collections": listed,
            }

    def _semantic_status(self, name: str, row: Mapping[str, Any]) -> tuple[bool, str | None]:
        if name in self._embedder_errors:
            return False, self._embedder_errors[name]
        if row["records"] and row["pending_embeddings"] >= row["chunks"]:
            return False, "no chunk is embedded yet; keyword search works, run `reindex`"
        try:
            dim = self.collection(name).embedder.dim  # reads the model's config; no model load
        except SemsearchError as exc:
            return False, safe_message(exc)
        if row["dim"] is not None and dim != row["dim"]:
            return False, f"the model gives {dim}-d vectors; the collection holds {row['dim']}-d"
        return True, None

    # -- write tools ------------------------------------------------------------------------

    def upsert(
        self, records: Sequence[Mapping[str, Any]], *, collection: str | None = None
    ) -> dict[str, Any]:
        """Insert or update records (creating the collection if needed) and embed them."""
        self._check_writable([str(r.get("id", "")) for r in records if isinstance(r, Mapping)])
        with self._lock:
            coll = self.collection(collection, create=True)
            report = coll.upsert(records)
            return {
                "collection": coll.name,
                "added": report.added,
                "updated": report.updated,
                "unchanged": report.unchanged,
                "chunks_embedded": report.chunks_embedded,
                "chunks_pending": report.chunks_pending,
                "chunks_failed": report.chunks_failed,
                "errors": [scrub_paths(e) for e in report.errors],
            }

    def delete(self, ids: Sequence[str], *, collection: str | None = None) -> dict[str, Any]:
        """Delete records by id; returns how many existed."""
        self._check_writable(list(ids))
        with self._lock:
            coll = self.collection(collection)
            return {"collection": coll.name, "deleted": coll.delete(list(ids))}

    def reindex(self, *, collection: str | None = None) -> dict[str, Any]:
        """Embed every pending or failed chunk."""
        with self._lock:
            coll = self.collection(collection)
            report = coll.reindex()
            self._embedder_errors.pop(coll.name, None)
            return {"collection": coll.name, "chunks_embedded": report.chunks_embedded}

    def _check_writable(self, ids: Sequence[str]) -> None:
        if self.config.exclude or self.config.read_paths:
            dotted = [i for i in ids if has_dot_segment(i)]
            if dotted:  # the globs match the string, a reader sees another path
                raise InvalidRecord(
                    f"id {dotted[0][:200]!r} has a '.' or '..' path segment, so it names "
                    "another path than the one this server's path filters check; nothing was "
                    "written",
                    hint="write ids without '.' or '..' segments (e.g. public/notes.md)",
                )
        hidden = [i for i in ids if i and not self.scope.allows(i)]
        if hidden:
            raise InvalidRecord(
                f"{len(hidden)} id(s) lie outside the paths this server may access; "
                "nothing was written",
                hint="write only ids inside the server's --read-paths and outside its --exclude",
            )


def _embedder_missing(reason: str | None) -> bool:
    return bool(reason and reason.startswith("semantic leg"))
