"""Query planning: modes, over-fetch and refill, privacy excludes, HyDE, fusion, degraded results.

The store answers chunk-level primitives (vector top-k, keyword top-k, find). This module turns
them into record-level hits: each record appears once, with its best chunk. The path scope
(``folder``, ``include`` and ``exclude`` globs) travels to the store inside the filter
(:meth:`PathScope.as_filter`), so the store drops hidden paths before ranking, as it does for
``where``. :func:`collect` checks the scope again as a safety net and asks the store again with
a deeper ``k`` until ``limit`` hits are found or the store runs dry: that refill only happens
for the parts of a scope a store cannot compile (see ``PartialIdFilters``).
"""

from __future__ import annotations

import dataclasses
import fnmatch
import numbers
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal, TypeVar

from semsearch import fusion
from semsearch.errors import EmbedderUnavailable, InvalidQuery
from semsearch.filters import Filter, IdMatch, conjoin, path_filter, split_path_pattern
from semsearch.highlight import keyword_highlight
from semsearch.long_query import QueryVector, embed_query_windows
from semsearch.results import Hit, LegScore, SearchResult, with_pages
from semsearch.stores.base import (
    KeywordChunks,
    PartialIdFilters,
    ScoredChunk,
    SentenceWindows,
    Store,
    VectorRecords,
)
from semsearch.windows import RESCORE_DEPTH, Span, rescore, windows_enabled

if TYPE_CHECKING:
    from semsearch.collection import Collection

Ranked = TypeVar("Ranked", ScoredChunk, Hit)

__all__ = [
    "DEFAULT_MIN_SCORE",
    "MODES",
    "PathScope",
    "SearchRequest",
    "check_limit",
    "fused_components",
    "health_check",
    "path_matches",
    "resolve_min_score",
    "run_search",
    "store_filter",
    "structured_search",
]

MODES = ("semantic", "keyword", "hybrid")
#: ``min_score="default"``: the embedder's calibrated threshold (semantic mode only); see
#: :func:`resolve_min_score`.
DEFAULT_MIN_SCORE = "default"
MAX_LIMIT = 1000


@dataclass(frozen=True)
class PathScope:
    """Which record ids (paths) may appear in results: inside ``folder``, matching one ``include``
    glob when any are given (an allowlist), and matching no ``exclude`` glob.

    Patterns are fnmatch globs on the record id, where ``*`` also crosses ``/`` (so ``private/*``
    hides everything below ``private/``); a bare folder name matches its subtree. ``exclude`` wins
    over ``include``.
    """

    folder: str | None = None
    exclude: tuple[str, ...] = ()
    include: tuple[str, ...] = ()

    def allows(self, record_id: str) -> bool:
        """True when ``record_id`` may be shown."""
        if self.folder:
            prefix = self.folder.strip("/") + "/"
            if prefix != "/" and not record_id.startswith(prefix):
                return False
        if self.include and not any(path_matches(record_id, p) for p in self.include):
            return False
        return not any(path_matches(record_id, pattern) for pattern in self.exclude)

    def as_filter(self, compiles: Callable[[IdMatch], bool] | None = None) -> Filter | None:
        """The scope as a filter AST that selects exactly the ids :meth:`allows` (None: all).

        ``compiles`` (a store's test of which id matches it can compile) leaves out what the
        store cannot express, giving a superset; see :func:`semsearch.filters.path_filter`.
        """
        return path_filter(self.folder, self.include, self.exclude, compiles)


def path_matches(path: str, pattern: str) -> bool:
    """True when a relative POSIX ``path`` matches an fnmatch glob or lies under a folder.

    ``*`` also crosses ``/``, so ``private/*`` matches ``private/a/b.md``; ``private`` and
    ``private/`` match everything below ``private/``.
    """
    split = split_path_pattern(pattern)
    if split is None:
        return False
    glob, prefix = split
    return fnmatch.fnmatchcase(path, glob) or path.startswith(prefix)


def store_filter(store: Store, where: Filter | None, scope: PathScope) -> Filter | None:
    """``where`` AND the path scope: what the store applies before ranking (None: nothing).

    A store that is :class:`~semsearch.stores.base.PartialIdFilters` gets only the parts of the
    scope it can compile; :func:`collect` applies the rest.
    """
    compiles = store.compiles_id_match if isinstance(store, PartialIdFilters) else None
    return conjoin(where, scope.as_filter(compiles))


@dataclass(frozen=True)
class SearchRequest:
    """A validated search. See :meth:`semsearch.Collection.search` for the meaning of each field."""

    query: str
    mode: Literal["semantic", "keyword", "hybrid"]
    limit: int
    min_score: float | None
    scope: PathScope
    where: Filter | None
    hypothetical_answer: str | None
    fallback: Literal["keyword"] | None = None
    exact: bool = False
    fusion: fusion.Fusion | None = None  # hybrid only; None means HYBRID_FUSION


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


