"""How conversation memory ranks one user's messages: semantic, keyword or hybrid search.

Parents search for the exact words they remember (a drug's name, a date, a child's name), which
BM25 finds and a 22M-parameter embedding model often misses, and for what a message meant,
which only the embedding finds. Hybrid search (both legs fused with the library's
HYBRID_FUSION, as :meth:`semsearch.Collection.search` does) is the default: on the judged SGD
queries of benchmarks/memory_quality.py its recall@5 is 0.932, against 0.920 for semantic
search and 0.865 for keyword search (docs/benchmarks.md, "memory-quality").

The threshold rule: ``min_score`` is a cosine similarity, so it applies to the semantic leg.
In hybrid mode it drops the semantic leg's weak candidates before fusion, and every message
holding the query's words still competes through the keyword leg: a weak paraphrase is
dropped, an exact word is not. (Collection.search applies no threshold in hybrid mode;
filtering the fused list afterwards instead measured 0.918 against 0.929 with RRF fusion.)
Keyword mode has no cosine and applies no threshold.

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
from semsearch.errors import EmbedderUnavailable
from semsearch.memory.checks import check_mode
from semsearch.memory.keyword import keyword_messages
from semsearch.memory.types import MemoryMode
from semsearch.results import Hit
from semsearch.search import HYBRID_FUSION, fused_components

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
    """(the best ``limit`` message hits of ``query`` inside ``where`` (the user's scope), None
    or why the result is degraded: hybrid without its semantic leg when the embedder fails).

    Scores: cosine similarity in [-1, 1] (semantic), BM25 > 0 over the messages inside
    ``where`` only (``ts_rank_cd`` > 0 on PostgreSQL), or a substring count >= 1 for a query
    no word of which matches (keyword:
    :func:`~semsearch.memory.keyword.keyword_messages`), or the fused score
    (hybrid, the library's HYBRID_FUSION, in [0, 1]: comparable within one query only; each
    leg's score and rank are in ``Hit.components``).

    Raises:
        InvalidQuery: bad mode, limit or min_score.
        EmbedderUnavailable: semantic mode and the query cannot be embedded (hybrid then
            answers from the keyword leg alone).
    """
    mode = check_mode(mode)
    if mode == "keyword":
        return keyword_messages(collection, query, limit, where), None
    if mode == "semantic":
        hits = collection.search(query, mode=mode, limit=limit, where=where, min_score=min_score)
        return hits.hits, None
    depth = max(limit, MEMORY_HYBRID_DEPTH)
    keyword = keyword_messages(collection, query, depth, where)
    reason = None
    try:
        semantic = collection.search(
            query, mode="semantic", limit=depth, where=where, min_score=min_score
        ).hits
    except EmbedderUnavailable as exc:
        semantic, reason = [], f"semantic recall unavailable ({exc.message}); keyword matches only"
    return _fuse(semantic, keyword, limit, depth), reason


def _fuse(semantic: list[Hit], keyword: list[Hit], limit: int, depth: int) -> list[Hit]:
    """Both legs (each cut at ``depth``) fused by HYBRID_FUSION, the top ``limit``, each with
    both legs' LegScore."""
    legs = {"semantic": semantic, "keyword": keyword}
    fused = HYBRID_FUSION.fuse(
        [(h.id, h.score) for h in semantic],
        [(h.id, h.score) for h in keyword],
        truncated=(len(semantic) >= depth, len(keyword) >= depth),
    )
    return [
        dataclasses.replace(best, score=score, components=components)
        for best, score, components in fused_components(legs, fused[:limit], lambda h: h.id)
    ]
