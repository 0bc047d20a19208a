"""Small frozen value types that the library returns: records, chunks, hits and reports."""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterator, Mapping
from dataclasses import asdict, dataclass, field, replace
from typing import Any, Literal

__all__ = [
    "NO_CONFIDENT_MATCH",
    "PAGE_STARTS",
    "SOURCE_FORMAT",
    "Chunk",
    "CollectionStats",
    "Hit",
    "LegScore",
    "Record",
    "SearchMode",
    "SearchResult",
    "UpsertReport",
]

SearchMode = Literal["semantic", "keyword", "hybrid", "structured"]


@dataclass(frozen=True)
class Record:
    """A stored record: ``id``, its ``fields`` (a JSON object) and its derived ``text``."""

    id: str
    fields: dict[str, Any]
    text: str


@dataclass(frozen=True)
class Chunk:
    """A piece of a record's text, sized to the embedder's token window.

    Attributes:
        text: the chunk's text.
        ordinal: 0-based position within the record.
        char_start, char_end: offsets into the record's text (end exclusive).
        heading_path: markdown headings above the chunk, outermost first.
        line_start, line_end: 1-based inclusive line range in the source file, or None.
        page_start, page_end: 1-based inclusive page range in the source PDF, or None; derived
            from the record's ``page_starts`` field (see :func:`with_pages`), never stored.
    """

    text: str
    ordinal: int
    char_start: int
    char_end: int
    heading_path: tuple[str, ...] = ()
    line_start: int | None = None
    line_end: int | None = None
    page_start: int | None = None
    page_end: int | None = None


#: The record field of a paged document (a PDF): for page n (1-based), ``page_starts[n - 1]``
#: is the char offset in the record's text where that page's text begins (non-decreasing).
PAGE_STARTS = "page_starts"

#: The record field naming the file format of a folder's note that is neither markdown nor
#: PDF (see :mod:`semsearch.sources.formats`): ``"txt"`` is cut as plain text, its chunks
#: carrying file lines from ``body_line``; ``"org"`` is markdown written line for line from the
#: file (file lines); ``"html"`` and ``"docx"`` are markdown made from the document, whose
#: lines are not the file's, so their chunks carry a heading path and no line numbers.
SOURCE_FORMAT = "source_format"
#: :data:`SOURCE_FORMAT` values whose text is plain text, not markdown.
PLAIN_TEXT_FORMATS = frozenset({"txt"})
#: :data:`SOURCE_FORMAT` values whose text's lines are not the file's.
DERIVED_TEXT_FORMATS = frozenset({"html", "docx"})


def with_pages(chunk: Chunk, fields: Mapping[str, Any]) -> Chunk:
    """``chunk`` with ``page_start``/``page_end`` set from ``fields["page_starts"]``.

    A chunk's pages are those holding its first and last char. Unchanged when the record has no
    such field (markdown, JSON records) or it is not a non-decreasing list of ints from 0.
    """
    starts = fields.get(PAGE_STARTS)
    if not isinstance(starts, list) or not starts or not all(type(s) is int for s in starts):
        return chunk
    if starts[0] != 0 or starts != sorted(starts):
        return chunk
    first = bisect_right(starts, chunk.char_start)
    last = bisect_right(starts, max(chunk.char_start, chunk.char_end - 1))
    return replace(chunk, page_start=max(first, 1), page_end=max(last, 1))


@dataclass(frozen=True)
class LegScore:
    """One leg's view of a hit in hybrid search: its score and 1-based rank (None if absent)."""

    score: float | None
    rank: int | None