class _StateMoved(Exception):
    """A ranked chunk or its record was gone when the hits were read: rank again."""


def run_search(
    coll: Collection, req: SearchRequest, query_vector: QueryVector | None = None
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
        except _StateMoved:
            continue
    raise AssertionError("unreachable: the last try never raises _StateMoved")


class _QueryVectors:
    """The query embedding, computed once per search (not once per try)."""

    def __init__(self, coll: Collection, given: QueryVector | None = None) -> None:
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
    coll: Collection, req: SearchRequest, queries: _QueryVectors, *, strict: bool
) -> SearchResult:
    """One try of :func:`run_search`; raises _StateMoved (when ``strict``) if a hit vanished."""
    if req.mode == "keyword":
        leg = _keyword_leg(coll, req, req.limit)
        hits = _hits(coll, [(c, c.score, None) for c in leg.best], strict, req.query)
        return SearchResult(req.query, hits, "keyword", total_candidates=leg.candidates)
    if req.mode == "semantic":
        try:
            leg = _semantic_leg(coll, req, req.limit, req.min_score, queries)
        except EmbedderUnavailable as exc:
            if req.fallback != "keyword":
                raise
            kw = _keyword_leg(coll, req, req.limit)
            hits = _hits(coll, [(c, c.score, None) for c in kw.best], strict, req.query)
            return SearchResult(
                req.query, hits, "keyword", False, True,
                f"semantic search unavailable ({exc.message}); keyword results instead",
                kw.candidates,
            )  # fmt: skip
        hits = _hits(coll, [(c, c.score, None) for c in leg.best], strict, None, leg.highlights)
        result = SearchResult(
            req.query, hits, "semantic", _hyde(req), total_candidates=leg.candidates
        )
        return _windowed(coll, leg, result)
    return _hybrid(coll, req, queries, strict)


def _hyde(req: SearchRequest) -> bool:
    return bool(req.hypothetical_answer and req.hypothetical_answer.strip())


def _semantic_leg(
    coll: Collection,
    req: SearchRequest,
    limit: int,
    min_score: float | None,
    queries: _QueryVectors,
) -> _Leg:
    """Each record's best chunk by cosine; with sentence windows (the store keeps them and the
    collection has them on), every one of the ``max(limit, RESCORE_DEPTH)`` records fetched is
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
    depth = max(limit, RESCORE_DEPTH)
    leg = collect(fetch, depth, req.scope, first=depth if by_record else None)
    best, spans = rescore(coll.store, coll.name, query.vector, leg.best, depth, fetched)
    kept = [c for c in best if min_score is None or c.score >= min_score][:limit]
    return _Leg(kept, leg.candidates, query, spans)


def _windowed(coll: Collection, leg: _Leg, result: SearchResult) -> SearchResult:
    """``result`` with ``query_windows`` and, for a windowed query, a note."""
    if leg.query is None:
        return result
    note = leg.query.note(coll.embedder.max_tokens)
    notes = result.notes + ((note,) if note else ())
    return dataclasses.replace(result, query_windows=leg.query.windows, notes=notes)


def _keyword_leg(coll: Collection, req: SearchRequest, limit: int) -> _Leg:
    where = store_filter(coll.store, req.where, req.scope)
    # a store ranking whole records (KeywordChunks) returns one row per record: ask for
    # ``limit`` rows, not the over-fetch chunk rankings need (the sidecar's top k costs more
    # with k: 6 against 12 ms for 200 against 800 records at 100k)
    first = limit if isinstance(coll.store, KeywordChunks) else None
    return collect(
        lambda k: coll.store.keyword_search(coll.name, req.query, k, where),
        limit, req.scope, first=first,
    )  # fmt: skip


#: Records each leg contributes to hybrid fusion (before the final ``limit``). With
#: HYBRID_FUSION's ``absent="lowest"``, measured on BEIR SciFact (int8 model, windows, nDCG@10):
#: depth 30 0.7497, 50 0.7460, 100 0.7490, 200 0.7503; the absent-as-floor fusion needed depth
#: 200 for 0.7471 (100: 0.7358). 50 halves a hybrid search's cost against 100 (the semantic
#: leg's window rescoring grows with it): docs/retrieval.md and docs/benchmarks.md.
HYBRID_DEPTH = 50
#: The fusion hybrid search uses unless a request names another: a convex combination, 0.75 of
#: the semantic leg and 0.25 of the keyword leg, each score normalised from its theoretical
#: minimum (-1 for cosine, 0 for BM25) to the query's best, and a record missing from a leg cut
#: at HYBRID_DEPTH given that leg's lowest normalised score. Chosen by measurement on BEIR
#: SciFact with record-level BM25 (docs/retrieval.md): nDCG@10 0.746 against 0.727 for RRF k=5;
#: choosing on one half of the queries and scoring on the other gives 0.743 for this family,
#: 0.726 for RRF. The fused score lies in [0, 1] and is comparable only within one query.
HYBRID_FUSION = fusion.Fusion("weighted", weights=(0.75, 0.25), floors=(-1.0, 0.0), absent="lowest")


def _hybrid(
    coll: Collection, req: SearchRequest, queries: _QueryVectors, strict: bool
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
    hits = _hits(coll, rows, strict, req.query, semantic.highlights)
    result = SearchResult(
        req.query, hits, "hybrid", _hyde(req) and embedded,
        reason is not None, reason, semantic.candidates + keyword.candidates,
    )  # fmt: skip
    return _windowed(coll, semantic, result)


def _semantic_or_missing(
    coll: Collection, req: SearchRequest, depth: int, queries: _QueryVectors
) -> tuple[_Leg, str | None]:
    """Hybrid's semantic leg, or an empty leg and the reason when the embedder is down."""
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


