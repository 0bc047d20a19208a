"""Fixtures for the PostgreSQL-specific tests: the shared test server and a fresh schema."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.postgres import server


@pytest.fixture(scope="session")
def postgres_url() -> Iterator[str]:
    """A real PostgreSQL with pgvector for the whole session (see tests/postgres/server.py)."""
    url = server.acquire()
    yield url
    server.release()


@pytest.fixture
def pg_location(postgres_url: str) -> Iterator[str]:
    """A URL whose search_path is a new, empty schema (dropped afterwards)."""
    with server.fresh_schema(postgres_url) as location:
        yield location


@pytest.fixture
def raw(postgres_url: str, pg_location: str):
    """Run SQL (autocommit) as the test user inside the test's schema; returns all rows."""
    import psycopg

    conn = psycopg.connect(pg_location, autocommit=True)

    def run(sql: str, params: tuple = ()) -> list[tuple]:
        cur = conn.execute(sql, params)
        return cur.fetchall() if cur.description else []

    yield run
    conn.close()
