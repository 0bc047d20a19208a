"""How one server process is set up: BLAS threads, the shared state, the uvicorn app factory.

``semsearch serve --workers N`` runs N uvicorn worker processes. Each one builds its own
:class:`~semsearch.server.http.state.ServerState` (its own store connection, embedder and
embedding worker) from the environment the parent set, through :func:`app_from_env`. SQLite
in WAL mode and PostgreSQL serve several processes at once; Milvus Lite does not (one process
per data file), so ``serve`` refuses ``--workers`` above 1 for it.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from semsearch import settings

if TYPE_CHECKING:
    from fastapi import FastAPI

    from semsearch.server.http.state import ServerState

__all__ = [
    "ENV_SERVE_HOST",
    "ENV_SERVE_LOCATION",
    "app_from_env",
    "single_threaded_blas",
    "state_from_env",
]

ENV_SERVE_LOCATION = "SEMSEARCH_SERVE_LOCATION"
#: The rate limit of ``serve --rate-limit`` / ``--rate-burst``, for each worker process.
ENV_RATE_LIMIT = "SEMSEARCH_RATE_LIMIT"
ENV_RATE_BURST = "SEMSEARCH_RATE_BURST"
#: The address the parent binds (a specific one is an allowed Host name).
ENV_SERVE_HOST = "SEMSEARCH_SERVE_HOST"


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


def state_from_env() -> ServerState:
    """The state of one worker process: the store at ``SEMSEARCH_SERVE_LOCATION``, the API keys
    of ``SEMSEARCH_API_KEYS`` / ``SEMSEARCH_API_KEYS_FILE``, the model of ``SEMSEARCH_MODEL``,
    the rate limit of ``SEMSEARCH_RATE_LIMIT`` / ``SEMSEARCH_RATE_BURST``, the reranker of
    ``SEMSEARCH_RERANKER`` / ``SEMSEARCH_RERANK_TOP_N``.

    Raises:
        BackendUnavailable: ``SEMSEARCH_SERVE_LOCATION`` is not set.
        SemsearchError: the store cannot be opened (as :func:`semsearch.connect`).
    """
    import semsearch
    from semsearch.errors import BackendUnavailable
    from semsearch.server.http.auth import ENV_API_KEYS, ENV_API_KEYS_FILE, KeyRing
    from semsearch.server.http.state import Limits, ServerState

    location = os.environ.get(ENV_SERVE_LOCATION)
    if not location:
        raise BackendUnavailable(
            f"{ENV_SERVE_LOCATION} is not set",
            hint="start the server with `semsearch serve --workers N`, which sets it",
        )
    keys = KeyRing.load(os.environ.get(ENV_API_KEYS), os.environ.get(ENV_API_KEYS_FILE))
    single_threaded_blas()
    rate = os.environ.get(ENV_RATE_LIMIT)
    limits = Limits(
        rate_per_minute=float(rate) if rate else None,
        rate_burst=int(os.environ.get(ENV_RATE_BURST) or 60),
    )
    from semsearch.rerank import resolve_reranker

    spec = os.environ.get(settings.ENV_RERANKER)
    top_n = os.environ.get(settings.ENV_RERANK_TOP_N)
    db = semsearch.connect(location)
    return ServerState(
        db, keys, embedder=os.environ.get(settings.ENV_MODEL), limits=limits,
        reranker=resolve_reranker(spec) if spec else None,
        rerank_top_n=int(top_n) if top_n else None,
    )  # fmt: skip


def app_from_env() -> FastAPI:
    """The uvicorn factory of a worker process (``uvicorn.run(..., factory=True)``); the app
    closes its store when it shuts down. Its Host policy: ``SEMSEARCH_SERVE_HOST`` and
    ``SEMSEARCH_ALLOWED_HOSTS`` / ``SEMSEARCH_ALLOWED_ORIGINS`` (set by the parent)."""
    from semsearch.server.host_guard import HostPolicy
    from semsearch.server.http.app import create_app

    policy = HostPolicy.build(bind=os.environ.get(ENV_SERVE_HOST, "127.0.0.1"))
    return create_app(state_from_env(), owns_db=True, warm_up=True, host_policy=policy)
