"""Request and response bodies of the HTTP API (pydantic models; they make the OpenAPI schema)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, StrictInt, StrictStr

__all__ = [
    "ChunkOut",
    "CollectionIn",
    "CollectionOut",
    "DeleteOut",
    "HealthOut",
    "HitOut",
    "LegOut",
    "RecordIn",
    "RecordOut",
    "RecordsIn",
    "ReindexOut",
    "SearchIn",
    "SearchOut",
    "StatsOut",
    "UpsertOut",
    "WorkerOut",
]

NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$"
MAX_TEXT = 4000


#: A ``min_score``: a cosine similarity in [-1, 1], ``"default"`` (the model's calibrated
#: threshold) or null (keep all).
def _check_min_score(value: object) -> object:
    """One error for every bad ``min_score`` (the union would list one per branch)."""
    if value is None or value == "default":
        return value
    if isinstance(value, bool) or not isinstance(value, int | float) or not -1 <= value <= 1:
        raise ValueError('must be a number in [-1, 1], "default" or null')
    return value


MinScore = Annotated[float | Literal["default"] | None, BeforeValidator(_check_min_score)]


#: Request bodies are strict (``"limit": "5"`` is refused, as the Python API refuses it) and
#: refuse unknown keys (a typo such as ``"limt"`` is a 422 naming it, not silently ignored).
STRICT = ConfigDict(strict=True, extra="forbid")


class CollectionIn(BaseModel):
    """A collection to create: declared fields (for filters) and the text template (embedded)."""

    model_config = STRICT

    name: str = Field(pattern=NAME_PATTERN, examples=["products"])
    fields: dict[str, str] = Field(
        default_factory=dict,
        max_length=64,
        description='field name -> type ("str", "int", "float", "bool", "list[str]"), '
        'optionally "type=dotted.source.path"',
        examples=[{"brand": "str", "price": "float", "categories": "list[str]"}],
    )
    text: list[str] = Field(
        default_factory=lambda: ["text"],
        min_length=1,
        max_length=32,
        description="source paths whose values make up the embedded text, in order",
        examples=[["name", "description"]],
    )
    chunker: Literal["text", "markdown"] = "text"
    keyword_tokenizer: Literal["porter", "trigram"] | None = Field(
        default=None,
        description="porter (English stemming; the default) or trigram (substrings: Chinese, "
        "Japanese, Korean, prefixes); fixed when the collection is created",
    )


class CollectionOut(BaseModel):
    """A collection: its model, declared fields, text template and record count."""

    name: str
    model_id: str
    dim: int | None
    fields: dict[str, str]
    text: list[str]
    chunker: str
    records: int


class RecordIn(BaseModel):
    """A record: an ``id`` plus any JSON fields; ``text`` (if given) is its document text."""

    model_config = ConfigDict(extra="allow")

    id: StrictStr | StrictInt = Field(examples=["item-1"])
    text: str | None = None


class RecordsIn(BaseModel):
    """A batch of records to insert or update by id."""

    model_config = STRICT

    records: list[RecordIn]


class UpsertOut(BaseModel):
    """What an upsert did. Embedding happens afterwards, in the background."""

    added: int
    updated: int
    unchanged: int
    chunks_pending: int = Field(description="chunks stored and waiting for the background embedder")
    chunks_reused: int = Field(
        description="chunks whose vector was reused (same content, same model)"
    )
    queued: bool = Field(description="True when the background embedder accepted the work")


class RecordOut(BaseModel):
    """A stored record. ``vectors`` only with ``include_vectors=true`` and an admin key."""

    id: str
    fields: dict[str, Any]
    text: str
    vectors: list[list[float] | None] | None = Field(
        default=None,
        description="float32 unit vectors, one per chunk by ordinal (null: not embedded yet)",
    )


class DeleteOut(BaseModel):
    """The deleted record's id."""

    id: str
    deleted: bool


class SearchIn(BaseModel):
    """A search. See ``Collection.search`` for the meaning of each field."""

    model_config = STRICT

    query: str = Field(
        default="",
        max_length=MAX_TEXT,
        examples=["my blue jacket"],
        description="empty: list the records (matching `where`/`folder`) by id, no ranking",
    )
    mode: Literal["semantic", "keyword", "hybrid"] = "semantic"
    limit: int = Field(default=10, ge=1, le=1000)
    offset: int = Field(
        default=0, ge=0, le=2**63 - 1, description="listing (empty query) only: skip this many"
    )
    min_score: MinScore = Field(
        default="default",
        description="\"default\" (or omitted): each mode's floor (semantic: the model's cosine "
        "threshold; hybrid: a score of 0.5, a confident match; keyword: hits holding a "
        "meaningful query word); a number: the minimum cosine (semantic) or hybrid score; "
        "null keeps every hit, ranked",
    )
    where: dict[str, Any] | None = Field(
        default=None, examples=[{"price": {"$lt": 100}, "brand": "Samsung"}]
    )
    folder: str | None = Field(default=None, max_length=1000)
    exclude: list[str] = Field(default_factory=list, max_length=100)
    hypothetical_answer: str | None = Field(
        default=None, max_length=MAX_TEXT, description="HyDE: embed this instead of the query"
    )
    fallback: Literal["keyword"] | None = Field(
        default=None, description='"keyword": keyword results (degraded) if the embedder is down'
    )
    include_vectors: bool = Field(default=False, description="admin keys only")
    rerank: bool | None = Field(
        default=None,
        description="rerank the top hits with the server's reranker (serve --reranker): null "
        "(default) reranks when the server has one, false never, true requires one (400 if "
        "none). Clients cannot name a model: the operator chooses it and its key.",
    )
    rerank_top_n: int | None = Field(
        default=None, ge=1, le=1000, description="hits rescored (default: the server's, or 50)"
    )


