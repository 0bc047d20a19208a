"""From ranked chunks to hits: each hit's fields, chunk and highlight, read as one snapshot.

Ranking and these reads are separate store calls, so a writer may delete or rewrite a ranked
record in between: :func:`read_hits` checks every row and raises :class:`StateMoved` so that the
search runs again (:func:`semsearch.search.run_search`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

from semsearch.collection_parts import CollectionParts
from semsearch.highlight import keyword_highlight
from semsearch.results import Chunk, Hit, LegScore, with_pages
from semsearch.stores.base import ScoredChunk, supports
from semsearch.stores.keyword_capabilities import KeywordChunks
from semsearch.stores.read_capabilities import HitReads
from semsearch.windows import Span

__all__ = ["Row", "StateMoved", "read_hits"]

#: A ranked chunk, its score in the result, and (hybrid) each leg's score and rank.
Row = tuple[ScoredChunk, float, dict[str, LegScore] | None]


class StateMoved(Exception):
    """A ranked chunk or its record was gone when the hits were read: rank again."""


def read_hits(
    coll: CollectionParts,
    rows: Sequence[Row],
    strict: bool,
    query: str | None = None,
    highlights: Mapping[int, Span] | None = None,
) -> list[Hit]:
    """Hits with their chunk, fields and highlight. A row whose chunk or record is gone (deleted or
    rewritten since it was ranked) raises StateMoved when ``strict``, else is dropped.

    A ``provisional`` keyword row (a record-level hit, see ScoredChunk) shows the record's chunk
    that matches ``query`` best, asked of the store for the shown rows only.
    Fields are read before chunks, so a record rewritten in between shows as a missing chunk
    (its old chunks are gone) rather than as old fields beside a new chunk.
    A hit's highlight is its chunk's best window from ``highlights`` (the semantic leg's), else,
    when ``query`` is given (keyword and hybrid), the sentence holding most of its terms.
    """
    rows = _best_keyword_chunks(coll, rows, query)
    fields, chunks = _read(coll, rows)
    live = [row for row in rows if row[0].chunk_id in chunks and row[0].record_id in fields]
    if strict and len(live) < len(rows):
        raise StateMoved
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


def _read(
    coll: CollectionParts, rows: Sequence[Row]
) -> tuple[dict[str, dict[str, Any]], dict[int, Chunk]]:
    """The rows' records' fields and their chunks: ``({record id: fields}, {chunk id: chunk})``,
    only those that exist; a chunk whose record is not its row's (rewritten) is left out."""
    chunk_ids = [c.chunk_id for c, _, _ in rows]
    if not supports(coll.store, HitReads):
        fields = coll.store.record_fields(coll.name, [c.record_id for c, _, _ in rows])
        return fields, coll.store.get_chunks(coll.name, chunk_ids)
    found = coll.store.hit_rows(coll.name, chunk_ids)
    owners = {c.chunk_id: c.record_id for c, _, _ in rows}
    kept = {cid: row for cid, row in found.items() if owners.get(cid) == row[0]}
    return {rid: f for rid, _, f in kept.values()}, {cid: ch for cid, (_, ch, _) in kept.items()}


def _highlight(
    text: str, chunk_id: int, query: str | None, spans: Mapping[int, Span]
) -> Span | None:
    if chunk_id in spans:
        return spans[chunk_id]
    return None if query is None else keyword_highlight(text, query)


def _best_keyword_chunks(
    coll: CollectionParts,
    rows: Sequence[Row],
    query: str | None,
) -> Sequence[Row]:
    """``rows`` with each provisional chunk replaced by the record's best keyword chunk."""
    waiting = [c.record_id for c, _, _ in rows if c.provisional]
    if not waiting or query is None or not supports(coll.store, KeywordChunks):
        return rows
    best = coll.store.keyword_chunks(coll.name, query, waiting)
    return [
        (dataclasses.replace(c, chunk_id=best[c.record_id]) if c.record_id in best else c, s, comps)
        for c, s, comps in rows
    ]
