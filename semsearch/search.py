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
from semsearch.results import NO_CONFIDENT_MATCH, Hit, LegScore, SearchResult
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
from semsearch.stores.base import ScoredChunk, SentenceWindows, VectorRecords, supports
from semsearch.stores.keyword_capabilities import KeywordChunks, keyword_ranking_note
from semsearch.windows import RESCORE_DEPTH, Span, rescore, windows_enabled

Ranked = TypeVar("Ranked", ScoredChunk, Hit)

__all__ = [
    "DEFAULT_MIN_SCORE",
    "HYBRID_DEPTH",
    "HYBRID_FUSION",
    "MAX_LIMIT",
    "MODES",
    "NO_CONFIDENT_MATCH",
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
    dropped: int = 0  # records a floor removed (at least 1 when it removed any)


def collect(
    fetch: Callable[[int], list[ScoredChunk]],
    limit: int,
    scope: PathScope,
    min_score: float | None = None,
    first: int | None = None,
    keep: Callable[[ScoredChunk], bool] | None = None,
) -> _Leg:
    """Best chunk per allowed record, up to ``limit`` records, refetching deeper as needed.

    ``first``: rows asked for first (default ``max(4 * limit, 40)``, as a record's chunks
    crowd each other); a leg whose rows are records passes ``limit``. ``keep``: a floor that
    is not a score cut (keyword mode's meaningful-word test); a row it refuses is skipped
    (its record may still come back on another row) and counted in ``_Leg.dropped``."""
    k = first or max(4 * limit, 40)
    while True:
        candidates = fetch(k)
        best: dict[str, ScoredChunk] = {}
        refused: set[str] = set()
        cut = False
        for cand in candidates:
            if min_score is not None and cand.score < min_score:
                cut = True
                break
            if cand.record_id in best or not scope.allows(cand.record_id):
                continue
            if keep is not None and not keep(cand):
                refused.add(cand.record_id)
                continue
            best[cand.record_id] = cand
            if len(best) == limit:
                break
        if len(best) >= limit or cut or len(candidates) < k:
            dropped = len(refused - best.keys()) + (len(candidates) > 0 and cut)
            return _Leg(list(best.values()), len(candidates), dropped=dropped)
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
            result = _run_once(coll, req, queries, strict=attempt < SNAPSHOT_TRIES)
        except StateMoved:
            continue
        # data of an earlier version may still be ranked the old way (its store says so)
        note = None if result.mode == "semantic" else keyword_ranking_note(coll.store, coll.name)
        return result if note is None else dataclasses.replace(result, notes=(*result.notes, note))
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
        leg = _keyword_leg(coll, req, req.limit, req.floor)
        hits = read_hits(coll, [(c, c.score, None) for c in leg.best], strict, req.query)
        result = SearchResult(req.query, hits, "keyword", total_candidates=leg.candidates)
        return _noted(coll, _floored(result, leg.dropped, req))
    if req.mode == "semantic":
        try:
            leg = _semantic_leg(coll, req, req.limit, req.min_score, queries)
        except EmbedderUnavailable as exc:
            if req.fallback != "keyword":
                raise
            kw = _keyword_leg(coll, req, req.limit, req.floor)
            hits = read_hits(coll, [(c, c.score, None) for c in kw.best], strict, req.query)
            result = SearchResult(
                req.query, hits, "keyword", False, True,
                f"semantic search unavailable ({exc.message}); keyword results instead",
                kw.candidates,
            )  # fmt: skip
            return _noted(coll, _floored(result, kw.dropped, req))
        hits = read_hits(coll, [(c, c.score, None) for c in leg.best], strict, None, leg.highlights)
        result = SearchResult(
            req.query, hits, "semantic", _hyde(req), total_candidates=leg.candidates
        )
        return _windowed(coll, leg, _floored(result, leg.dropped, req))
    return _hybrid(coll, req, queries, strict)


def _floored(result: SearchResult, dropped: int, req: SearchRequest) -> SearchResult:
    """``result`` with a note when a floor left it empty: nothing passed, and how to see more."""
    if result.hits or not dropped:
        return result
    if req.floor:
        what = {
            "semantic": "the model's cosine threshold",
            "hybrid": "a fused score of 0.5",
            "keyword": "a query word that is not a stop word and is held by at most half of "
            "the records",
        }[result.mode]
        cause = f"the default floor ({what})"
    else:
        cause = f"min_score={req.min_score:g}"
    note = (
        f"{NO_CONFIDENT_MATCH}: every candidate fell below {cause}; min_score=None "
        "(CLI --min-score -1) shows the weaker hits, ranked"
    )
    return dataclasses.replace(result, notes=(*result.notes, note))


def _noted(coll: CollectionParts, result: SearchResult) -> SearchResult:
    """``result`` (keyword or hybrid) with the store's note when its keyword leg ranked the
    collection otherwise than by record-level BM25 (KeywordRankingNote: old data)."""
    note = keyword_ranking_note(coll.store, coll.name)
    return dataclasses.replace(result, notes=(*result.notes, note)) if note else result


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
    records = store if supports(store, VectorRecords) else None
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
    if not (supports(store, SentenceWindows) and windows_enabled(coll.info.options)):
        leg = collect(fetch, limit, req.scope, min_score, first)
        return dataclasses.replace(leg, query=query)
    depth = max(limit, rescore_depth)
    leg = collect(fetch, depth, req.scope, first=depth if by_record else None)
    best, spans = rescore(coll.store, coll.name, query.vector, leg.best, depth, fetched)
    kept = [c for c in best if min_score is None or c.score >= min_score]
    return _Leg(kept[:limit], leg.candidates, query, spans, dropped=len(best) - len(kept))


def _windowed(coll: CollectionParts, leg: _Leg, result: SearchResult) -> SearchResult:
    """``result`` with ``query_windows`` and, for a windowed query, a note."""
    if leg.query is None:
        return result
    note = leg.query.note(coll.embedder.max_tokens)
    notes = result.notes + ((note,) if note else ())
    return dataclasses.replace(result, query_windows=leg.query.windows, notes=notes)


def _keyword_leg(coll: CollectionParts, req: SearchRequest, limit: int, floor: bool) -> _Leg:
    """Each record's best keyword chunk; with ``floor``, only records holding a meaningful
    query word (coverage > 0; a substring-scan hit always counts)."""
    where = store_filter(coll.store, req.where, req.scope)
    # a store ranking whole records (KeywordChunks) returns one row per record: ask for
    # ``limit`` rows, not the over-fetch chunk rankings need (the sidecar's top k costs more
    # with k: 6 against 12 ms for 200 against 800 records at 100k)
    first = limit if supports(coll.store, KeywordChunks) else None
    return collect(
        lambda k: coll.store.keyword_search(coll.name, req.query, k, where),
        limit, req.scope, first=first, keep=meaningful_hit if floor else None,
    )  # fmt: skip


def meaningful_hit(hit: ScoredChunk) -> bool:
    """Keyword mode's default floor: the hit holds a meaningful query word (its coverage is
    above 0), or the store did not say (a substring scan: literal evidence)."""
    return hit.coverage is None or hit.coverage > 0


#: Records each leg contributes to hybrid fusion (before the final ``limit``). Chosen with the
#: convex fusion this release replaced (BEIR SciFact, int8 model, windows, nDCG@10, legs D
#: deep: 15 0.7476, 20 0.7471, 30 0.7465, 50 0.7460, 100 0.7490, 200 0.7503) and kept for the
#: calibrated one: 20 is twice the default limit. The semantic leg's 20 are the best after
#: rescoring RESCORE_DEPTH (50) records with their windows, as in semantic mode.
#: docs/retrieval.md and docs/benchmarks.md (hybrid-depth, keyword-engines).
HYBRID_DEPTH = 20
#: The fusion hybrid search uses unless a request names another: calibrated, absolute scores
#: (:func:`semsearch.fusion.calibrated`): ``0.25 * sigmoid((cos - t) / 0.2) + 0.25 * x / (x +
#: 0.5)``, plus 0.5 when the hit is a confident match (its cosine reaches the model's threshold
#: ``t``, or it holds every meaningful query word). In [0, 1], the same for the same hit in any
#: query; 0.5 is the default floor. Chosen on BEIR SciFact (docs/retrieval.md): nDCG@10 0.749
#: at limit 10 with the floor on, against 0.749 for the convex fusion it replaced without one.
HYBRID_FUSION = fusion.Fusion("calibrated")


def _hybrid(
    coll: CollectionParts, req: SearchRequest, queries: _QueryVectors, strict: bool
) -> SearchResult:
    """Run both legs to HYBRID_DEPTH records each, fuse them, keep the ``limit`` best that pass
    the floor (``min_score``; None keeps all); see module doc."""
    from semsearch.embedders.thresholds import default_min_score

    depth = max(req.limit, HYBRID_DEPTH)
    keyword = _keyword_leg(coll, req, depth, floor=False)
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
    fused = (req.fusion or HYBRID_FUSION).fuse_legs(
        [(c.record_id, c.score) for c in semantic.best],
        [(c.record_id, c.score, c.evidence, c.coverage) for c in keyword.best],
        default_min_score(coll.embedder),
        truncated=(len(semantic.best) >= depth, len(keyword.best) >= depth),
    )
    kept = [
        (d, score) for d, score, _ok in fused if req.min_score is None or score >= req.min_score
    ]
    rows = _fused_rows(legs, kept[: req.limit])
    hits = read_hits(coll, rows, strict, req.query, semantic.highlights)
    result = SearchResult(
        req.query, hits, "hybrid", _hyde(req) and embedded,
        reason is not None, reason, semantic.candidates + keyword.candidates,
    )  # fmt: skip
    return _noted(coll, _windowed(coll, semantic, _floored(result, len(fused) - len(kept), req)))


def _semantic_or_missing(
    coll: CollectionParts, req: SearchRequest, depth: int, queries: _QueryVectors
) -> tuple[_Leg, str | None]:
    """Hybrid's semantic leg, or an empty leg and the reason when the embedder is down: the
    best ``depth`` records after rescoring the best max(depth, RESCORE_DEPTH) with their
    sentence windows, as semantic mode does (SciFact, nDCG@10 with the calibrated fusion:
    0.749, against 0.736 when only the leg's own 20 records were rescored)."""
    try:
        return _semantic_leg(coll, req, depth, None, queries), None
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
