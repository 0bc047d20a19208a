"""The MCP tools of ``semsearch mcp``: typed signatures (their JSON Schemas) over McpService.

Each tool is a thin adapter: its signature is the input schema (descriptions, defaults and
bounds come from the ``Annotated`` metadata), its body calls :class:`McpService`, and a
:class:`~semsearch.errors.SemsearchError` becomes an MCP tool error (``isError: true``) whose text
says what went wrong and how to fix it, without absolute paths.
"""

# No `from __future__ import annotations`: the SDK reads these annotations at registration.

import logging
from collections.abc import Callable, Mapping
from typing import Annotated, Any, Literal, NotRequired, TypeVar, cast

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError, UnexpectedToolError
from mcp.types import CallToolResult, ToolAnnotations
from pydantic import Field, ValidationError
from typing_extensions import TypedDict  # pydantic needs this one on Python < 3.12

from semsearch.errors import SemsearchError
from semsearch.server.mcp.output import lean_output_schemas, tool_result
from semsearch.server.mcp.service import MAX_HITS, McpService
from semsearch.server.mcp.stdio import LONE_SURROGATES
from semsearch.server.mcp.views import SNIPPET_CHARS, safe_message
from semsearch.validation import SURROGATE_HINT

__all__ = [
    "ArgumentErrors",
    "argument_errors",
    "register_tools",
    "unexpected_error",
    "unknown_arguments",
]

log = logging.getLogger(__name__)

T = TypeVar("T")

READ_ONLY = ToolAnnotations(read_only_hint=True, idempotent_hint=True, open_world_hint=False)
WRITE = ToolAnnotations(read_only_hint=False, destructive_hint=False, open_world_hint=False)
DESTRUCTIVE = ToolAnnotations(read_only_hint=False, destructive_hint=True, open_world_hint=False)

Collection = Annotated[
    str | None,
    Field(description="Collection to use; omit for the server's default (see list_collections)."),
]


class LegOut(TypedDict):
    """One leg's view of a hybrid hit: its score and 1-based rank, or None if it missed it."""

    score: float | None
    rank: int | None


class HitOut(TypedDict):
    """One search hit (see the search tool's description)."""

    id: str
    title: str
    score: float
    text: str
    truncated: bool
    chunk: int | None
    heading_path: list[str]
    line_start: int | None
    line_end: int | None
    page_start: int | None
    page_end: int | None
    fields: dict[str, Any]
    components: dict[str, LegOut] | None
    highlight: str | None


class SearchOut(TypedDict):
    """A search result: what ran, whether it degraded, and the hits, best first."""

    query: str
    collection: str
    mode: str
    hyde: bool
    degraded: bool
    degraded_reason: str | None
    min_score: float | None
    notes: list[str]
    query_windows: int
    reranked_by: str | None
    count: int
    hits: list[HitOut]


class ChunkOut(TypedDict):
    """Where a chunk sits in its record."""

    ordinal: int
    heading_path: list[str]
    line_start: int | None
    line_end: int | None
    page_start: int | None
    page_end: int | None


class RecordOut(TypedDict):
    """One record: its fields and (possibly cut) text, or one chunk of it."""

    id: str
    collection: str
    title: str
    fields: dict[str, Any]
    chunk: NotRequired[ChunkOut]
    chars: int
    truncated: bool
    text: str


SEARCH_DOC = f"""Search the user's indexed notes or records by meaning, by keyword, or both.

Returns up to `limit` hits, best first. Each hit has the record `id` (for notes: the file path
relative to the vault), `title`, `score`, the matching chunk's `text` (at most about
{SNIPPET_CHARS} characters; `truncated` says if it was cut), its `heading_path`, `line_start` and
`line_end` (markdown), `page_start` and `page_end` (PDF, 1-based), the record's `fields`, and in
hybrid mode each leg's score and rank in `components`. `highlight` is the one sentence of the
chunk that matched best (null when the chunk is one sentence or none matched): read it first.
Scores: semantic = cosine similarity in [-1, 1] (half the chunk's, half its best sentence's);
keyword = BM25 (>= 0); hybrid = a calibrated score in [0, 1] that means the same in every query:
0.5 or more is a confident match (its meaning passes the model's threshold, or it holds every
meaningful word of the query), and higher is better. Call `get` with a hit's `id` for the full
text.
An EMPTY result means "no confident match": nothing in the index passed the default floor
(`notes` says so). Do not search again with other words for the same thing and invent an
answer; tell the user nothing relevant was found, or retry with `min_score: -1` to see the
weaker, probably unrelated hits.
When the server has a reranker, the top hits are rescored by it: `reranked_by` names it, `score`
is its relevance in [0, 1] and `components` keeps the mode's own score and rank.
`degraded: true` means part of the search could not run (e.g. the embedding model failed) and
keyword (or un-reranked) results were returned instead; `degraded_reason` says why. Some paths may be hidden by the
server's privacy settings, so a search can return fewer than `limit` hits."""


