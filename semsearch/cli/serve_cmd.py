"""`semsearch serve`: the HTTP API and the web page (FastAPI + uvicorn)."""

from __future__ import annotations

import os
from typing import Annotated, Any

import typer

from semsearch import settings
from semsearch.cli.common import cli_errors, err_console

ENV_HOST = "SEMSEARCH_HOST"
ENV_PORT = "SEMSEARCH_PORT"


def single_threaded_blas() -> None:
    """Limit numpy's BLAS to one thread per call in this process.

    A server runs many searches at once in threads; letting each matrix-vector product also
    fan out over every core oversubscribes the CPU. Measured on a loaded 2-core machine: an exact
    scan of 3,291 x 384 vectors took 27 ms with 2 BLAS threads and 1.2 ms with 1. No-op when
    threadpoolctl is not installed.
    """
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:  # pragma: no cover - threadpoolctl ships with the server extra
        return
    threadpool_limits(limits=1, user_api="blas")


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
        int, typer.Option("--port", envvar=ENV_PORT, show_envvar=True, help="TCP port.")
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
) -> None:
    """Serve the HTTP API (OpenAPI at /docs) and the search page (at /)."""  # fmt: skip
    import uvicorn

    import semsearch
    from semsearch.server.http import create_app
    from semsearch.server.http_auth import ENV_API_KEYS, KeyRing, check_bind
    from semsearch.server.http_state import ServerState

    keys = KeyRing.load(os.environ.get(ENV_API_KEYS), keys_file)
    single_threaded_blas()
    check_bind(host, keys)
    watcher = _start_watch(watch, location or index)  # semsearch/sources/watch.py
    db = semsearch.connect(location or index)
    state = ServerState(db, keys, embedder=os.environ.get(settings.ENV_MODEL))
    mode = "local mode: no API keys, loopback only" if keys.empty else f"{len(keys.keys)} API keys"
    err_console.print(f"semsearch serving {db.location} on http://{host}:{port} ({mode})")
    try:
        uvicorn.run(create_app(state), host=host, port=port, log_level="warning")
    finally:
        state.worker.stop()
        if watcher is not None:
            watcher.stop()
        db.close()


def _start_watch(folder: str | None, location: str) -> Any:
    """`--watch`: a watcher thread on its own connection (issue 12), or None."""
    if folder is None:
        return None
    from semsearch.sources.watch import watch_in_background

    return watch_in_background(
        location,
        folder,
        settings.DEFAULT_COLLECTION,
        embedder=os.environ.get(settings.ENV_MODEL),
        echo=lambda line: err_console.print(f"watch: {line}"),
    )
