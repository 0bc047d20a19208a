"""The read verbs of a collection: get, ids, count, find, search, search by vector, stats.

They never write. Each raises BackendUnavailable once the Database is closed and IndexNotFound
once the collection was dropped (see :class:`semsearch.handle.CollectionHandle`).
"""

from __future__ import annotations

import dataclasses
import unicodedata
from collections.abc import Mapping, Sequence
from typing import Any, Literal, cast

import numpy as np
from numpy.typing import NDArray

from semsearch.errors import InvalidQuery
from semsearch.filters import parse_filter
from semsearch.handle import CollectionHandle
from semsearch.rerank import Reranker, apply_rerank, plan_rerank
from semsearch.results import CollectionStats, Record, SearchResult
from semsearch.search import (
    DEFAULT_MIN_SCORE,
    MAX_LIMIT,
    PathScope,
    SearchRequest,
    health_check,
    resolve_min_score,
    run_search,
    structured_search,
    validate_request,
)
from semsearch.validation import as_ids, check_page, order_fields

__all__ = ["CollectionReads"]


class CollectionReads(CollectionHandle):
    """The read verbs of :class:`semsearch.Collection` (which adds the writes)."""

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
                higher is better) or ``"hybrid"`` (the calibrated fusion of both,
                search.HYBRID_FUSION: a score in [0, 1] that means the same in every query, 0.5
                or more for a confident match; each hit carries both legs' scores and ranks in
                ``components``).
            limit: at most this many hits, in [1, 1000].
            min_score: ``"default"`` (the default) is each mode's floor: semantic drops hits
                below the embedder's calibrated cosine threshold (``default_min_score``: 0.34
                for all-MiniLM-L6-v2, see docs/embedders.md), hybrid drops scores below 0.5,
                keyword drops hits that hold no meaningful query word. A number is a cosine
                threshold (semantic) or a hybrid-score threshold; BM25 has no fixed scale, so
                keyword mode ignores a number (``SearchResult.notes`` says so). None keeps all.
                When a floor leaves nothing, ``SearchResult.notes`` holds a sentence beginning
                "no confident match"; ``SearchResult.min_score`` is the threshold applied.
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
            RerankerUnavailable: a ``rerank`` spec that names no known provider or no model,
                or a ``local:`` folder without a one-label cross-encoder (before searching).
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
            query, checked_mode, depth, threshold, scope, ast, hypothetical_answer, fallback,
            exact, floor=min_score == DEFAULT_MIN_SCORE,
        )  # fmt: skip
        result = self._read(lambda: run_search(self, request))
        if plan is not None:
            result = apply_rerank(result, plan.reranker, limit)
        applied = threshold if result.mode == checked_mode else None
        if checked_mode == "semantic" and result.mode != "semantic":
            note = None  # a semantic search that fell back to keyword applied no threshold
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
