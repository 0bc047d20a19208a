"""How conversation memory ranks one user's messages: semantic, keyword or hybrid search.

Parents search for the exact words they remember (a drug's name, a date, a child's name), which
BM25 finds and a 22M-parameter embedding model often misses, and for what a message meant,
which only the embedding finds. Hybrid search (both legs fused with the library's
HYBRID_FUSION, as :meth:`semsearch.Collection.search` does: calibrated scores in [0, 1]) is
the default (benchmarks/memory_quality.py, docs/benchmarks.md "memory-quality").

The floor is the library's, in every mode (``min_score="default"``): semantic hits need the
model's cosine threshold, keyword hits a meaningful query word, hybrid hits a fused score of
0.5 (a confident match: the cosine passes the threshold, or the message holds every
meaningful query word). So a question about something the user never wrote about returns
nothing. A number is a cosine threshold in semantic mode and a fused-score threshold in hybrid
mode; None keeps every candidate, ranked.

The user filter travels inside ``where`` to both legs, so it is applied by the store before
ranking in every mode (see :mod:`semsearch.memory.conversation`). The keyword leg's BM25 is
computed from the messages inside ``where`` alone (:mod:`semsearch.memory.keyword`), so no
score depends on another user's messages.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any, Literal

from semsearch.collection import Collection
from semsearch.embedders.thresholds import default_min_score
from semsearch.errors import EmbedderUnavailable
from semsearch.fusion import CONFIDENT
from semsearch.memory.checks import check_mode
from semsearch.memory.keyword import KeywordHit, keyword_messages
from semsearch.memory.types import MemoryMode
from semsearch.results import Hit
from semsearch.search import DEFAULT_MIN_SCORE, HYBRID_FUSION, fused_components
from semsearch.search_request import check_min_score

__all__ = ["DEFAULT_MEMORY_MODE", "MEMORY_HYBRID_DEPTH", "rank_messages"]

#: Messages each leg of a hybrid memory search contributes to fusion: deeper than a collection's
#: HYBRID_DEPTH (20), as one user's history is small enough for a leg to hold every candidate
#: (benchmarks/memory_quality.py, recall@5 on judged SGD queries: 0.931 at 200, 0.927 at 50;
#: meaning queries 0.727 against 0.708).
MEMORY_HYBRID_DEPTH = 200
#: Chosen by measurement (module docstring): hybrid recall@5 >= semantic on the judged queries.
DEFAULT_MEMORY_MODE: MemoryMode = "hybrid"


def rank_messages(
    collection: Collection,
    query: str,
    mode: MemoryMode,
    limit: int,
    min_score: float | Literal["default"] | None,
    where: Mapping[str, Any],
) -> tuple[list[Hit], str | None]:
    """(the best ``limit`` message hits of ``query`` inside ``where`` (the user's scope) that
    pass the floor (module docstring), None or why the result is degraded: hybrid without its
    semantic leg when the embedder fails).

    Scores: cosine similarity in [-1, 1] (semantic), BM25 > 0 over the messages inside
    ``where`` only, or a substring count >= 1 for a query no word of which matches (keyword:
    :func:`~semsearch.memory.keyword.keyword_messages`), or the calibrated fused score in
    [0, 1] (hybrid, the library's HYBRID_FUSION; each leg's score and rank are in
    ``Hit.components``).

    Raises:
        InvalidQuery: bad mode, limit or min_score.
        EmbedderUnavailable: semantic mode and the query cannot be embedded (hybrid then
            answers from the keyword leg alone).
    """
    mode = check_mode(mode)
    check_min_score(min_score)
    if mode == "keyword":
        found = keyword_messages(collection, query, limit, where)
        if min_score == DEFAULT_MIN_SCORE:  # hits holding a meaningful query word
            found = [h for h in found if h.coverage is None or h.coverage > 0]
        return [Hit(h.id, h.score, None, {}) for h in found], None
    if mode == "semantic":
        hits = collection.search(query, mode=mode, limit=limit, where=where, min_score=min_score)
        return hits.hits, None
    depth = max(limit, MEMORY_HYBRID_DEPTH)
    keyword = keyword_messages(collection, query, depth, where)
    reason = None
    try:
        semantic = collection.search(
            query, mode="semantic", limit=depth, where=where, min_score=None
        ).hits
    except EmbedderUnavailable as exc:
        semantic, reason = [], f"semantic recall unavailable ({exc.message}); keyword matches only"
    floor = (
        CONFIDENT
        if min_score == DEFAULT_MIN_SCORE
        else None
        if min_score is None
        else float(min_score)
    )
    fused = _fuse(collection, semantic, keyword, depth, floor)
    return fused[:limit], reason


def _fuse(
    collection: Collection,
    semantic: list[Hit],
    keyword: list[KeywordHit],
    depth: int,
    floor: float | None,
) -> list[Hit]:
    """Both legs (each cut at ``depth``) fused by HYBRID_FUSION, those scoring at least
    ``floor`` (None: all), each with both legs' LegScore."""
    fused = HYBRID_FUSION.fuse_legs(
        [(h.id, h.score) for h in semantic],
        [(h.id, h.score, h.evidence, h.coverage) for h in keyword],
        default_min_score(collection.embedder),
        truncated=(len(semantic) >= depth, len(keyword) >= depth),
    )
    kept = [(d, score) for d, score, _ok in fused if floor is None or score >= floor]
    by_id = {h.id: Hit(h.id, h.score, None, {}) for h in keyword}
    legs = {"semantic": semantic, "keyword": [by_id[h.id] for h in keyword]}
    return [
        dataclasses.replace(best, score=score, components=components)
        for best, score, components in fused_components(legs, kept, lambda h: h.id)
    ]
