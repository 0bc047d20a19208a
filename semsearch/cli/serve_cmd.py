"""`semsearch serve`: the HTTP API and the web page (FastAPI + uvicorn)."""

from __future__ import annotations

import errno
import os
import socket
from typing import TYPE_CHECKING, Annotated, Any

import typer

from semsearch import settings
from semsearch.cli.common import WatchNewFolderOpt, cli_errors, err_console, start_watch
from semsearch.cli.rerank_opts import RerankerOpt, RerankTopNOpt
from semsearch.errors import BackendUnavailable

if TYPE_CHECKING:
    from semsearch.server.host_guard import HostPolicy

ENV_HOST = "SEMSEARCH_HOST"
ENV_PORT = "SEMSEARCH_PORT"


@cli_errors
def serve(
    index: Annotated[
        str,
        typer.Option(
            "--index",
            "-i",
            envvar=settings.ENV_INDEX,
            show_envvar=True,
            help="Index file (*.embed.db); created on the first write.",
        ),
    ] = settings.DEFAULT_INDEX,
    location: Annotated[
        str | None,
        typer.Option(
            "--location",
            envvar="SEMSEARCH_LOCATION",
            show_envvar=True,
            help="A store location instead of --index (e.g. a postgresql:// URL).",
        ),
    ] = None,
    host: Annotated[
        str,
        typer.Option(
            "--host",
            envvar=ENV_HOST,
            show_envvar=True,
            help="Address to bind; anything but 127.0.0.1 needs API keys.",
        ),
    ] = "127.0.0.1",
    port: Annotated[
        int,
        typer.Option(
            "--port", min=1, max=65535, envvar=ENV_PORT, show_envvar=True, help="TCP port."
        ),
    ] = 8000,
    keys_file: Annotated[
        str | None,
        typer.Option(
            "--keys-file",
            envvar="SEMSEARCH_API_KEYS_FILE",
            show_envvar=True,
            help="File of API keys, one key:role per line (roles: read, write, admin). "
            "Merged with SEMSEARCH_API_KEYS.",
        ),
    ] = None,
    watch: Annotated[
        str | None,
        typer.Option(
            "--watch",
            help="Keep the `notes` collection in step with this markdown folder while serving.",
        ),
    ] = None,
    new_folder: WatchNewFolderOpt = False,
    allowed_host: Annotated[
        list[str] | None,
        typer.Option(
            "--allowed-host",
            help="Also answer this Host name (repeatable; *.example.com for subdomains); "
            "else loopback names only, against DNS rebinding. Env: SEMSEARCH_ALLOWED_HOSTS "
            "(comma-separated).",
        ),
    ] = None,
    allow_origin: Annotated[
        list[str] | None,
        typer.Option(
            "--allow-origin",
            help="Also accept writes and searches from this browser Origin (repeatable). "
            "Env: SEMSEARCH_ALLOWED_ORIGINS (comma-separated).",
        ),
    ] = None,
    rate_limit: Annotated[
        float | None,
        typer.Option(
            "--rate-limit",
            min=0,
            envvar="SEMSEARCH_RATE_LIMIT",
            show_envvar=True,
            help="Requests per minute per API key (429 above it), at least one a day "
            "(0.000694); 0 or inf turn it off. Default: 600 with API keys, off without.",
        ),
    ] = None,
    rate_burst: Annotated[
        int,
        typer.Option(
            "--rate-burst",
            min=1,
            envvar="SEMSEARCH_RATE_BURST",
            show_envvar=True,
            help="Requests a key may send at once before --rate-limit applies.",
        ),
    ] = 60,
    workers: Annotated[
        int,
        typer.Option(
            "--workers",
            min=1,
            max=64,
            envvar="SEMSEARCH_WORKERS",
            show_envvar=True,
            help="Server processes (one per core serves the most searches; not for Milvus Lite).",
        ),
    ] = 1,
    reranker: RerankerOpt = None,
    rerank_top_n: RerankTopNOpt = None,
) -> None:
    """Serve the HTTP API (OpenAPI at /docs) and the search page (at /)."""  # fmt: skip
    import uvicorn

    import semsearch
    from semsearch.database import check_location
    from semsearch.server.host_guard import HostPolicy
    from semsearch.server.http.app import create_app
    from semsearch.server.http.auth import ENV_API_KEYS, KeyRing, check_bind
    from semsearch.server.http.process import (
        ENV_RATE_BURST,
        ENV_RATE_LIMIT,
        single_threaded_blas,
    )
    from semsearch.server.http.rate import check_rate_limit
    from semsearch.server.http.state import Limits, ServerState

    if rate_limit is not None:  # "inf" is no limit; under one a day is refused
        rate_limit = check_rate_limit(rate_limit)
    check_location(location or index)  # never start on a location that cannot be an index
    from semsearch.rerank import resolve_reranker

    ranker = resolve_reranker(reranker) if reranker else None  # a bad spec stops us here
    keys = KeyRing.load(os.environ.get(ENV_API_KEYS), keys_file)
    policy = HostPolicy.build(allowed_host or (), allow_origin or (), bind=host)
    if host in ("0.0.0.0", "::") and not policy.allowed_hosts:
        err_console.print(
            f"note: bound to {host}, but only loopback Host names are answered (DNS rebinding); "
            "name the ones clients use with --allowed-host or SEMSEARCH_ALLOWED_HOSTS"
        )
    single_threaded_blas()
    check_bind(host, keys)
    check_port_free(host, port)
    limits = Limits(rate_per_minute=rate_limit, rate_burst=rate_burst)
    if workers > 1:
        if rate_limit is not None:  # read by each worker process (server/http/process.py)
            os.environ[ENV_RATE_LIMIT] = str(rate_limit)
        os.environ[ENV_RATE_BURST] = str(rate_burst)
        if reranker:  # read by each worker process (server/http/process.py)
            os.environ[settings.ENV_RERANKER] = reranker
        if rerank_top_n is not None:
            os.environ[settings.ENV_RERANK_TOP_N] = str(rerank_top_n)
        _serve_workers(location or index, keys_file, policy, port, workers, watch, new_folder)
        return
    watcher = _start_watch(watch, location or index, new_folder)
    db = semsearch.connect(location or index)
    state = ServerState(
        db, keys, embedder=os.environ.get(settings.ENV_MODEL), limits=limits,
        reranker=ranker, rerank_top_n=rerank_top_n,
    )  # fmt: skip
    mode = "local mode: no API keys, loopback only" if keys.empty else f"{len(keys.keys)} API keys"
    err_console.print(f"semsearch serving {db.location} on http://{host}:{port} ({mode})")
    try:
        _run(
            lambda: uvicorn.run(
                create_app(state, warm_up=True, host_policy=policy),
                host=host,
                port=port,
                log_level="warning",
            )
        )
    finally:
        state.worker.stop()
        if watcher is not None:
            watcher.stop()
        db.close()


