"""Collection: a named set of records with one schema and one embedder, and its verbs."""

from __future__ import annotations

import dataclasses
import logging
import unicodedata
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, TypeVar, cast

import numpy as np
from numpy.typing import NDArray

from semsearch import ingest
from semsearch.embedders.base import Embedder
from semsearch.errors import (
    BackendUnavailable,
    DimensionMismatch,
    EmbedderUnavailable,
    IndexNotFound,
    InvalidQuery,
    InvalidRecord,
    ModelMismatch,
    StoreCorrupted,
)
from semsearch.filters import parse_filter
from semsearch.lifecycle import Lifecycle, check_stored
from semsearch.rerank import Reranker, apply_rerank, plan_rerank
from semsearch.results import Chunk, Record, SearchResult, UpsertReport
from semsearch.schema import Schema
from semsearch.search import (
    MAX_LIMIT,
    PathScope,
    SearchRequest,
    health_check,
    resolve_min_score,
    run_search,
    structured_search,
    validate_request,
)
from semsearch.stores.base import CollectionInfo, Store
from semsearch.validation import as_ids, check_page, check_unique, order_fields, prepare_record

__all__ = ["Collection", "CollectionStats"]

log = logging.getLogger(__name__)
_T = TypeVar("_T")

#: Records found and deleted per transaction by ``delete_where``.
DELETE_PAGE = 1000


@dataclass(frozen=True)
class CollectionStats:
    """A collection's counts: records, chunks by embedding status, model and last write."""

    name: str
    model_id: str
    dim: int | None
    records: int
    chunks: int
    embedded: int
    pending: int
    failed: int
    last_updated: str | None
    fields: dict[str, str]
    #: The index health (:class:`semsearch.health.Health` as a dict): state ok | syncing |
    #: degraded | quarantined, reason, failed paths. None when not read.
    health: dict[str, Any] | None = None


