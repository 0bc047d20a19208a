"""The HTTP API (FastAPI) and the web page at ``/``.

Thin by design: each route parses, checks the caller's role, calls the library and renders.
Errors become ``{error, message, hint}`` in one place (:mod:`semsearch.server.http.errors`).
Adding records stores them at once and hands embedding to a background worker
(:mod:`semsearch.worker`), so writes never wait on, or fail because of, the embedder.

    from semsearch.server.http.app import create_app
    from semsearch.server.http.state import ServerState
    app = create_app(ServerState(semsearch.connect("items.embed.db")))

Routes (OpenAPI at ``/docs``): ``GET /health``; ``GET|POST /collections``; ``GET
/collections/{name}``; ``POST /collections/{name}/records``; ``GET|DELETE
/collections/{name}/records/{id}``; ``POST /collections/{name}/search``; ``POST
/collections/{name}/reindex``; ``GET /collections/{name}/stats``; ``POST /v1/embeddings``
(OpenAI's shape, :mod:`semsearch.server.http.embeddings`).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from importlib import resources
from typing import Annotated, Any

from anyio.to_thread import run_sync
from fastapi import Depends, FastAPI, Query, Request, Response
from fastapi.responses import FileResponse
from fastapi.staticfiles import StaticFiles
from fastapi_offline import FastAPIOffline

from semsearch import __version__
from semsearch.rerank import Reranker
from semsearch.server.host_guard import HostGuard, HostPolicy
from semsearch.server.http.auth import Role, request_key, requires
from semsearch.server.http.embeddings import embeddings_router
from semsearch.server.http.errors import ApiError, error_responses, install_error_handlers
from semsearch.server.http.limits import BodyLimit
from semsearch.server.http.memory import memory_router
from semsearch.server.http.models import (
    CollectionIn,
    CollectionOut,
    DeleteOut,
    HealthOut,
    RecordOut,
    RecordsIn,
    ReindexOut,
    SearchIn,
    SearchOut,
    StatsOut,
    UpsertOut,
    WorkerOut,
)
from semsearch.server.http.paths import refuse_unaddressable
from semsearch.server.http.state import ServerState, describe
from semsearch.server.http.views import record_out, search_out

__all__ = ["create_app"]

Reader = Annotated[Role, Depends(requires(Role.read))]
Writer = Annotated[Role, Depends(requires(Role.write))]
Admin = Annotated[Role, Depends(requires(Role.admin))]
#: Errors any collection route can answer (auth, unknown collection, validation, rate limit).
_COMMON = (400, 401, 403, 404, 422, 429)


async def _state(request: Request) -> ServerState:
    state: ServerState = request.app.state.semsearch
    return state


State = Annotated[ServerState, Depends(_state)]


def _need_admin_for_vectors(role: Role, include_vectors: bool) -> None:
    if include_vectors and role < Role.admin:
        raise ApiError(
            403, "forbidden", "vectors are only returned to admin keys",
            "drop include_vectors, or use an admin key",
        )  # fmt: skip


def create_app(
    state: ServerState,
    owns_db: bool = False,
    warm_up: bool = False,
    host_policy: HostPolicy | None = None,
) -> FastAPI:
    """Build the app around ``state``. Every request first passes the Host and Origin check
    of ``host_policy`` (default: loopback names only; :mod:`semsearch.server.host_guard`). The embedding worker starts with the app and first queues
    the collections that still have pending chunks (:meth:`ServerState.resume_pending`); it
    stops when the app shuts down, and
    with ``owns_db`` the database is closed too (a worker process of ``serve --workers N``).
    With ``warm_up`` (``semsearch serve``), startup loads the local models of existing
    collections and freezes the heap (:meth:`ServerState.warm_up`)."""

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        if warm_up:
            await run_sync(state.warm_up)
        state.worker.start()
        await run_sync(state.resume_pending)  # chunks an earlier process left pending
        yield
        state.worker.stop()
        if owns_db:
            state.db.close()

    # Swagger UI and ReDoc assets come from the fastapi-offline package, not a CDN, so /docs
    # works on a machine without internet access, like the page at /.
    app = FastAPIOffline(
        title="semsearch",
        version=__version__,
        summary="Semantic, keyword and hybrid search over your own records.",
        lifespan=lifespan,
    )
    app.state.semsearch = state
    install_error_handlers(app)
    app.add_middleware(BodyLimit, max_bytes=state.limits.max_body_bytes)
    app.add_middleware(HostGuard, policy=host_policy or HostPolicy())  # outermost: runs first
    _add_collection_routes(app)
    _add_record_routes(app)
    app.include_router(memory_router())  # /memory/... (semsearch/server/http/memory.py)
    app.include_router(embeddings_router())  # /v1/embeddings (OpenAI's shape)
    _add_page(app)
    return app


def _add_collection_routes(app: FastAPI) -> None:
    @app.api_route(
        "/health",
        methods=["GET", "HEAD"],  # HEAD: monitors that probe with `curl -I`
        response_model=HealthOut,
        responses=error_responses(503),
        tags=["meta"],
    )
    def health(request: Request, state: State) -> HealthOut:
        """Liveness: the server answers and the store is readable (no key needed), and each
        collection's index health (ok | syncing | degraded | quarantined). With API keys
        configured, the per-collection health (it names the collections) needs a valid key."""
        from semsearch.health import read_health

        names = state.collections()  # no key needed here: no failed paths, only counts
        key = request_key(request)
        health: dict[str, dict[str, Any]] = {}  # names are private when keys are configured
        if state.keys.empty or (key is not None and state.keys.role_for(key) is not None):
            health = {n: _public_health(read_health(state.db.store, n)) for n in names}
        cache = state.query_cache.stats().to_dict() if state.query_cache else None
        return HealthOut(
            status="ok", version=__version__, collections=len(names), index_health=health,
            query_cache=cache,
        )  # fmt: skip

    @app.get(
        "/collections",
        response_model=list[CollectionOut],
        responses=error_responses(401, 403, 429, 503),
        tags=["collections"],
    )
    def list_collections(state: State, role: Reader) -> list[CollectionOut]:
        """Every collection with its model, declared fields, text template and record count."""
        return [describe(state.collection(name)) for name in state.collections()]

    @app.post(
        "/collections",
        response_model=CollectionOut,
        status_code=201,
        responses={
            200: {"model": CollectionOut, "description": "already existed"},
            **error_responses(400, 401, 403, 409, 422, 429, 503),
        },
        tags=["collections"],
    )
    def create_collection(
        body: CollectionIn, state: State, role: Admin, response: Response
    ) -> CollectionOut:
        """Create a collection (admin). 201 when created; 200 when it exists with a compatible
        schema (new fields are added); 409 when its schema conflicts."""
        coll, created = state.create(body)
        response.status_code = 201 if created else 200
        return describe(coll)

    @app.get(
        "/collections/{name}",
        response_model=CollectionOut,
        responses=error_responses(*_COMMON),
        tags=["collections"],
    )
    def get_collection(name: str, state: State, role: Reader) -> CollectionOut:
        """One collection's description."""
        return describe(state.collection(name))

    @app.get(
        "/collections/{name}/stats",
        response_model=StatsOut,
        responses=error_responses(*_COMMON),
        tags=["collections"],
    )
    def stats(name: str, state: State, role: Reader) -> StatsOut:
        """Records and chunks by embedding status. ``pending``: waiting for the background
        embedder; ``failed``: the embedder failed (keyword-searchable; reindex embeds them)."""
        s = state.collection(name).stats()
        w = state.worker.status(name)
        return StatsOut(
            name=s.name, model_id=s.model_id, dim=s.dim, records=s.records, chunks=s.chunks,
            embedded=s.embedded, pending=s.pending, failed=s.failed, last_updated=s.last_updated,
            fields=s.fields, worker=WorkerOut(**w.__dict__),
            query_cache=state.query_cache.stats().to_dict() if state.query_cache else None,
        )  # fmt: skip

    @app.post(
        "/collections/{name}/reindex",
        response_model=ReindexOut,
        responses={
            202: {"model": ReindexOut, "description": "queued for the background embedder"},
            **error_responses(*_COMMON, 409, 503),
        },
        tags=["collections"],
    )
    def reindex(
        name: str,
        state: State,
        role: Admin,
        response: Response,
        wait: Annotated[
            bool, Query(description="false: queue the work and answer 202 at once; poll stats")
        ] = True,
    ) -> ReindexOut:
        """Embed every pending or failed chunk now (admin); 503 if the embedder still fails.

        With ``wait=false`` the chunks go to the background embedder instead and the answer is
        202 at once (a large backlog takes minutes, longer than a proxy waits); ``stats`` shows
        the progress. 503 when the background embedder cannot take more work."""
        if not wait:
            state.queue_reindex(name)
            s = state.collection(name).stats()
            response.status_code = 202
            return ReindexOut(embedded=0, pending=s.pending, failed=s.failed, queued=True)
        embedded = state.reindex(name)
        s = state.collection(name).stats()
        return ReindexOut(embedded=embedded, pending=s.pending, failed=s.failed)


