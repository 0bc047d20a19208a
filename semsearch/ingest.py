"""The write path of a collection: records to chunks to the store, and embedding pending chunks.

:class:`semsearch.Collection` validates its arguments and calls these; they hold the policy of
how writes are batched (``WRITE_BATCH`` records per store transaction), which chunks are
re-embedded (only new content hashes), and what an embedder failure leaves behind (the rest of
the chunks stay stored, keyword-searchable and pending, marked failed). A text the model cannot
embed (NaN, Inf or zero vector) fails alone; the rest of its call is embedded.
"""

from __future__ import annotations

import hashlib
import itertools
import logging
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from semsearch.chunking import ChunkSpan, Tokenizer, chunk_markdown, chunk_text, embedding_text
from semsearch.collection_parts import CollectionParts
from semsearch.embedders.base import check_rows, late_chunking
from semsearch.errors import BadVectors, DimensionMismatch, EmbedderUnavailable
from semsearch.filters import Filter, IdMatch, Or
from semsearch.memory_marks import reuse_scope
from semsearch.progress import note, on_batches
from semsearch.results import (
    DERIVED_TEXT_FORMATS,
    PAGE_STARTS,
    PLAIN_TEXT_FORMATS,
    SOURCE_FORMAT,
    Chunk,
    UpsertReport,
    with_pages,
)
from semsearch.stores.base import ChunkWrite, PendingChunk, RecordWrite
from semsearch.windows import embed_late, embed_windows, late_windows, windows_enabled

if TYPE_CHECKING:
    from semsearch.validation import PreparedRecord

__all__ = ["EMBED_GROUP", "WRITE_BATCH", "Progress", "chunk_text_for", "embed_chunks", "write"]

log = logging.getLogger(__name__)

#: Records written per transaction, and texts per embedding call.
WRITE_BATCH = 256
EMBED_GROUP = 256

#: Called with the number of chunks embedded, after each batch the embedder reports
#: (:func:`semsearch.progress.batch_done`), else after each embedding group; the calls of one
#: group add up to its size.
Progress = Callable[[int], None]


def write(
    coll: CollectionParts, prepared: list[PreparedRecord], embed: bool, progress: Progress | None
) -> UpsertReport:
    """Store validated records in batches, skipping unchanged ones, then embed new chunks.

    Chunks of unchanged records that still lack a vector (a crash between the record write and
    the vector write, an earlier outage) are embedded too, or with ``embed=False`` counted in
    ``chunks_pending``, so re-running an ingest repairs it.

    Args:
        coll: the collection written to.
        prepared: validated records (``validation.prepare_record``), ids unique.
        embed: False leaves new chunks pending for a background worker or ``reindex``.
        progress: called with counts of chunks embedded as they are (see :data:`Progress`).
    Returns:
        Record counts (added/updated/unchanged) and chunk counts (embedded/reused/pending/
        failed, as ``stats()`` counts them); ``failed`` names each record a text of which the
        model could not embed. An embedder that fails or changes its dimension mid-call stops
        the embedding: the records are all written, the chunks it was given are marked failed
        and those of later batches stay pending (both without a vector until ``reindex``),
        and ``errors`` says why; old vectors of unchanged chunks are kept.
    """
    report = UpsertReport()
    embed_ok = embed
    for start in range(0, len(prepared), WRITE_BATCH):
        batch = prepared[start : start + WRITE_BATCH]
        known = coll.store.record_hashes(coll.name, [r.id for r in batch])
        changed = [r for r in batch if known.get(r.id) != r.content_hash]
        same = [r.id for r in batch if known.get(r.id) == r.content_hash]
        report.unchanged += len(same)
        if same:  # left without vectors by a crash or an outage: embed (or count) them now
            leftover = _leftover_chunks(coll, same)
            if embed_ok and leftover:
                embed_ok = embed_chunks(coll, leftover, report, progress)
            elif leftover:
                report.chunks_pending += len(leftover)
        if not changed:
            continue  # nothing to write: a no-change re-import never touches the file
        result = coll.store.write_records(coll.name, [_record_write(coll, r) for r in changed])
        report.added += result.added
        report.updated += result.updated
        report.unchanged += result.unchanged
        report.chunks_reused += result.reused
        if embed_ok:
            embed_ok = embed_chunks(coll, result.pending, report, progress)
        else:
            report.chunks_pending += len(result.pending)
    return report