def _hits(
    coll: Collection,
    rows: Sequence[tuple[ScoredChunk, float, dict[str, LegScore] | None]],
    strict: bool,
    query: str | None = None,
    highlights: Mapping[int, Span] | None = None,
) -> list[Hit]:
    """Hits with their chunk, fields and highlight. A row whose chunk or record is gone (deleted or
    rewritten since it was ranked) raises _StateMoved when ``strict``, else is dropped.

    A ``provisional`` keyword row (a record-level hit, see ScoredChunk) shows the record's chunk
    that matches ``query`` best, asked of the store for the shown rows only.
    Fields are read before chunks, so a record rewritten in between shows as a missing chunk
    (its old chunks are gone) rather than as old fields beside a new chunk.
    A hit's highlight is its chunk's best window from ``highlights`` (the semantic leg's), else,
    when ``query`` is given (keyword and hybrid), the sentence holding most of its terms.
    """
    rows = _best_keyword_chunks(coll, rows, query)
    fields = coll.store.record_fields(coll.name, [c.record_id for c, _, _ in rows])
    chunks = coll.store.get_chunks(coll.name, [c.chunk_id for c, _, _ in rows])
    live = [row for row in rows if row[0].chunk_id in chunks and row[0].record_id in fields]
    if strict and len(live) < len(rows):
        raise _StateMoved
    return [
        Hit(
            c.record_id,
            score,
            with_pages(chunks[c.chunk_id], fields[c.record_id]),
            fields[c.record_id],
            comps,
            _highlight(chunks[c.chunk_id].text, c.chunk_id, query, highlights or {}),
        )
        for c, score, comps in live
    ]


def _highlight(
    text: str, chunk_id: int, query: str | None, spans: Mapping[int, Span]
) -> Span | None:
    if chunk_id in spans:
        return spans[chunk_id]
    return None if query is None else keyword_highlight(text, query)


def _best_keyword_chunks(
    coll: Collection,
    rows: Sequence[tuple[ScoredChunk, float, dict[str, LegScore] | None]],
    query: str | None,
) -> Sequence[tuple[ScoredChunk, float, dict[str, LegScore] | None]]:
    """``rows`` with each provisional chunk replaced by the record's best keyword chunk."""
    waiting = [c.record_id for c, _, _ in rows if c.provisional]
    if not waiting or query is None or not isinstance(coll.store, KeywordChunks):
        return rows
    best = coll.store.keyword_chunks(coll.name, query, waiting)
    return [
        (dataclasses.replace(c, chunk_id=best[c.record_id]) if c.record_id in best else c, s, comps)
        for c, s, comps in rows
    ]


def resolve_min_score(
    min_score: float | str | None, mode: str, embedder: object
) -> tuple[float | None, str | None]:
    """The one threshold rule of every face: (threshold to apply, note for the result).

    Semantic mode applies ``min_score``, and ``"default"`` means the embedder's calibrated value
    (:func:`semsearch.embedders.thresholds.default_min_score`). Keyword and hybrid scores are not
    cosine similarities, so no threshold applies there; a number given anyway is reported in
    the note instead of being dropped silently (``"default"`` and None are not).
    """
    from semsearch.embedders.thresholds import default_min_score

    if mode == "semantic":
        if min_score == DEFAULT_MIN_SCORE:
            return default_min_score(embedder), None
        return (None if min_score is None else float(min_score)), None
    if min_score is None or min_score == DEFAULT_MIN_SCORE:
        return None, None
    return None, (
        f"min_score={float(min_score):g} ignored: {mode} scores are not cosine similarities "
        "(min_score applies to semantic mode only)"
    )


