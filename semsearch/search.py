"""Query planning: modes, over-fetch and refill, privacy excludes, HyDE, fusion, degraded results.

The store answers chunk-level primitives (vector top-k, keyword top-k, find). This module turns
them into record-level hits: each record appears once, with its best chunk. The path scope
(:mod:`semsearch.scope`) travels to the store inside the filter, so the store drops hidden paths
before ranking, as it does for ``where``. :func:`collect` checks the scope again as a safety net
and asks the store again with a deeper ``k`` until ``limit`` hits are found or the store runs
dry: that refill only happens for the parts of a scope a store cannot compile (see
``PartialIdFilters``).

A search's arguments are checked in :mod:`semsearch.search_request` and an empty query lists
records through :mod:`semsearch.listing`; their public names stay importable from here.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TypeVar

from semsearch import fusion
from semsearch.collection_parts import CollectionParts
from semsearch.errors import EmbedderUnavailable
from semsearch.hits import StateMoved, read_hits
from semsearch.listing import structured_search
from semsearch.long_query import QueryVector, embed_query_windows
from semsearch.results import Hit, LegScore, SearchResult
from semsearch.scope import PathScope, path_matches, store_filter
from semsearch.search_request import (
    DEFAULT_MIN_SCORE,
    MAX_LIMIT,
    MODES,
    SearchRequest,
    check_limit,
    resolve_min_score,
    validate_request,
)
from semsearch.stores.base import ScoredChunk, SentenceWindows, VectorRecords
from semsearch.stores.keyword_capabilities import KeywordChunks
from semsearch.windows import RESCORE_DEPTH, Span, rescore, windows_enabled

Ranked = TypeVar("Ranked", ScoredChunk, Hit)

__all__ = [
    "DEFAULT_MIN_SCORE",
    "HYBRID_DEPTH",
    "HYBRID_FUSION",
    "MAX_LIMIT",
    "MODES",
    "PathScope",
    "SearchRequest",
    "check_limit",
    "collect",
    "fused_components",
    "health_check",
    "path_matches",
    "resolve_min_score",
    "run_search",
    "store_filter",
    "structured_search",
    "validate_request",
]


@dataclass(frozen=True)
class _Leg:
    best: list[ScoredChunk]  # one per record, best first
    candidates: int
    query: QueryVector | None = None  # the semantic leg's query vector
    highlights: Mapping[int, Span] = field(default_factory=dict)  # chunk id -> best window


def collect(
    fetch: Callable[[int], list[ScoredChunk]],
    limit: int,
    scope: PathScope,
    min_score: float | None = None,
    first: int | None = None,
) -> _Leg:
    """Best chunk per allowed record, up to ``limit`` records, refetching deeper as needed.

    ``first``: rows asked for first (default ``max(4 * limit, 40)``, as a record's chunks
    crowd each other); a leg whose rows are records passes ``limit``."""
    k = first or max(4 * limit, 40)
    while True:
        candidates = fetch(k)
        best: dict[str, ScoredChunk] = {}
        cut = False
        for cand in candidates:
            if min_score is not None and cand.score < min_score:
                cut = True
                break
            if cand.record_id not in best and scope.allows(cand.record_id):
                best[cand.record_id] = cand
                if len(best) == limit:
                    break
        if len(best) >= limit or cut or len(candidates) < k:
            return _Leg(list(best.values()), len(candidates))
        k *= 4


#: Times a search is run again when a record it ranked was deleted or rewritten before its
#: fields and chunk were read (a concurrent writer); the last try drops such hits.
SNAPSHOT_TRIES = 4


def run_search(
    coll: CollectionParts, req: SearchRequest, query_vector: QueryVector | None = None
) -> SearchResult:
    """Run a validated request against a collection (semantic, keyword or hybrid).

    ``query_vector`` (a unit-normalised float32[dim] made by the caller, e.g.
    :func:`semsearch.vector_query.search_by_vector`) is used in place of embedding the query.

    Ranking and the read of each hit's fields and chunk are separate store calls, so a writer
    may delete or rewrite a ranked record in between. Every hit is checked: its chunk and its
    record must both still exist; if one does not, the whole search runs again (up to
    ``SNAPSHOT_TRIES`` times; the last try drops such hits). So a hit is always a live record
    with its fields and chunk, never ``fields == {}`` or ``chunk is None`` for a deleted one.
    """
    queries = _QueryVectors(coll, query_vector)
    for attempt in range(1, SNAPSHOT_TRIES + 1):
        try:
            return _run_once(coll, req, queries, strict=attempt < SNAPSHOT_TRIES)
        except StateMoved:
            continue
    raise AssertionError("unreachable: the last try never raises StateMoved")


class _QueryVectors:
    """The query embedding, computed once per search (not once per try)."""

    def __init__(self, coll: CollectionParts, given: QueryVector | None = None) -> None:
        self._coll = coll
        self._vectors: dict[str, QueryVector] = {}
        self._given = given

    def get(self, text: str) -> QueryVector:
        """The query vector of ``text``, in windows when it is longer than the model's (or the
        vector the caller gave, whatever the text)."""
        if self._given is not None:
            return self._given
        if text not in self._vectors:
            self._vectors[text] = embed_query_windows(self._coll.embedder, text)
        return self._vectors[text]


def _run_once(
    coll: CollectionParts, req: SearchRequest, queries: _QueryVectors, *, strict: bool
) -> SearchResult:
    """One try of :func:`run_search`; raises StateMoved (when ``strict``) if a hit vanished."""
    if req.mode == "keyword":
        leg = _keyword_leg(coll, req, req.limit)
        hits = read_hits(coll, [(c, c.score, None) for c in leg.best], strict, req.query)
        return SearchResult(req.query, hits, "keyword", total_candidates=leg.candidates)
    if req.mode == "semantic":
        try:
            leg = _semantic_leg(coll, req, req.limit, req.min_score, queries)
        except EmbedderUnavailable as exc:
            if req.fallback != "keyword":
                raise
            kw = _keyword_leg(coll, req, req.limit)
            hits = read_hits(coll, [(c, c.score, None) for c in kw.best], strict, req.query)
            return SearchResult(
                req.query, hits, "keyword", False, True,
                f"semantic search unavailable ({exc.message}); keyword results instead",
                kw.candidates,
            )  # fmt: skip
        hits = read_hits(coll, [(c, c.score, None) for c in leg.best], strict, None, leg.highlights)
        result = SearchResult(
            req.query, hits, "semantic", _hyde(req), total_candidates=leg.candidates
        )
        return _windowed(coll, leg, result)
    return _hybrid(coll, req, queries, strict)


def _hyde(req: SearchRequest) -> bool:
    return bool(req.hypothetical_answer and req.hypothetical_answer.strip())


def _semantic_leg(
    coll: CollectionParts,
    req: SearchRequest,
    limit: int,
    min_score: float | None,
    queries: _QueryVectors,
    rescore_depth: int = RESCORE_DEPTH,
) -> _Leg:
    """Each record's best chunk by cosine; with sentence windows (the store keeps them and the
    collection has them on), every one of the ``max(limit, rescore_depth)`` records fetched is
    rescored with its windows (:func:`semsearch.windows.rescore`), and ``min_score`` applies to
    the mixed score."""
    text = req.hypothetical_answer if _hyde(req) else req.query
    query = queries.get(text or "")
    where = store_filter(coll.store, req.where, req.scope)

    fetched: list[ScoredChunk] = []  # the last fetch's chunks: rescoring sees them all
    store = coll.store
    records = store if isinstance(store, VectorRecords) else None
    by_record = records is not None

    def fetch(k: int) -> list[ScoredChunk]:
        if records is None:
            fetched[:] = store.vector_search(coll.name, query.vector, k, where, req.exact)
            return fetched
        # k records: their best chunks to collect, all their candidate chunks to rescoring
        fetched[:] = records.vector_search_records(coll.name, query.vector, k, where, req.exact)
        best: dict[str, ScoredChunk] = {}
        for c in fetched:
            best.setdefault(c.record_id, c)
        return list(best.values())

    first = limit if by_record else None
    if not (isinstance(store, SentenceWindows) and windows_enabled(coll.info.options)):
        leg = collect(fetch, limit, req.scope, min_score, first)
        return dataclasses.replace(leg, query=query)
    depth = max(limit, rescore_depth)
    leg = collect(fetch, depth, req.scope, first=depth if by_record else None)
    best, spans = rescore(coll.store, coll.name, query.vector, leg.best, depth, fetched)
    kept = [c for c in best if min_score is None or c.score >= min_score][:limit]
    return _Leg(kept, leg.candidates, query, spans)


def _windowed(coll: CollectionParts, leg: _Leg, result: SearchResult) -> SearchResult:
    """``result`` with ``query_windows`` and, for a windowed query, a note."""
    if leg.query is None:
        return result
    note = leg.query.note(coll.embedder.max_tokens)
    notes = result.notes + ((note,) if note else ())
    return dataclasses.replace(result, query_windows=leg.query.windows, notes=notes)


def _keyword_leg(coll: CollectionParts, req: SearchRequest, limit: int) -> _Leg:
    where = store_filter(coll.store, req.where, req.scope)
    # a store ranking whole records (KeywordChunks) returns one row per record: ask for
    # ``limit`` rows, not the over-fetch chunk rankings need (the sidecar's top k costs more
    # with k: 6 against 12 ms for 200 against 800 records at 100k)
    first = limit if isinstance(coll.store, KeywordChunks) else None
    return collect(
        lambda k: coll.store.keyword_search(coll.name, req.query, k, where),
        limit, req.scope, first=first,
    )  # fmt: skip


#: Records each leg contributes to hybrid fusion (before the final ``limit``); the semantic leg
#: rescores just these with their sentence windows. With HYBRID_FUSION's ``absent="lowest"``,
#: measured on BEIR SciFact (int8 model, windows, nDCG@10, legs D deep, D rescored): 15 0.7476,
#: 20 0.7471, 30 0.7465, 40 0.7442, 50 0.7460, 100 0.7490, 200 0.7503: flat from 15 to 50
#: (0.003, about what one half of the queries moves). 20 is twice the default limit and costs
#: about 0.45 ms less than 30 at 100k records (the keyword leg's top 20, windows for 20
#: records). docs/retrieval.md and docs/benchmarks.md (hybrid-depth, keyword-engines).
HYBRID_DEPTH = 20
#: The fusion hybrid search uses unless a request names another: a convex combination, 0.75 of
#: the semantic leg and 0.25 of the keyword leg, each score normalised from its theoretical
#: minimum (-1 for cosine, 0 for BM25) to the query's best, and a record missing from a leg cut
#: at HYBRID_DEPTH given that leg's lowest normalised score. Chosen by measurement on BEIR
#: SciFact with record-level BM25 (docs/retrieval.md): nDCG@10 0.746 against 0.727 for RRF k=5;
#: choosing on one half of the queries and scoring on the other gives 0.743 for this family,
#: 0.726 for RRF. The fused score lies in [0, 1] and is comparable only within one query.
HYBRID_FUSION = fusion.Fusion("weighted", weights=(0.75, 0.25), floors=(-1.0, 0.0), absent="lowest")


def _hybrid(
    coll: CollectionParts, req: SearchRequest, queries: _QueryVectors, strict: bool
) -> SearchResult:
    """Run both legs to HYBRID_DEPTH records each, fuse them, keep ``limit``; see module doc."""
    depth = max(req.limit, HYBRID_DEPTH)
    keyword = _keyword_leg(coll, req, depth)
    semantic, reason = _semantic_or_missing(coll, req, depth, queries)
    embedded = reason is None
    scoped = req.where is not None or req.scope != PathScope()
    if reason is None and not keyword.best and not semantic.best and scoped:
        reason = (
            "no record inside the search's scope (folder, include/exclude globs or where "
            "filter) matched either leg; check or widen the scope"
        )
    elif reason is None and not keyword.best:
        reason = "keyword leg missing: no record contains the query's words; semantic results only"
    elif reason is None and not semantic.best:
        reason = "semantic leg missing: no chunk matches with a vector; keyword results only"
    legs = {"semantic": semantic.best, "keyword": keyword.best}
    fused = (req.fusion or HYBRID_FUSION).fuse(
        [(c.record_id, c.score) for c in semantic.best],
        [(c.record_id, c.score) for c in keyword.best],
        truncated=(len(semantic.best) >= depth, len(keyword.best) >= depth),
    )
    rows = _fused_rows(legs, fused[: req.limit])
    hits = read_hits(coll, rows, strict, req.query, semantic.highlights)
    result = SearchResult(
        req.query, hits, "hybrid", _hyde(req) and embedded,
        reason is not None, reason, semantic.candidates + keyword.candidates,
    )  # fmt: skip
    return _windowed(coll, semantic, result)


def _semantic_or_missing(
    coll: CollectionParts, req: SearchRequest, depth: int, queries: _QueryVectors
) -> tuple[_Leg, str | None]:
    """Hybrid's semantic leg, or an empty leg and the reason when the embedder is down."""
    try:
        return _semantic_leg(coll, req, depth, None, queries, rescore_depth=depth), None
    except EmbedderUnavailable as exc:
        return _Leg([], 0), f"semantic leg missing: {exc.message}; keyword results only"