class Collection:
    """A named set of records with one schema and one embedder.

    Obtained from :meth:`semsearch.Database.collection`; not constructed directly. Every verb
    raises BackendUnavailable once the Database is closed and IndexNotFound once the collection
    was dropped through it; a drop by another connection or process raises IndexNotFound on the
    next write, and on the next read that comes back empty (see :mod:`semsearch.lifecycle`).
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

    # -- writes -------------------------------------------------------------------------------

    def upsert(
        self,
        records: Iterable[Mapping[str, Any]],
        *,
        embed: bool = True,
        progress: ingest.Progress | None = None,
    ) -> UpsertReport:
        """Insert or update records by id, then embed their new chunks.

        Each record is a JSON object with an ``id`` (str or int); ``text`` (if present) is the
        document text, the rest are its fields. The whole input is validated before anything is
        written. Unchanged records are skipped; unchanged chunks (same content hash, same model)
        are never re-embedded, but chunks of unchanged records still without a vector (left by
        a crash or an outage) are embedded now. If the embedder fails, or changes its output
        dimension part-way, the records stay stored, keyword-searchable and counted as pending,
        ``errors`` says why, and :meth:`reindex` embeds them later. A text the model cannot
        embed (NaN, Inf or a zero vector) fails alone: it is named in ``failed`` and the rest
        of the call is embedded.

        Args:
            records: JSON objects.
            embed: False stores new chunks as pending without calling the embedder (a
                background worker or :meth:`reindex` embeds them); they are keyword-searchable
                at once.
            progress: called with the number of chunks embedded after each embedding group.
        Returns:
            UpsertReport with record counts (added/updated/unchanged), chunk counts
            (embedded/reused/pending/failed), ``failed`` ({record id: why}) and ``errors``.
        Raises:
            InvalidRecord: a record has no id, a duplicate id, a non-JSON value, a field of the
                wrong type, text that is not a str (or list of str) or not valid Unicode (a lone
                surrogate); nothing from the call is written.
            InvalidQuery: ``embed`` is not a bool.
            ModelMismatch: opened with ``strict_model=False`` and another model; nothing written.
            DimensionMismatch: the embedder's declared dimension differs from the stored
                vectors' before the call; nothing written (a change during the call is
                reported in ``errors`` instead).
            BackendUnavailable / IndexNotFound: the Database was closed / the collection was
                dropped (here, or by another connection: then also when it was created again).
        """
        self._live()
        self._require_model()
        if not isinstance(embed, bool):
            raise InvalidQuery(
                f"embed must be True or False, got {type(embed).__name__} ({embed!r:.40})",
                hint="embed=False stores the records as pending without embedding them",
            )
        if isinstance(records, Mapping | str | bytes) or not isinstance(records, Iterable):
            raise InvalidRecord(
                f"upsert takes a list of records, got {type(records).__name__}",
                hint='wrap a single record in a list: upsert([{"id": "a", "text": "..."}])',
            )
        name_only: list[str] = []
        prepared = [prepare_record(self.schema, r, name_only) for r in records]
        check_unique(prepared)
        if name_only:  # one line per call, not one per record
            log.warning(
                "%d record(s) have text that is only their %r (e.g. %s); they are still embedded",
                len(name_only), self.schema.text[0], ", ".join(map(repr, name_only[:3])),
            )  # fmt: skip
        # before anything is written: a vanished or replaced collection, or another dimension
        stored = self._stored()
        if embed:
            self._check_dim(stored.dim)
        return ingest.write(self, prepared, embed, progress)

    def chunk(self, text: str, fields: Mapping[str, Any] | None = None) -> list[Chunk]:
        """Split ``text`` into chunks sized to the embedder's token window (schema's chunker).

        For markdown, ``fields["body_line"]`` (1-based line where the body starts in its file)
        makes the chunks' line numbers file lines.
        """
        return ingest.chunk_text_for(self, text, fields)

    def reindex(self, *, progress: ingest.Progress | None = None) -> UpsertReport:
        """Embed every chunk that is pending or failed (e.g. after an embedder outage).

        Each chunk is tried once per call: a text the model still cannot embed (NaN, Inf or a
        zero vector) stays failed and is named in ``report.failed``, and the others are
        embedded. When it ends with every other chunk embedded, a quarantine of the index is
        lifted (see :func:`semsearch.health.clear_after_reindex`).

        Returns:
            UpsertReport whose ``chunks_embedded`` counts the newly embedded chunks and
            ``chunks_failed``/``failed`` the texts that failed alone.
        Raises:
            EmbedderUnavailable: the embedder still fails (the chunks stay pending).
        """
        from semsearch.health import clear_after_reindex

        self._live()
        self._require_model()
        self._stored()
        report = UpsertReport()
        tried: set[int] = set()
        while True:
            # chunks that failed alone in this call stay in the store's list: look past them
            window = self.store.pending_chunks(self.name, ingest.EMBED_GROUP + report.chunks_failed)
            pending = [p for p in window if p.chunk_id not in tried]
            if not pending:
                break
            tried.update(p.chunk_id for p in pending)
            if not ingest.embed_chunks(self, pending, report, progress):
                raise EmbedderUnavailable(
                    report.errors[-1], hint="fix the embedder, then run reindex again"
                )
        clear_after_reindex(self.store, self.name, report.failed)
        return report

    def embed_pending(
        self, limit: int = ingest.EMBED_GROUP, *, where: Mapping[str, Any] | None = None
    ) -> int:
        """Embed up to ``limit`` chunks that have no vector yet, never-tried (pending) ones
        first, then failed ones, oldest first within each.

        One step of :meth:`reindex`, for background workers (:mod:`semsearch.worker`) that embed
        records stored with ``upsert(..., embed=False)`` in small batches. A batch whose texts
        all fail alone (NaN, Inf or zero vectors) does not end the backlog: the next chunks are
        tried, so 0 means nothing is left that this call has not tried.

        Args:
            limit: at most this many chunks per batch, >= 1.
            where: only chunks of records matching this filter (a scoped backfill); None for all.
        Returns:
            The number of chunks newly embedded (0 when nothing embeddable is pending).
        Raises:
            EmbedderUnavailable: the embedder failed; those chunks are marked failed and stay
                stored and keyword-searchable.
            InvalidFilter: bad ``where``.
        """
        self._live()
        self._require_model()
        self._stored()
        report = UpsertReport()
        ast = parse_filter(where, self.schema)
        size, tried = max(1, limit), set[int]()
        while not report.chunks_embedded:
            window = (
                self.store.pending_chunks(self.name, size + report.chunks_failed, ast)
                if ast is not None
                else self.store.pending_chunks(self.name, size + report.chunks_failed)
            )
            pending = [p for p in window if p.chunk_id not in tried][:size]
            if not pending:
                break
            tried.update(p.chunk_id for p in pending)
            if not ingest.embed_chunks(self, pending, report, None):
                raise EmbedderUnavailable(
                    report.errors[-1], hint="fix the embedder, then run reindex again"
                )
        return report.chunks_embedded

    def vectors(self, ids: str | Sequence[str]) -> dict[str, list[NDArray[np.float32] | None]]:
        """The stored chunk vectors of records, for export and debugging.

        Returns:
            ``{record_id: [vector or None per chunk, by ordinal]}`` for the ids that exist; each
            vector is float32[dim], unit-normalised; None marks a chunk not embedded yet.
        Raises:
            BackendUnavailable: the store cannot return vectors (no ``chunk_vectors``).
        """
        from semsearch.stores.base import VectorExport

        self._live()
        if not isinstance(self.store, VectorExport):
            raise BackendUnavailable(
                f"this backend ({type(self.store).__name__}) does not return stored vectors",
                hint="ask without include_vectors",
            )
        wanted = as_ids(ids)
        by_record = self.store.chunk_vectors(self.name, wanted)
        return {rid: by_record[rid] for rid in wanted if rid in by_record}

    def delete(self, ids: str | Sequence[str]) -> int:
        """Delete records (with their chunks, vectors and keyword rows). Returns how many existed."""
        self._live()
        self._stored()
        return self.store.delete_records(self.name, as_ids(ids))

    def delete_where(self, where: Mapping[str, Any]) -> int:
        """Delete every record matching ``where``, with its chunks, vectors and keyword rows.

        Matching ids are found with :meth:`find` in pages and deleted page by page (each page is
        one store transaction), so it works on every backend.

        Args:
            where: a non-empty filter (see :mod:`semsearch.filters`).
        Returns:
            The number of records deleted.
        Raises:
            InvalidFilter: bad or empty ``where`` (use ``Database.drop_collection`` to delete all).
        """
        from semsearch.errors import InvalidFilter

        self._live()
        ast = parse_filter(where, self.schema)
        if ast is None:
            raise InvalidFilter(
                "delete_where needs a non-empty filter",
                hint="to delete every record, use Database.drop_collection(name)",
            )
        self._stored()
        deleted = 0
        while page := self.store.find(self.name, ast, DELETE_PAGE, 0, []):
            removed = self.store.delete_records(self.name, [r.id for r in page])
            deleted += removed
            if removed == 0:  # a concurrent writer re-created them: do not spin
                break
        return deleted

    # -- reads --------------------------------------------------------------------------------

    def get(self, ids: str | Sequence[str]) -> list[Record]:
        """The records that exist among ``ids``, in the order asked."""
        self._live()
        wanted = as_ids(ids)
        return self._read(lambda: self.store.get_records(self.name, wanted))

    def ids(self) -> list[str]:
        """Every record id, sorted."""
        self._live()
        return self._read(lambda: self.store.list_ids(self.name))

    def count(self) -> int:
        """Number of records."""
        self._live()
        return self._read(lambda: self.store.count(self.name))

    def find(
        self,
        where: Mapping[str, Any] | None = None,
        *,
        limit: int = 100,
        offset: int = 0,
        order_by: str | Sequence[str] | None = None,
    ) -> list[Record]:
        """Records matching ``where``, without ranking.

        Args:
            where: a filter (see :mod:`semsearch.filters`), or None for all records.
            limit: at most this many records, in [1, 10000].
            offset: skip this many first.
            order_by: declared field names, ``-name`` for descending; ties (and the default)
                order by id.
        Raises:
            InvalidFilter: bad filter or unknown order_by field. InvalidQuery: bad limit/offset.
        """
        self._live()
        check_page(limit, offset, 10_000)
        ast = parse_filter(where, self.schema)
        order = order_fields(order_by, self.schema)
        return self._read(lambda: self.store.find(self.name, ast, limit, offset, order))

    def search(
        self,
        query: str,
        *,
        mode: str = "semantic",
        limit: int = 10,
        min_score: float | Literal["default"] | None = "default",
        where: Mapping[str, Any] | None = None,
        folder: str | None = None,
        exclude: Sequence[str] = (),
        include: Sequence[str] = (),
        hypothetical_answer: str | None = None,
        fallback: Literal["keyword"] | None = None,
        exact: bool = False,
        rerank: str | Reranker | None = None,
        rerank_top_n: int | None = None,
        offset: int = 0,
    ) -> SearchResult:
        """Search the collection; each record appears once, with its best chunk.

        Args:
            query: the user's text. Empty (or only whitespace) lists records without ranking
                instead, as :meth:`find` does (``mode == "structured"``, score 0.0, no chunk):
                those matching ``where`` and the path scope, or all records, ordered by id.
            mode: ``"semantic"`` (cosine similarity in [-1, 1], mixed with the best sentence
                window's: :mod:`semsearch.windows`), ``"keyword"`` (BM25, >= 0,
                higher is better) or ``"hybrid"`` (convex fusion of both, search.HYBRID_FUSION; the
                fused score is comparable only within one query; each hit carries both legs'
                scores and ranks in ``components``).
            limit: at most this many hits, in [1, 1000].
            min_score: semantic mode only: drop hits whose cosine similarity is below it.
                ``"default"`` (the default) uses the embedder's calibrated threshold
                (``embedder.default_min_score``: 0.30 for all-MiniLM-L6-v2, see
                docs/embedders.md); None keeps all. Keyword and hybrid scores are not cosine
                similarities, so a number given there is ignored and ``SearchResult.notes`` says
                so; ``SearchResult.min_score`` is the threshold that was applied.
            where: filter on declared fields, applied before ranking.
            folder: only ids (paths) under this prefix.
            exclude: fnmatch globs on ids hidden from every result; the search refills so up to
                ``limit`` hits come back when enough other matches exist.
            include: fnmatch globs on ids; when given, only matching ids may appear (an
                allowlist, refilled like ``exclude``; ``exclude`` wins).
            hypothetical_answer: HyDE: embed this text instead of the query (the query is still
                echoed and used by the keyword leg); sets ``SearchResult.hyde``.
            fallback: ``"keyword"`` to return keyword results (marked degraded) when the
                embedder fails in semantic mode, instead of raising.
            exact: force an exact vector scan where an ANN index would answer.
            rerank: a Reranker or spec (``"local:<cross-encoder folder>"``, ``"cohere:<model>"``,
                ``"jina:<model>"``, ``"voyage:<model>"``): retrieve ``rerank_top_n`` hits by
                ``mode``, rescore each (query, chunk text) pair, return the best ``limit``;
                hit scores become the reranker's, in [0, 1] (see :mod:`semsearch.rerank`). If
                the reranker fails, the hits are the un-reranked ones, marked degraded.
            rerank_top_n: hits rescored when reranking, in [1, 1000] (default 50).
            offset: listing only (an empty query): skip this many records first (>= 0).
        Raises:
            InvalidQuery: an argument of the wrong type (the message names it, the type given and
                the type expected), unknown mode, bad limit or min_score, text that is not valid
                Unicode (a lone surrogate), a negative offset, or an offset with a non-empty
                query (ranked results are not paged: raise ``limit``).
            InvalidFilter: bad ``where``.
            RerankerUnavailable: a ``rerank`` spec that names no known provider or no model.
            ModelMismatch: semantic or hybrid mode on a collection opened with
                ``strict_model=False`` and another model (keyword mode still runs).
            EmbedderUnavailable: semantic mode and the embedder fails (unless ``fallback``).
            IndexUnhealthy: semantic or hybrid mode while the index is quarantined (a sync
                failed part-way; see :mod:`semsearch.health`). Keyword mode still runs and is
                marked degraded; semantic mode with ``fallback="keyword"`` runs keyword instead.
            BackendUnavailable / IndexNotFound: the Database was closed / the collection dropped.
        """
        self._live()
        validate_request(
            query, mode, limit, min_score, hypothetical_answer=hypothetical_answer,
            folder=folder, exclude=exclude, include=include, fallback=fallback, exact=exact,
        )  # fmt: skip
        plan = plan_rerank(rerank, rerank_top_n)
        check_page(limit, offset, MAX_LIMIT)
        ast = parse_filter(where, self.schema)
        scope = PathScope(folder, tuple(exclude), tuple(include))
        if not query.strip():
            return self._read(lambda: structured_search(self, query, ast, scope, limit, offset))
        if offset:
            raise InvalidQuery(
                f"offset={offset} with a query: offset pages listings (an empty query) only",
                hint="ranked results are not paged; raise limit instead (at most 1000)",
            )
        checked_mode = cast(Literal["semantic", "keyword", "hybrid"], mode)
        query = unicodedata.normalize("NFC", query)  # as record text (validation.prepare_record)
        if hypothetical_answer is not None:
            hypothetical_answer = unicodedata.normalize("NFC", hypothetical_answer)
        if checked_mode != "keyword":
            self._require_model()
        unhealthy = health_check(self, checked_mode, fallback)
        if unhealthy is not None:
            checked_mode = "keyword"
        threshold, note = resolve_min_score(min_score, checked_mode, self.embedder)
        depth = plan.fetch_limit(limit) if plan else limit
        request = SearchRequest(
            query, checked_mode, depth, threshold, scope, ast, hypothetical_answer, fallback, exact
        )
        result = self._read(lambda: run_search(self, request))
        if plan is not None:
            result = apply_rerank(result, plan.reranker, limit)
        applied = threshold if result.mode == "semantic" else None
        notes = result.notes + ((note,) if note else ())
        result = dataclasses.replace(result, min_score=applied, notes=notes)
        if unhealthy is not None:
            return dataclasses.replace(result, degraded=True, degraded_reason=unhealthy)
        return result

    def search_by_vector(
        self,
        vector: Sequence[float] | NDArray[np.floating],
        *,
        limit: int = 10,
        min_score: float | Literal["default"] | None = "default",
        where: Mapping[str, Any] | None = None,
        exact: bool = False,
    ) -> SearchResult:
        """Semantic search with a query vector made by the collection's own model.

        Args:
            vector: float[dim]; it is unit-normalised, so scores are cosine similarities in
                [-1, 1]. Other arguments as :meth:`search`.
        Raises:
            DimensionMismatch: ``len(vector)`` differs from the stored vectors' dimension.
            InvalidQuery: not a flat list of finite numbers, a zero vector, or bad arguments.
            InvalidFilter: bad ``where``. IndexUnhealthy: the index is quarantined.
        """
        from semsearch.vector_query import search_by_vector

        self._live()
        return self._read(
            lambda: search_by_vector(
                self, vector, limit=limit, min_score=min_score, where=where, exact=exact
            )
        )

    def stats(self) -> CollectionStats:
        """Counts by embedding status, model, dimension, last write time, declared fields and
        the index health (see :mod:`semsearch.health`)."""
        from semsearch.health import read_health

        self._live()
        s = self._read(lambda: self.store.stats(self.name))
        if not s.records:
            self._stored()
        info = self.store.get_collection(self.name) or self.info
        return CollectionStats(
            self.name, info.model_id, info.dim, s.records, s.chunks, s.embedded, s.pending,
            s.failed, s.last_updated, {f.name: f.type for f in self.schema.fields},
            read_health(self.store, self.name).to_dict(),
        )  # fmt: skip