def _add_record_routes(app: FastAPI) -> None:
    @app.post(
        "/collections/{name}/records",
        response_model=UpsertOut,
        responses=error_responses(*_COMMON, 413),
        tags=["records"],
    )
    def upsert(name: str, body: RecordsIn, state: State, role: Writer) -> UpsertOut:
        """Insert or update records by id (write). They are stored and keyword-searchable at
        once; embedding happens in the background and never makes this call wait or fail."""
        if len(body.records) > state.limits.max_batch:
            raise ApiError(
                413, "payload_too_large",
                f"{len(body.records)} records in one request; the limit is {state.limits.max_batch}",
                "split the records into smaller batches",
            )  # fmt: skip
        refuse_unaddressable((str(r.id) for r in body.records), "record id")
        records = [r.model_dump(exclude_none=False) for r in body.records]
        for raw, record in zip(body.records, records, strict=True):
            if raw.text is None:
                record.pop("text", None)
        report, queued = state.upsert(name, records)
        return UpsertOut(
            added=report.added, updated=report.updated, unchanged=report.unchanged,
            chunks_pending=report.chunks_pending, chunks_reused=report.chunks_reused,
            queued=queued,
        )  # fmt: skip

    @app.get(
        "/collections/{name}/records/{record_id:any_path}",
        response_model=RecordOut,
        responses=error_responses(*_COMMON),
        tags=["records"],
    )
    def get_record(
        name: str,
        record_id: str,
        state: State,
        role: Reader,
        include_vectors: Annotated[bool, Query(description="admin keys only")] = False,
    ) -> RecordOut:
        """One record; its stored chunk vectors only with ``include_vectors=true`` (admin)."""
        _need_admin_for_vectors(role, include_vectors)
        coll = state.collection(name)
        found = coll.get([record_id])
        if not found:
            raise ApiError(
                404, "record_not_found", f"no record {record_id!r} in {name!r}",
                "check the id; search lists what is there",
            )  # fmt: skip
        vectors = coll.vectors([record_id]).get(record_id, []) if include_vectors else None
        return record_out(found[0], vectors)

    @app.delete(
        "/collections/{name}/records/{record_id:any_path}",
        response_model=DeleteOut,
        responses=error_responses(*_COMMON),
        tags=["records"],
    )
    def delete_record(name: str, record_id: str, state: State, role: Writer) -> DeleteOut:
        """Delete a record with its chunks and vectors (write); 404 if it does not exist."""
        if state.collection(name).delete([record_id]) == 0:
            raise ApiError(404, "record_not_found", f"no record {record_id!r} in {name!r}")
        return DeleteOut(id=record_id, deleted=True)

    @app.post(
        "/collections/{name}/search",
        response_model=SearchOut,
        responses=error_responses(*_COMMON, 409, 503),
        tags=["search"],
    )
    async def search(name: str, body: SearchIn, state: State, role: Reader) -> SearchOut:
        """Search by meaning (semantic: ``percent`` = round(cosine similarity x 100)), by words
        (keyword: BM25) or both (hybrid: the calibrated score in [0, 1], 0.5 or more for a
        confident hit; each hit carries both legs). By default each mode's floor applies: an
        empty ``hits`` with a note starting "no confident match" means nothing answers.
        Each record appears once, with its best chunk."""
        _need_admin_for_vectors(role, body.include_vectors)
        return await run_sync(_search, name, body, state, limiter=state.search_limiter)