def _leftover_chunks(coll: CollectionParts, ids: list[str]) -> list[PendingChunk]:
    """Chunks without a vector of the records ``ids`` (pending first, then failed).

    The store is asked with an id filter (exact where the id has no glob character, a prefix
    otherwise) and the answer is narrowed to ``ids`` here; the window widens until the store
    returns fewer chunks than asked, so other records' pending chunks never hide these.
    """
    wanted = set(ids)
    matches = tuple(
        IdMatch("prefix", i) if any(ch in i for ch in "*?[") else IdMatch("glob", i) for i in ids
    )
    where: Filter = matches[0] if len(matches) == 1 else Or(matches)
    limit = EMBED_GROUP
    while True:
        found = coll.store.pending_chunks(coll.name, limit, where)
        if len(found) < limit:
            return [p for p in found if p.record_id in wanted]
        limit *= 4


def _record_write(coll: CollectionParts, r: PreparedRecord) -> RecordWrite:
    writes = []
    # a scope ("" or a memory user, who cannot hold NUL) keys the hash: vectors are reused
    # within it only
    scope = reuse_scope(coll.info, r.fields)
    for c in chunk_text_for(coll, r.text, r.fields):
        embed = embedding_text(c.text, c.heading_path)
        key = f"{scope}\x00{embed}" if scope else embed
        writes.append(ChunkWrite(c, embed, hashlib.sha256(key.encode()).hexdigest()))
    return RecordWrite(r.id, r.fields, r.attrs, r.text, r.content_hash, writes)


def chunk_text_for(
    coll: CollectionParts, text: str, fields: Mapping[str, Any] | None
) -> list[Chunk]:
    """``text`` split by the schema's chunker into chunks of at most the embedder's window.

    For markdown, ``fields["body_line"]`` (1-based line where the body starts in its file)
    makes the chunks' line numbers file lines. A paged document (a PDF: ``fields`` has
    ``page_starts``) is cut as plain text page by page, whatever the chunker; its chunks carry
    page numbers and never span two pages. A folder's note with ``source_format`` (see
    :data:`~semsearch.results.SOURCE_FORMAT`) ``"txt"`` is cut as plain text with file lines
    from ``body_line``; ``"html"`` or ``"docx"`` as markdown, without line numbers.
    """
    window = coll.embedder.max_tokens
    fields = fields or {}
    starts = _page_offsets(fields.get(PAGE_STARTS), len(text))
    kind = fields.get(SOURCE_FORMAT)
    first_line = int(fields.get("body_line", 1))
    if starts is not None:
        spans = _chunk_pages(text, starts, coll.embedder, window)
    elif kind in PLAIN_TEXT_FORMATS:
        spans = _with_lines(text, chunk_text(text, coll.embedder, window), first_line)
    elif coll.schema.chunker == "markdown":
        spans = chunk_markdown(text, coll.embedder, window, line_offset=first_line - 1)
        if kind in DERIVED_TEXT_FORMATS:  # lines of the markdown made, not of the file
            spans = [replace(s, line_start=None, line_end=None) for s in spans]
    else:
        spans = chunk_text(text, coll.embedder, window)
    return [
        with_pages(
            Chunk(
                s.text,
                s.ordinal,
                s.char_start,
                s.char_end,
                s.heading_path,
                s.line_start,
                s.line_end,
            ),
            fields,
        )
        for s in spans
    ]


def _with_lines(text: str, spans: list[ChunkSpan], first_line: int) -> list[ChunkSpan]:
    """``spans`` with 1-based file lines: ``text`` starts at line ``first_line``."""
    return [
        replace(
            s,
            line_start=first_line + text.count("\n", 0, s.char_start),
            line_end=first_line + text.count("\n", 0, max(s.char_end - 1, s.char_start)),
        )
        for s in spans
    ]


def _page_offsets(starts: object, length: int) -> list[int] | None:
    """``starts`` when it is what a PDF's record carries: a non-empty list of ints, from 0,
    non-decreasing, within the text; else None (any other ``page_starts`` is a plain field)."""
    if not isinstance(starts, list) or not starts or not all(type(s) is int for s in starts):
        return None
    ok = starts[0] == 0 and starts == sorted(starts) and starts[-1] <= length
    return starts if ok else None


def _chunk_pages(
    text: str, page_starts: list[int], tokenizer: Tokenizer, max_tokens: int
) -> list[ChunkSpan]:
    """A paged text (a PDF's) cut as :func:`chunk_text` cuts, page by page, so that no chunk
    spans two pages and each cites one; offsets are into ``text``, ordinals run across pages."""
    bounds = [*page_starts, len(text)]
    spans: list[ChunkSpan] = []
    for start, end in itertools.pairwise(bounds):
        for span in chunk_text(text[start:end], tokenizer, max_tokens):
            at = (start + span.char_start, start + span.char_end)
            spans.append(replace(span, ordinal=len(spans), char_start=at[0], char_end=at[1]))
    return spans