def _serve_workers(
    location: str,
    keys_file: str | None,
    policy: HostPolicy,
    port: int,
    workers: int,
    watch: str | None,
    new_folder: bool,
) -> None:
    """`--workers N`: N uvicorn processes, each opening the store itself (server/http/process.py);
    the Host policy reaches them through the environment."""
    import uvicorn

    from semsearch.errors import InvalidQuery
    from semsearch.server.host_guard import ENV_ALLOWED_HOSTS, ENV_ALLOWED_ORIGINS
    from semsearch.server.http.auth import ENV_API_KEYS_FILE
    from semsearch.server.http.process import ENV_SERVE_HOST, ENV_SERVE_LOCATION

    host = policy.bind

    if str(location).startswith("milvus-lite://"):
        raise InvalidQuery(
            "Milvus Lite serves one process only, so --workers must be 1 for it",
            hint="drop --workers, or move the collection to a Milvus server (http://host:19530)",
        )
    os.environ[ENV_SERVE_LOCATION] = str(location)
    os.environ[ENV_SERVE_HOST] = host
    os.environ[ENV_ALLOWED_HOSTS] = ",".join(policy.allowed_hosts)
    os.environ[ENV_ALLOWED_ORIGINS] = ",".join(policy.allowed_origins)
    if keys_file is not None:
        os.environ[ENV_API_KEYS_FILE] = keys_file
    watcher = _start_watch(watch, location, new_folder)
    err_console.print(f"semsearch serving {location} on http://{host}:{port} ({workers} workers)")
    try:
        _run(
            lambda: uvicorn.run(
                "semsearch.server.http.process:app_from_env",
                factory=True,
                host=host,
                port=port,
                workers=workers,
                log_level="warning",
            )
        )
    finally:
        if watcher is not None:
            watcher.stop()


def check_port_free(host: str, port: int) -> None:
    """Bind ``host:port`` once (as uvicorn does, with SO_REUSEADDR) and release it.

    Raises:
        BackendUnavailable: the address cannot be bound (in use, a privileged port, or not an
            address of this machine), with a hint naming the fix.
    """
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        family, kind, proto, _, address = infos[0]
        with socket.socket(family, kind, proto) as sock:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind(address)
    except OSError as exc:
        hints = {
            errno.EADDRINUSE: f"another program listens on port {port}: stop it or pick "
            "another with --port",
            errno.EACCES: f"ports below 1024 need privileges: use --port {port + 8000}"
            if port < 1024
            else "the system refused this port: pick another with --port",
            errno.EADDRNOTAVAIL: f"{host} is not an address of this machine: use 127.0.0.1 "
            "or one of its own addresses with --host",
        }
        hint = hints.get(exc.errno or 0, "check --host and --port")
        reason = exc.strerror or str(exc)
        raise BackendUnavailable(f"cannot listen on {host}:{port}: {reason}", hint=hint) from None


def _run(start: Any) -> None:
    """Run uvicorn; its startup failure (a bind lost in a race) becomes a clean error."""
    try:
        start()
    except SystemExit as exc:
        if exc.code in (0, None):
            raise
        raise BackendUnavailable(
            f"the server could not start (uvicorn exit code {exc.code})",
            hint="see the message above; check --host and --port",
        ) from None


def _start_watch(folder: str | None, location: str, new_folder: bool) -> Any:
    """`--watch`: a watcher thread on its own connection (issue 12), or None."""
    return start_watch(
        folder, location, settings.DEFAULT_COLLECTION, new_folder,
        lambda line: err_console.print(f"watch: {line}"),
    )  # fmt: skip