@dataclass(frozen=True)
class Hit:
    """One search result: a record and its best-matching chunk.

    Attributes:
        id: the record id.
        score: semantic: cosine similarity in [-1, 1], mixed with the best sentence window's
            (``0.5 * cos(query, chunk) + 0.5 * max cos(query, window)``, still in [-1, 1];
            the chunk cosine alone for a chunk without windows, see :mod:`semsearch.windows`);
            keyword: BM25 (>= 0, higher is better);
            hybrid: the fused score, comparable only within one query; structured: 0.0;
            reranked (``SearchResult.reranked_by`` set): the reranker's score in [0, 1].
        chunk: the record's best-matching chunk (None in structured mode).
        fields: the record's fields.
        components: hybrid: ``{"semantic": LegScore, "keyword": LegScore}``; reranked hits
            add the retrieval mode's own score and rank (e.g. ``"hybrid"``: the fused score)
            and ``"rerank"`` (the reranker's score and the new rank).
        highlight: where in the chunk the hit matched: ``(start, end)`` char offsets into
            ``chunk.text`` (end exclusive) of one sentence window. Semantic: the window closest
            to the query (:mod:`semsearch.windows`); keyword: the sentence holding the most
            query terms (:mod:`semsearch.highlight`); hybrid: the semantic window when the
            chunk has one, else the keyword sentence. None in structured mode, or when no
            sentence boundary marks one out (a one-sentence chunk) or nothing matched.
    """

    id: str
    score: float
    chunk: Chunk | None
    fields: dict[str, Any]
    components: dict[str, LegScore] | None = None
    highlight: tuple[int, int] | None = None

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (tuples become lists)."""
        return asdict(self)


#: How a result's note begins when a floor (the default one, or ``min_score``) removed every
#: hit: the faces show it as "no confident match".
NO_CONFIDENT_MATCH = "no confident match"


@dataclass(frozen=True)
class SearchResult:
    """The hits of one search plus what happened.

    Attributes:
        query: the query as given (echoed even when HyDE replaced it for embedding).
        hits: best first; ties broken by id.
        mode: the mode that ran: semantic, keyword, hybrid or structured.
        hyde: True only when a hypothetical answer was embedded in place of the query.
        degraded: True when part of the search could not run (e.g. embedder down).
        degraded_reason: why, in one sentence, or None.
        total_candidates: chunks or records the store considered before limit/min_score.
        min_score: the cosine threshold applied (semantic mode), None when none was: the value
            given, or the model's calibrated default when the search gave ``"default"``.
        notes: what the search did that the caller may not expect, one sentence each, e.g. a
            ``min_score`` ignored because the mode has no cosine, or a long query embedded in
            windows.
        query_windows: how many windows the query (or HyDE text) was embedded in: 1 when it
            fits the model's window, more for a longer one (the windows' vectors are combined,
            see :mod:`semsearch.long_query`), 0 when nothing was embedded (keyword, structured).
        reranked_by: the reranker's ``model_id`` when the hits were reranked, else None (no
            reranking asked, or it failed: then ``degraded`` says why).
    """

    query: str
    hits: list[Hit]
    mode: SearchMode
    hyde: bool = False
    degraded: bool = False
    degraded_reason: str | None = None
    total_candidates: int = 0
    min_score: float | None = None
    notes: tuple[str, ...] = ()
    query_windows: int = 0
    reranked_by: str | None = None

    def __iter__(self) -> Iterator[Hit]:
        return iter(self.hits)

    def __len__(self) -> int:
        return len(self.hits)

    def __getitem__(self, index: int) -> Hit:
        return self.hits[index]

    @property
    def ids(self) -> list[str]:
        """The hit ids in rank order."""
        return [hit.id for hit in self.hits]

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return asdict(self)


@dataclass
class UpsertReport:
    """What an upsert (or reindex) did, in records and chunks.

    Attributes:
        added, updated, unchanged: records.
        chunks_embedded: chunks given a vector by this call.
        chunks_reused: chunks whose vector was reused by content hash.
        chunks_pending: chunks left without a vector and never tried (``embed=False``, or
            after the embedder failed earlier in the call); ``reindex`` embeds them.
        chunks_failed: chunks tried and left without a vector: texts the model could not
            embed (NaN, Inf or a zero vector; see ``failed``), and the chunks an embedder
            that failed or changed its dimension was given (see ``errors``). ``stats()``
            counts both as ``pending`` and ``failed`` the same way; ``reindex`` retries them.
        failed: ``{record id: why}`` for each record with a text the model could not embed.
        errors: why the embedder failed (an outage or a changed dimension), one line each.
    """

    added: int = 0
    updated: int = 0
    unchanged: int = 0
    chunks_embedded: int = 0
    chunks_reused: int = 0
    chunks_pending: int = 0
    errors: list[str] = field(default_factory=list)
    chunks_failed: int = 0
    failed: dict[str, str] = field(default_factory=dict)

    def merge(self, other: UpsertReport) -> None:
        """Add ``other``'s counts into this report."""
        self.added += other.added
        self.updated += other.updated
        self.unchanged += other.unchanged
        self.chunks_embedded += other.chunks_embedded
        self.chunks_reused += other.chunks_reused
        self.chunks_pending += other.chunks_pending
        self.errors.extend(other.errors)
        self.chunks_failed += other.chunks_failed
        self.failed.update(other.failed)


@dataclass(frozen=True)
class CollectionStats:
    """A collection's counts: records, chunks by embedding status, model and last write."""

    name: str
    model_id: str
    dim: int | None
    records: int
    chunks: int
    embedded: int
    pending: int
    failed: int
    last_updated: str | None
    fields: dict[str, str]
    #: The index health (:class:`semsearch.health.Health` as a dict): state ok | syncing |
    #: degraded | quarantined, reason, failed paths. None when not read.
    health: dict[str, Any] | None = None