def _run(fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """Call the service; a SemsearchError becomes a tool error the model can act on."""
    try:
        return fn(*args, **kwargs)
    except SemsearchError as exc:
        raise ToolError(safe_message(exc)) from None


def argument_errors(tool: str, exc: ValidationError) -> str:
    """One line per rejected argument, e.g. "search: argument `limit`: Input should be a valid
    integer" (pydantic's message without the input value or its documentation link)."""
    lines = []
    for err in exc.errors(include_url=False, include_input=False):
        name = ".".join(str(part) for part in err["loc"]) or "arguments"
        problem = " is required" if err["type"] == "missing" else f": {err['msg']}"
        lines.append(f"argument `{name}`{problem}")
    hint = "see the tool's input schema (tools/list) for each argument's type and range"
    return f"Error executing tool {tool}: {'; '.join(lines)}\nhint: {hint}"


def unknown_arguments(tool: str, given: Mapping[str, Any], schema: Mapping[str, Any]) -> str | None:
    """The tool error text for arguments the tool's input schema does not declare, or None.

    The SDK would drop them silently, so ``search {"query": "x", "model": "other"}`` answered
    as if ``model`` were absent; the HTTP API refuses unknown keys (422), and so does MCP.
    """
    known = schema.get("properties") or {}
    unknown = sorted(str(k) for k in given if k not in known)
    if not unknown:
        return None
    names = ", ".join(f"`{k}`" for k in unknown)
    valid = ", ".join(f"`{k}`" for k in known) or "none"
    return (
        f"Error executing tool {tool}: unknown argument{'s' if len(unknown) > 1 else ''} {names}"
        f"\nhint: {tool} takes: {valid} (see tools/list)"
    )


def unexpected_error(tool: str, exc: BaseException) -> str:
    """The tool error text for an exception that is not a SemsearchError (a bug): what failed
    and what to do, never the exception's own text (it may hold paths or record data)."""
    return (
        f"Error executing tool {tool}: internal error ({type(exc).__name__}); the tool did not "
        "complete\nhint: this is a bug in semsearch, not in the arguments; the server log has "
        "the traceback. Retry, or report it with that log"
    )


class ArgumentErrors:
    """Mixin for ``MCPServer``, the one place tool errors are shaped: an argument the input
    schema does not declare is refused (:func:`unknown_arguments`); schema failures of a tool's
    arguments become :func:`argument_errors` text (a ToolError, still caused by the
    ValidationError); an exception that is not a SemsearchError is logged with its traceback
    and answered with :func:`unexpected_error` text."""

    async def call_tool(self, name: str, arguments: dict[str, Any], context: Any = None) -> Any:
        if set(arguments) == {LONE_SURROGATES}:  # see semsearch.server.mcp.stdio
            paths = ", ".join(f"`{p}`" for p in list(arguments[LONE_SURROGATES] or ()))
            raise ToolError(
                f"Error executing tool {name}: argument {paths} holds a lone surrogate"
                f"\nhint: {SURROGATE_HINT}"
            )
        schema = await self._input_schema(name)
        refused = unknown_arguments(name, arguments, schema) if schema is not None else None
        if refused is not None:
            raise ToolError(refused)
        try:
            return await super().call_tool(name, arguments, context)  # type: ignore[misc]
        except UnexpectedToolError as exc:
            crash = exc.__cause__ or exc
            log.error("tool %r raised an unexpected exception", name, exc_info=crash)
            raise ToolError(unexpected_error(name, crash)) from crash
        except ToolError as exc:
            cause = exc.__cause__
            if not isinstance(cause, ValidationError):
                raise
            raise ToolError(argument_errors(name, cause)) from cause

    async def _input_schema(self, name: str) -> Mapping[str, Any] | None:
        """The tool's JSON input schema as ``tools/list`` gives it, or None for an unknown tool
        (the SDK answers that one). Kept after the first call: ``list_tools`` builds every
        tool's description anew, on each call; a name not kept reads the list again (a tool
        added since)."""
        schemas: dict[str, Mapping[str, Any]] | None = getattr(self, "_schemas", None)
        if schemas is None or name not in schemas:
            tools = await self.list_tools()  # type: ignore[attr-defined]
            schemas = {t.name: cast(Mapping[str, Any], t.input_schema) for t in tools}
            self._schemas = schemas
        return schemas.get(name)


def register_tools(server: MCPServer, service: McpService) -> None:
    """Add the read tools, and the write tools when the service allows writes.

    Each tool answers with :func:`~semsearch.server.mcp.output.tool_result` (structured
    content and its compact JSON text) and publishes its output schema as
    :func:`~semsearch.server.mcp.output.lean_schema` writes it."""
    _register_search(server, service)
    _register_reads(server, service)
    if service.config.allow_writes:
        _register_writes(server, service)
    lean_output_schemas(server)


def _register_search(server: MCPServer, service: McpService) -> None:
    @server.tool(
        name="search",
        title="Search notes and records",
        description=SEARCH_DOC,
        annotations=READ_ONLY,
    )
    def search(
        query: Annotated[
            str,
            Field(description="What to look for: a question or keywords, in the user's words."),
        ],
        mode: Annotated[
            Literal["semantic", "keyword", "hybrid"],
            Field(
                description="semantic: by meaning; keyword: by words (BM25); hybrid: both, "
                "a calibrated score in [0, 1], 0.5 or more when confident (best default)."
            ),
        ] = "hybrid",
        limit: Annotated[
            int, Field(ge=1, le=MAX_HITS, description="At most this many hits (1-100).")
        ] = 10,
        min_score: Annotated[
            Annotated[float, Field(ge=-1.0, le=1.0)] | Literal["default"],
            Field(
                description='"default" drops hits below each mode\'s floor (semantic: the '
                "model's cosine threshold; hybrid: 0.5; keyword: no meaningful query word). A "
                "number is a cosine threshold in semantic mode and a hybrid-score threshold in "
                "hybrid mode (keyword mode ignores it); -1 keeps every hit.",
            ),
        ] = "default",
        folder: Annotated[
            str | None,
            Field(description="Only records whose id (path) lies under this folder, e.g. 'user/'."),
        ] = None,
        collection: Collection = None,
        where: Annotated[
            dict[str, Any] | None,
            Field(
                description="Filter on the collection's declared fields (see list_collections), "
                'e.g. {"level": 3}, {"level": {"$gte": 2}}, {"school": {"$in": ["Evocation"]}}; '
                "operators $eq $ne $gt $gte $lt $lte $in $nin $contains $and $or $not."
            ),
        ] = None,
        hypothetical_answer: Annotated[
            str | None,
            Field(
                description="HyDE: a short made-up answer to the query; it is embedded instead of "
                "the query to find similar passages. The result then reports hyde: true."
            ),
        ] = None,
        rerank: Annotated[
            bool | None,
            Field(
                description="Rescore the top hits with the server's reranker: unset uses it "
                "when the server has one, false skips it (faster), true requires it."
            ),
        ] = None,
    ) -> Annotated[CallToolResult, SearchOut]:
        return tool_result(
            _run(
                service.search,
                query,
                mode=mode,
                limit=limit,
                min_score=min_score,
                folder=folder,
                collection=collection,
                where=where,
                hypothetical_answer=hypothetical_answer,
                rerank=rerank,
            )
        )


def _register_reads(server: MCPServer, service: McpService) -> None:
    @server.tool(name="get", title="Read a record", annotations=READ_ONLY)
    def get(
        id: Annotated[
            str,
            Field(
                min_length=1,
                description="The record id from a search hit (for notes: the path in the vault).",
            ),
        ],
        collection: Collection = None,
        chunk: Annotated[
            int | None,
            Field(ge=0, description="Only this chunk (the `chunk` number of a search hit)."),
        ] = None,
        max_chars: Annotated[
            int, Field(ge=100, le=200_000, description="Cut the text after this many characters.")
        ] = 20_000,
    ) -> Annotated[CallToolResult, RecordOut]:
        """The full text of one record (or of one of its chunks) and its fields, by id or path."""
        return tool_result(
            _run(service.get, id, collection=collection, chunk=chunk, max_chars=max_chars)
        )

    @server.tool(name="list_collections", title="List collections", annotations=READ_ONLY)
    def list_collections() -> Annotated[CallToolResult, dict[str, Any]]:
        """The collections in the index: names, declared fields (usable in `where`), record and
        chunk counts, embedding model, pending embeddings and last index time."""
        return tool_result(_run(service.list_collections))

    @server.tool(name="stats", title="Index health", annotations=READ_ONLY)
    def stats() -> Annotated[CallToolResult, dict[str, Any]]:
        """Index health: counts per collection, models, last indexed time, and whether semantic
        search is usable (else only keyword search works)."""
        return tool_result(_run(service.stats))


def _register_writes(server: MCPServer, service: McpService) -> None:
    @server.tool(name="upsert", title="Add or update records", annotations=WRITE)
    def upsert(
        records: Annotated[
            list[dict[str, Any]],
            Field(
                min_length=1,
                max_length=1000,
                description='JSON objects, each with an "id" and a "text" (or the collection\'s '
                "template fields) plus any other fields. Existing ids are replaced.",
            ),
        ],
        collection: Collection = None,
    ) -> Annotated[CallToolResult, dict[str, Any]]:
        """Insert or update records by id and embed them (the collection is created if needed)."""
        return tool_result(_run(service.upsert, records, collection=collection))

    @server.tool(name="delete", title="Delete records", annotations=DESTRUCTIVE)
    def delete(
        ids: Annotated[
            list[str], Field(min_length=1, max_length=1000, description="Record ids to delete.")
        ],
        collection: Collection = None,
    ) -> Annotated[CallToolResult, dict[str, Any]]:
        """Delete records by id, with their chunks and vectors. Returns how many existed."""
        return tool_result(_run(service.delete, ids, collection=collection))

    @server.tool(name="reindex", title="Embed pending chunks", annotations=WRITE)
    def reindex(collection: Collection = None) -> Annotated[CallToolResult, dict[str, Any]]:
        """Embed every chunk still waiting for a vector (e.g. after the model was unavailable)."""
        return tool_result(_run(service.reindex, collection=collection))
