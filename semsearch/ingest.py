"""The write path of a collection: records to chunks to the store, and embedding pending chunks.

:class:`semsearch.Collection` validates its arguments and calls these; they hold the policy of
how writes are batched (``WRITE_BATCH`` records per store transaction), which chunks are
re-embedded (only new content hashes), and what an embedder failure leaves behind (the rest of
the chunks stay stored, keyword-searchable and pending, marked failed).
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from semsearch.chunking import chunk_markdown, chunk_text, embedding_text
from semsearch.errors import EmbedderUnavailable
from semsearch.results import Chunk, UpsertReport
from semsearch.stores.base import ChunkWrite, PendingChunk, RecordWrite

if TYPE_CHECKING:
    from semsearch.collection import Collection
    from semsearch.validation import PreparedRecord

__all__ = ["EMBED_GROUP", "WRITE_BATCH", "Progress", "chunk_text_for", "embed_chunks", "write"]

log = logging.getLogger(__name__)

#: Records written per transaction, and texts per embedding call (progress granularity).
WRITE_BATCH = 256
EMBED_GROUP = 256

#: Called with the number of chunks embedded after each embedding group.
Progress = Callable[[int], None]


def write(
    coll: Collection, prepared: list[PreparedRecord], embed: bool, progress: Progress | None
) -> UpsertReport:
    """Store validated records in batches, skipping unchanged ones, then embed new chunks.

    Args:
        coll: the collection written to.
        prepared: validated records (``validation.prepare_record``), ids unique.
        embed: False leaves new chunks pending for a background worker or ``reindex``.
        progress: called after each embedding group.
    Returns:
        Record counts (added/updated/unchanged) and chunk counts (embedded/reused/pending).
    """
    report = UpsertReport()
    embed_ok = embed
    for start in range(0, len(prepared), WRITE_BATCH):
        batch = prepared[start : start + WRITE_BATCH]
        known = coll.store.record_hashes(coll.name, [r.id for r in batch])
        changed = [r for r in batch if known.get(r.id) != r.content_hash]
        report.unchanged += len(batch) - len(changed)
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


def _record_write(coll: Collection, r: PreparedRecord) -> RecordWrite:
    writes = []
    for c in chunk_text_for(coll, r.text, r.fields):
        embed = embedding_text(c.text, c.heading_path)
        writes.append(ChunkWrite(c, embed, hashlib.sha256(embed.encode()).hexdigest()))
    return RecordWrite(r.id, r.fields, r.attrs, r.text, r.content_hash, writes)


def chunk_text_for(coll: Collection, text: str, fields: Mapping[str, Any] | None) -> list[Chunk]:
    """``text`` split by the schema's chunker into chunks of at most the embedder's window.

    For markdown, ``fields["body_line"]`` (1-based line where the body starts in its file)
    makes the chunks' line numbers file lines.
    """
    window = coll.embedder.max_tokens
    if coll.schema.chunker == "markdown":
        offset = int((fields or {}).get("body_line", 1)) - 1
        spans = chunk_markdown(text, coll.embedder, window, line_offset=offset)
    else:
        spans = chunk_text(text, coll.embedder, window)
    return [
        Chunk(s.text, s.ordinal, s.char_start, s.char_end, s.heading_path, s.line_start, s.line_end)
        for s in spans
    ]


def embed_chunks(
    coll: Collection, pending: list[PendingChunk], report: UpsertReport, progress: Progress | None
) -> bool:
    """Embed ``pending`` in groups and store the vectors; count them in ``report``.

    Returns:
        True when every chunk was embedded. False when the embedder failed: the chunks not yet
        embedded are marked failed (still stored and keyword-searchable), counted as pending,
        and the failure is appended to ``report.errors``.
    """
    for start in range(0, len(pending), EMBED_GROUP):
        group = pending[start : start + EMBED_GROUP]
        try:
            vectors = coll.embedder.embed_documents([p.embed_text for p in group])
        except EmbedderUnavailable as exc:
            coll.store.mark_failed(coll.name, [p.chunk_id for p in pending[start:]], exc.message)
            report.chunks_pending += len(pending) - start
            report.errors.append(f"embedding failed, chunks left pending: {exc.message}")
            log.warning("embedding failed; %d chunks left pending: %s", len(pending) - start, exc)
            return False
        coll.store.set_vectors(coll.name, [p.chunk_id for p in group], vectors)
        report.chunks_embedded += len(group)
        if progress is not None:
            progress(len(group))
    return True