def _search(name: str, body: SearchIn, state: ServerState) -> SearchOut:
    """The blocking part of a search, run in a worker thread."""
    coll = state.collection(name)
    result = coll.search(
        body.query,
        mode=body.mode,
        limit=body.limit,
        min_score=body.min_score,
        where=body.where,
        folder=body.folder,
        exclude=tuple(body.exclude),
        hypothetical_answer=body.hypothetical_answer,
        fallback=body.fallback,
        rerank=_reranker(body.rerank, state),
        rerank_top_n=body.rerank_top_n or state.rerank_top_n,
        offset=body.offset,
    )
    return search_out(result, coll, body.include_vectors)


def _reranker(wanted: bool | None, state: ServerState) -> Reranker | None:
    """The server's reranker unless the request turned it off; 400 when asked and absent."""
    if wanted is True and state.reranker is None:
        raise ApiError(
            400,
            "no_reranker",
            "this server has no reranker",
            hint="start it with `semsearch serve --reranker SPEC`, or send rerank: null",
        )
    return None if wanted is False else state.reranker


def _add_page(app: FastAPI) -> None:
    web = resources.files("semsearch.server") / "web"
    directory = str(web)

    @app.get("/", include_in_schema=False)
    def page() -> FileResponse:
        return FileResponse(f"{directory}/index.html", media_type="text/html")

    app.mount("/static", StaticFiles(directory=directory), name="static")


def _public_health(health: Any) -> dict[str, Any]:
    """A collection's index health for the key-less /health: failed paths dropped (their
    count stays), absolute paths in the reason reduced to file names."""
    from semsearch.server.http.errors import redact_paths

    doc: dict[str, Any] = health.to_dict()
    return doc | {"failed": [], "reason": redact_paths(doc["reason"]) if doc["reason"] else None}
