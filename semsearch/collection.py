"""Collection: a named set of records with one schema and one embedder, and its write verbs.

:class:`Collection` is the public class; it inherits the read verbs and search from
:class:`semsearch.collection_reads.CollectionReads` and the handle's guards from
:class:`semsearch.handle.CollectionHandle`. ``CollectionStats`` lives in :mod:`semsearch.results`
and stays importable from here.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from semsearch import ingest
from semsearch.collection_reads import CollectionReads
from semsearch.errors import (
    BackendUnavailable,
    EmbedderUnavailable,
    InvalidQuery,
    InvalidRecord,
)
from semsearch.filters import parse_filter
from semsearch.results import Chunk, CollectionStats, UpsertReport
from semsearch.validation import as_ids, check_unique, prepare_record

__all__ = ["Collection", "CollectionStats"]

log = logging.getLogger(__name__)

#: Records found and deleted per transaction by ``delete_where``.
DELETE_PAGE = 1000


class Collection(CollectionReads):
    """A named set of records with one schema and one embedder.

    Obtained from :meth:`semsearch.Database.collection`; not constructed directly. Every verb
    raises BackendUnavailable once the Database is closed and IndexNotFound once the collection
    was dropped through it; a drop by another connection or process raises IndexNotFound on the
    next write, and on the next read that comes back empty (see :mod:`semsearch.lifecycle`).

    The verbs live by job: writes here, reads and search in :mod:`semsearch.collection_reads`,
    the handle's identity and guards in :mod:`semsearch.handle`.
    """

    def upsert(
        self,
        records: Iterable[Mapping[str, Any]],
        *,
        embed: bool = True,
        progress: ingest.Progress | None = None,
    ) -> UpsertReport:
        """Insert or update records by id, then embed their new chunks.

        Each record is a JSON object with an ``id`` (str or int); ``text`` (if present) is the
        document text, the rest are its fields. The whole input is validated before anything is
        written. Unchanged records are skipped; unchanged chunks (same content hash, same model)
        are never re-embedded, but chunks of unchanged records still without a vector (left by
        a crash or an outage) are embedded now. If the embedder fails, or changes its output
        dimension part-way, the records stay stored, keyword-searchable and counted as pending,
        ``errors`` says why, and :meth:`reindex` embeds them later. A text the model cannot
        embed (NaN, Inf or a zero vector) fails alone: it is named in ``failed`` and the rest
        of the call is embedded.

        Args:
            records: JSON objects.
            embed: False stores new chunks as pending without calling the embedder (a
                background worker or :meth:`reindex` embeds them); they are keyword-searchable
                at once.
            progress: called with counts of chunks embedded, per embedder batch (they add up).
        Returns:
            UpsertReport with record counts (added/updated/unchanged), chunk counts
            (embedded/reused/pending/failed), ``failed`` ({record id: why}) and ``errors``.
        Raises:
            InvalidRecord: a record has no id, a duplicate id, a non-JSON value, a field of the
                wrong type, text that is not a str (or list of str) or not valid Unicode (a lone
                surrogate); nothing from the call is written.
            InvalidQuery: ``embed`` is not a bool.
            ModelMismatch: opened with ``strict_model=False`` and another model; nothing written.
            DimensionMismatch: the embedder's declared dimension differs from the stored
                vectors' before the call; nothing written (a change during the call is
                reported in ``errors`` instead).
            BackendUnavailable / IndexNotFound: the Database was closed / the collection was
                dropped (here, or by another connection: then also when it was created again).
        """
        self._live()
        self._require_model()
        if not isinstance(embed, bool):
            raise InvalidQuery(
                f"embed must be True or False, got {type(embed).__name__} ({embed!r:.40})",
                hint="embed=False stores the records as pending without embedding them",
            )
        if isinstance(records, Mapping | str | bytes) or not isinstance(records, Iterable):
            raise InvalidRecord(
                f"upsert takes a list of records, got {type(records).__name__}",
                hint='wrap a single record in a list: upsert([{"id": "a", "text": "..."}])',
            )
        name_only: list[str] = []
        prepared = [prepare_record(self.schema, r, name_only) for r in records]
        check_unique(prepared)
        if name_only:  # one line per call, not one per record
            log.warning(
                "%d record(s) have text that is only their %r (e.g. %s); they are still embedded",
                len(name_only), self.schema.text[0], ", ".join(map(repr, name_only[:3])),
            )  # fmt: skip
        # before anything is written: a vanished or replaced collection, or another dimension
        stored = self._stored()
        if embed:
            self._check_dim(stored.dim)
        return ingest.write(self, prepared, embed, progress)

    def chunk(self, text: str, fields: Mapping[str, Any] | None = None) -> list[Chunk]:
        """Split ``text`` into chunks sized to the embedder's token window (schema's chunker).

        For markdown, ``fields["body_line"]`` (1-based line where the body starts in its file)
        makes the chunks' line numbers file lines.
        """
        return ingest.chunk_text_for(self, text, fields)

    def reindex(self, *, progress: ingest.Progress | None = None) -> UpsertReport:
        """Embed every chunk that is pending or failed (e.g. after an embedder outage).

        Each chunk is tried once per call: a text the model still cannot embed (NaN, Inf or a
        zero vector) stays failed and is named in ``report.failed``, and the others are
        embedded. When it ends with every other chunk embedded, a quarantine of the index is
        lifted (see :func:`semsearch.health.clear_after_reindex`).

        Returns:
            UpsertReport whose ``chunks_embedded`` counts the newly embedded chunks and
            ``chunks_failed``/``failed`` the texts that failed alone.
        Raises:
            EmbedderUnavailable: the embedder still fails (the chunks stay pending).
        """
        from semsearch.health import clear_after_reindex

        self._live()
        self._require_model()
        self._stored()
        report = UpsertReport()
        tried: set[int] = set()
        while True:
            # chunks that failed alone in this call stay in the store's list: look past them
            window = self.store.pending_chunks(self.name, ingest.EMBED_GROUP + report.chunks_failed)
            pending = [p for p in window if p.chunk_id not in tried]
            if not pending:
                break
            tried.update(p.chunk_id for p in pending)
            if not ingest.embed_chunks(self, pending, report, progress):
                raise EmbedderUnavailable(
                    report.errors[-1], hint="fix the embedder, then run reindex again"
                )
        clear_after_reindex(self.store, self.name, report.failed)
        return report

    def embed_pending(
        self, limit: int = ingest.EMBED_GROUP, *, where: Mapping[str, Any] | None = None
    ) -> int:
        """Embed up to ``limit`` chunks that have no vector yet, never-tried (pending) ones
        first, then failed ones, oldest first within each.

        One step of :meth:`reindex`, for background workers (:mod:`semsearch.worker`) that embed
        records stored with ``upsert(..., embed=False)`` in small batches. A batch whose texts
        all fail alone (NaN, Inf or zero vectors) does not end the backlog: the next chunks are
        tried, so 0 means nothing is left that this call has not tried.

        Args:
            limit: at most this many chunks per batch, >= 1.
            where: only chunks of records matching this filter (a scoped backfill); None for all.
        Returns:
            The number of chunks newly embedded (0 when nothing embeddable is pending).
        Raises:
            EmbedderUnavailable: the embedder failed; those chunks are marked failed and stay
                stored and keyword-searchable.
            InvalidFilter: bad ``where``.
        """
        self._live()
        self._require_model()
        self._stored()
        report = UpsertReport()
        ast = parse_filter(where, self.schema)
        size, tried = max(1, limit), set[int]()
        while not report.chunks_embedded:
            window = (
                self.store.pending_chunks(self.name, size + report.chunks_failed, ast)
                if ast is not None
                else self.store.pending_chunks(self.name, size + report.chunks_failed)
            )
            pending = [p for p in window if p.chunk_id not in tried][:size]
            if not pending:
                break
            tried.update(p.chunk_id for p in pending)
            if not ingest.embed_chunks(self, pending, report, None):
                raise EmbedderUnavailable(
                    report.errors[-1], hint="fix the embedder, then run reindex again"
                )
        return report.chunks_embedded

    def vectors(self, ids: str | Sequence[str]) -> dict[str, list[NDArray[np.float32] | None]]:
        """The stored chunk vectors of records, for export and debugging.

        Returns:
            ``{record_id: [vector or None per chunk, by ordinal]}`` for the ids that exist; each
            vector is float32[dim], unit-normalised; None marks a chunk not embedded yet.
        Raises:
            BackendUnavailable: the store cannot return vectors (no ``chunk_vectors``).
        """
        from semsearch.stores.base import VectorExport

        self._live()
        if not isinstance(self.store, VectorExport):
            raise BackendUnavailable(
                f"this backend ({type(self.store).__name__}) does not return stored vectors",
                hint="ask without include_vectors",
            )
        wanted = as_ids(ids)
        by_record = self.store.chunk_vectors(self.name, wanted)
        return {rid: by_record[rid] for rid in wanted if rid in by_record}

    def delete(self, ids: str | Sequence[str]) -> int:
        """Delete records (with their chunks, vectors and keyword rows). Returns how many existed."""
        self._live()
        self._stored()
        return self.store.delete_records(self.name, as_ids(ids))

    def delete_where(self, where: Mapping[str, Any]) -> int:
        """Delete every record matching ``where``, with its chunks, vectors and keyword rows.

        Matching ids are found with :meth:`find` in pages and deleted page by page (each page is
        one store transaction), so it works on every backend.

        Args:
            where: a non-empty filter (see :mod:`semsearch.filters`).
        Returns:
            The number of records deleted.
        Raises:
            InvalidFilter: bad or empty ``where`` (use ``Database.drop_collection`` to delete all).
        """
        from semsearch.errors import InvalidFilter

        self._live()
        ast = parse_filter(where, self.schema)
        if ast is None:
            raise InvalidFilter(
                "delete_where needs a non-empty filter",
                hint="to delete every record, use Database.drop_collection(name)",
            )
        self._stored()
        deleted = 0
        while page := self.store.find(self.name, ast, DELETE_PAGE, 0, []):
            removed = self.store.delete_records(self.name, [r.id for r in page])
            deleted += removed
            if removed == 0:  # a concurrent writer re-created them: do not spin
                break
        return deleted