class ChunkOut(BaseModel):
    """The hit's best-matching chunk of text, with char offsets, (markdown) headings/lines and
    (PDF) 1-based pages."""

    text: str
    ordinal: int
    char_start: int
    char_end: int
    heading_path: list[str]
    line_start: int | None
    line_end: int | None
    page_start: int | None = None
    page_end: int | None = None


class LegOut(BaseModel):
    """One hybrid leg's view of a hit: score and 1-based rank (null when the leg missed it)."""

    score: float | None
    rank: int | None
    percent: int | None = Field(
        default=None, description="semantic leg: round(cosine similarity x 100)"
    )


class HitOut(BaseModel):
    """One result: a record with its best chunk.

    ``score``: semantic: cosine similarity in [-1, 1] (half the chunk's, half its best sentence
    window's: :mod:`semsearch.windows`); keyword: BM25 (>= 0, higher is better);
    hybrid: the calibrated score in [0, 1] (0.5 or more: a confident hit; the same meaning in
    every query, docs/retrieval.md); reranked
    (``reranked_by`` set): the reranker's score in [0, 1], the mode's own in ``components``.
    """

    rank: int
    id: str
    score: float
    percent: int | None = Field(
        default=None, description="semantic mode: round(cosine similarity x 100)"
    )
    chunk: ChunkOut | None
    fields: dict[str, Any]
    components: dict[str, LegOut] | None = None
    highlight: tuple[int, int] | None = Field(
        default=None,
        description="[start, end) char offsets into chunk.text of the sentence that matched "
        "(semantic: the closest sentence window; keyword: most query terms), or null",
    )
    vector: list[float] | None = Field(default=None, description="admin + include_vectors only")


class SearchOut(BaseModel):
    """The hits of one search and what happened."""

    query: str
    mode: str
    hyde: bool
    degraded: bool
    degraded_reason: str | None
    total_candidates: int
    min_score: float | None = Field(
        default=None,
        description="the threshold applied: a cosine (semantic) or hybrid score, else null",
    )
    notes: list[str] = Field(
        default_factory=list,
        description="what the search did that may surprise, e.g. 'no confident match: ...' "
        "when the floor left nothing (hits is then [])",
    )
    query_windows: int = Field(
        default=0, description="windows the query was embedded in (>1: longer than the model's)"
    )
    reranked_by: str | None = Field(
        default=None,
        description="the reranker's model id when hits were reranked (scores: sigmoid of the "
        "cross-encoder's logit, in [0, 1]); null when not (or it failed: see degraded)",
    )
    hits: list[HitOut]


class WorkerOut(BaseModel):
    """The background embedder's state for a collection."""

    queued: bool
    running: bool
    embedded: int
    failures: int
    last_error: str | None


class StatsOut(BaseModel):
    """Counts by embedding status: ``pending`` and ``failed`` chunks are keyword-searchable only."""

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
    worker: WorkerOut
    query_cache: dict[str, float] | None = Field(
        default=None,
        description="the process's query-embedding LRU (shared by every collection): hits, "
        "misses, entries, capacity, hit_rate",
    )


class ReindexOut(BaseModel):
    """How many chunks a reindex newly embedded, and what is left.

    ``queued``: true when the work went to the background embedder (``wait=false``); then
    ``embedded`` is 0 and ``stats`` shows the progress."""

    embedded: int
    pending: int
    failed: int
    queued: bool = False


class HealthOut(BaseModel):
    """Liveness: the server answers and the store is readable."""

    status: Literal["ok"]
    version: str
    collections: int
    #: Per collection: the index health (semsearch/health.py): state ok | syncing | degraded |
    #: quarantined, reason, failed paths. Liveness stays "ok" while an index is quarantined.
    index_health: dict[str, dict[str, Any]] = Field(default_factory=dict)
    #: The query-embedding LRU: hits, misses, entries, capacity, hit_rate (null when off).
    query_cache: dict[str, float] | None = None
