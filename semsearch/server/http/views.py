"""Library results -> API bodies: hits with similarity percentages, records with optional vectors."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from numpy.typing import NDArray

from semsearch.collection import Collection
from semsearch.results import Hit, Record, SearchResult
from semsearch.server.http.models import ChunkOut, HitOut, LegOut, RecordOut, SearchOut

__all__ = ["percent", "record_out", "search_out"]


def percent(cosine: float | None) -> int | None:
    """A cosine similarity in [-1, 1] as a whole percentage: ``round(cosine * 100)`` (half away
    from zero, as people round; e.g. 0.875 -> 88, -0.125 -> -13). None stays None."""
    if cosine is None:
        return None
    scaled = cosine * 100.0
    return math.floor(scaled + 0.5) if scaled >= 0 else -math.floor(-scaled + 0.5)


def _vector_list(vector: NDArray[np.float32] | None) -> list[float] | None:
    return None if vector is None else [float(x) for x in vector]


def _hit(
    rank: int, hit: Hit, mode: str, vectors: dict[str, list[NDArray[np.float32] | None]] | None
) -> HitOut:
    chunk = hit.chunk
    components = None
    if hit.components is not None:
        components = {
            leg: LegOut(
                score=c.score,
                rank=c.rank,
                percent=percent(c.score) if leg == "semantic" else None,
            )
            for leg, c in hit.components.items()
        }
    vector = None
    if vectors is not None and chunk is not None:
        per_chunk = vectors.get(hit.id, [])
        if chunk.ordinal < len(per_chunk):
            vector = _vector_list(per_chunk[chunk.ordinal])
    return HitOut(
        rank=rank,
        id=hit.id,
        score=hit.score,
        percent=percent(hit.score) if mode == "semantic" else None,
        chunk=None
        if chunk is None
        else ChunkOut(
            text=chunk.text,
            ordinal=chunk.ordinal,
            char_start=chunk.char_start,
            char_end=chunk.char_end,
            heading_path=list(chunk.heading_path),
            line_start=chunk.line_start,
            line_end=chunk.line_end,
            page_start=chunk.page_start,
            page_end=chunk.page_end,
        ),
        fields=hit.fields,
        components=components,
        highlight=hit.highlight,
        vector=vector,
    )


def search_out(result: SearchResult, coll: Collection, include_vectors: bool) -> SearchOut:
    """The API body of a search; hit vectors (the best chunk's) only when asked for."""
    vectors = coll.vectors(result.ids) if include_vectors else None
    scored = "rerank" if result.reranked_by else result.mode  # no cosine percent once reranked
    return SearchOut(
        query=result.query,
        mode=result.mode,
        hyde=result.hyde,
        degraded=result.degraded,
        degraded_reason=result.degraded_reason,
        total_candidates=result.total_candidates,
        min_score=result.min_score,
        notes=list(result.notes),
        query_windows=result.query_windows,
        reranked_by=result.reranked_by,
        hits=[_hit(i, h, scored, vectors) for i, h in enumerate(result.hits, 1)],
    )


def record_out(
    record: Record, vectors: Sequence[NDArray[np.float32] | None] | None = None
) -> RecordOut:
    """The API body of a record; ``vectors`` (per chunk) only when asked for."""
    return RecordOut(
        id=record.id,
        fields=record.fields,
        text=record.text,
        vectors=None if vectors is None else [_vector_list(v) for v in vectors],
    )