def check_limit(limit: object) -> None:
    """Raise InvalidQuery unless ``limit`` is an int in [1, :data:`MAX_LIMIT`] (every search's
    rule, memory's included)."""
    from semsearch.validation import type_name

    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_LIMIT:
        raise InvalidQuery(
            f"limit must be an int in [1, {MAX_LIMIT}], got {limit!r} ({type_name(limit)})",
            hint="e.g. limit=10",
        )


def validate_request(
    query: object,
    mode: object,
    limit: object,
    min_score: object,
    *,
    hypothetical_answer: object = None,
    folder: object = None,
    exclude: object = (),
    include: object = (),
    fallback: object = None,
    exact: object = False,
) -> None:
    """Check a search's arguments before anything runs (see :meth:`Collection.search`).

    Raises:
        InvalidQuery: naming the argument, the type received and the type expected: ``query``
            or ``hypothetical_answer`` not a str or not valid Unicode (a lone surrogate), a NUL
            in ``query``, an
            unknown mode, a limit that is not an int in [1, 1000], a min_score that is not a
            number in [-1, 1], a folder that is not a str, exclude/include not a list of str,
            a fallback other than "keyword", or a non-bool ``exact``.
    """
    from semsearch.validation import check_text, type_name

    check_text("query", query, no_nul=True)
    check_text("hypothetical_answer", hypothetical_answer, optional=True)
    if mode not in MODES:
        raise InvalidQuery(f"unknown search mode {mode!r}", hint=f"use one of: {', '.join(MODES)}")
    check_limit(limit)
    if (
        min_score is not None
        and min_score != DEFAULT_MIN_SCORE
        and (
            isinstance(min_score, bool)
            or not isinstance(min_score, numbers.Real)
            or not -1.0 <= float(min_score) <= 1.0
        )
    ):
        raise InvalidQuery(
            "min_score must be a number (cosine similarity) in [-1, 1], None or "
            f'"default", got {min_score!r} ({type_name(min_score)})',
            hint='e.g. min_score=0.3; "default" uses the model\'s calibrated default',
        )
    check_text("folder", folder, optional=True)
    for name, globs in (("exclude", exclude), ("include", include)):
        if isinstance(globs, str) or not isinstance(globs, list | tuple):
            raise InvalidQuery(
                f"{name} must be a list of str globs, got {type_name(globs)}",
                hint=f'wrap one glob in a list: {name}=["private/*"]',
            )
        for glob in globs:
            check_text(f"each {name} glob", glob)
    if fallback not in (None, "keyword"):
        raise InvalidQuery(f"unknown fallback {fallback!r}", hint='use fallback="keyword" or None')
    if not isinstance(exact, bool):
        raise InvalidQuery(f"exact must be a bool, got {type_name(exact)}", hint="exact=True")


def structured_search(
    coll: Collection,
    query: str,
    where: Filter | None,
    scope: PathScope,
    limit: int,
    offset: int = 0,
) -> SearchResult:
    """An empty query: the records matching ``where`` and ``scope`` (all when neither is
    given) ordered by id, from the ``offset``-th, at most ``limit``; score 0.0, no chunk."""
    # the path scope goes to the store with the filter; allows() is the safety net
    store_where = store_filter(coll.store, where, scope)
    if scope == PathScope():  # nothing to check here: the store pages (an entity cache's list)
        found = coll.store.find(coll.name, store_where, limit, offset, [])
        listed = [Hit(r.id, 0.0, None, r.fields) for r in found]
        return SearchResult(query, listed, "structured", total_candidates=len(listed))
    hits: list[Hit] = []
    start = 0
    while len(hits) < offset + limit:
        page = coll.store.find(coll.name, store_where, 500, start, [])
        hits += [Hit(r.id, 0.0, None, r.fields) for r in page if scope.allows(r.id)]
        if len(page) < 500:
            break
        start += 500
    chosen = hits[offset : offset + limit]
    return SearchResult(query, chosen, "structured", total_candidates=len(hits))


def health_check(coll: Collection, mode: str, fallback: str | None) -> str | None:
    """None when ``mode`` may run; else the degraded reason of a keyword result.

    Raises:
        IndexUnhealthy: semantic/hybrid while the index is quarantined (semantic with
            ``fallback="keyword"`` runs keyword instead and gets the reason).
    """
    from semsearch.health import refuse_semantic

    if mode == "semantic" and fallback == "keyword":
        return refuse_semantic(coll.store, coll.name, "keyword")
    return refuse_semantic(coll.store, coll.name, mode)