def _fused_rows(
    legs: dict[str, list[ScoredChunk]], chosen: list[tuple[str, float]]
) -> list[tuple[ScoredChunk, float, dict[str, LegScore] | None]]:
    """Each fused record with its best chunk (the semantic leg's, else the keyword leg's) and
    ``components``: every leg's score and 1-based rank, ``LegScore(None, None)`` where absent."""
    return [
        (best, score, comps)
        for best, score, comps in fused_components(legs, chosen, lambda c: c.record_id)
    ]


def fused_components(
    legs: Mapping[str, Sequence[Ranked]],
    chosen: Sequence[tuple[str, float]],
    record_id: Callable[[Ranked], str],
) -> list[tuple[Ranked, float, dict[str, LegScore]]]:
    """For each fused ``(record id, fused score)``: the record's item from the first leg that
    has it, the fused score, and every leg's score and 1-based rank (``LegScore(None, None)``
    where a leg lacks it). Items are a leg's ranked ScoredChunks or Hits (``.score``)."""
    by_leg = {
        name: {record_id(item): (rank, item) for rank, item in enumerate(leg, 1)}
        for name, leg in legs.items()
    }
    rows: list[tuple[Ranked, float, dict[str, LegScore]]] = []
    for rid, score in chosen:
        found = {name: table.get(rid) for name, table in by_leg.items()}
        components = {
            name: LegScore(hit[1].score, hit[0]) if hit else LegScore(None, None)
            for name, hit in found.items()
        }
        best = next(hit[1] for hit in found.values() if hit is not None)
        rows.append((best, score, components))
    return rows


def health_check(coll: CollectionParts, mode: str, fallback: str | None) -> str | None:
    """None when ``mode`` may run; else the degraded reason of a keyword result.

    Raises:
        IndexUnhealthy: semantic/hybrid while the index is quarantined (semantic with
            ``fallback="keyword"`` runs keyword instead and gets the reason).
    """
    from semsearch.health import refuse_semantic

    if mode == "semantic" and fallback == "keyword":
        return refuse_semantic(coll.store, coll.name, "keyword")
    return refuse_semantic(coll.store, coll.name, mode)