def embed_chunks(
    coll: CollectionParts,
    pending: list[PendingChunk],
    report: UpsertReport,
    progress: Progress | None,
) -> bool:
    """Embed ``pending`` in groups and store the vectors; count them in ``report``.

    A text whose vector is unusable (NaN, Inf or zero: :class:`~semsearch.errors.BadVectors`,
    or such rows returned by an embedder that does not check its output) fails alone: its
    chunks are marked failed with the reason and its record is named in ``report.failed``;
    every other chunk of the group is stored. Each stored chunk of two or more sentences
    also gets its sentence windows embedded and stored (:func:`semsearch.windows.embed_windows`)
    unless the collection has them off.

    Returns:
        True when the embedder worked (poison texts aside). False when it failed or changed
        its dimension: the chunks not yet embedded are marked failed (still stored and
        keyword-searchable, embedded by ``reindex``), counted in ``report.chunks_failed`` as
        ``stats().failed`` counts them, and the failure is appended to ``report.errors``.
    """
    note("queued", len(pending))
    for start in range(0, len(pending), EMBED_GROUP):
        group = pending[start : start + EMBED_GROUP]
        told = _Told(progress, len(group))
        try:
            with on_batches(told.chunks):
                vectors, bad, separate = _embed_group(coll, group)
            good = [i for i in range(len(group)) if i not in bad]
            coll.store.set_vectors(coll.name, [group[i].chunk_id for i in good], vectors[good])
            if separate:
                with on_batches(told.windows):
                    stored = embed_windows(
                        coll.store,
                        coll.name,
                        coll.embedder,
                        [group[i].chunk_id for i in good if group[i].chunk_id in separate],
                    )
                note("windows", stored - told.windows_told)  # an embedder that never told
        except (EmbedderUnavailable, DimensionMismatch) as exc:
            left = len(pending) - start
            coll.store.mark_failed(coll.name, [p.chunk_id for p in pending[start:]], exc.message)
            report.chunks_failed += left  # as the store counts them (stats().failed)
            report.errors.append(f"embedding failed, chunks left pending: {exc.message}")
            log.warning("embedding failed; %d chunks left pending: %s", left, exc)
            return False
        if bad:
            _fail_alone(coll, [(group[i], why) for i, why in sorted(bad.items())], report)
        report.chunks_embedded += len(good)
        told.chunks(len(group) - told.chunks_told)  # the group's rest: its count adds up
    return True


class _Told:
    """What the embedder told of one group of ``size`` chunks, batch by batch
    (:func:`semsearch.progress.batch_done`): chunk batches go to ``progress`` and the
    ``embedded`` event (never more than ``size`` in all), window batches to ``windows``."""

    def __init__(self, progress: Progress | None, size: int) -> None:
        self.progress, self.size = progress, size
        self.chunks_told = self.windows_told = 0

    def chunks(self, n: int) -> None:
        n = min(n, self.size - self.chunks_told)
        if n <= 0:
            return
        self.chunks_told += n
        note("embedded", n)
        if self.progress is not None:
            self.progress(n)

    def windows(self, n: int) -> None:
        self.windows_told += n
        note("windows", n)


def _embed_group(
    coll: CollectionParts, group: list[PendingChunk]
) -> tuple[NDArray[np.float32], dict[int, str], set[int]]:
    """Embed a group: its unit vectors, ``{row: why}`` for texts the model gave no usable
    vector, and the chunks whose sentence windows are still to embed the separate way.

    With late windows (:func:`semsearch.windows.late_windows`) the windows come from the
    chunks' own forward passes and are stored here; the chunks' vectors are not stored yet.
    """
    texts = [p.embed_text for p in group]
    ids = [p.chunk_id for p in group]
    options, embedder = coll.info.options, coll.embedder
    separate = set(ids) if windows_enabled(options) else set()
    try:
        if late_windows(options) and late_chunking(embedder):
            raw, separate = embed_late(coll.store, coll.name, embedder, ids, texts)
        else:
            raw = np.asarray(embedder.embed_documents(texts))
        bad: dict[int, str] = {}
    except BadVectors as exc:  # windows then go the separate way, for the good rows
        raw, bad = np.asarray(exc.vectors), dict(exc.bad)
    dim = int(raw.shape[1]) if raw.ndim == 2 else 0
    vectors, unusable = check_rows(raw, len(group), dim, embedder.model_id)
    return vectors, {**unusable, **bad}, separate


def _fail_alone(
    coll: CollectionParts, failed: list[tuple[PendingChunk, str]], report: UpsertReport
) -> None:
    """Mark chunks whose text the model could not embed failed, naming record and reason."""
    model = coll.embedder.model_id
    for chunk, why in failed:
        message = f"record {chunk.record_id!r}: model {model} {why}"
        coll.store.mark_failed(coll.name, [chunk.chunk_id], message)
        report.failed.setdefault(chunk.record_id, f"model {model} {why}")
        log.warning("embedding failed for one text (others stored): %s", message)
    report.chunks_failed += len(failed)
