"""The contract suite's fixtures: ONE parametrised ``store`` fixture over every backend.

Adding a backend is one line in ``BACKENDS``: a name and a factory that yields a fresh, empty
location string for ``semsearch.connect`` (and cleans up after the test).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

import semsearch
from tests.postgres import server


@contextmanager
def _sqlite(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    yield str(tmp_path / "contract.embed.db")


@contextmanager
def _postgres(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    url = request.getfixturevalue("postgres_url")
    with server.fresh_schema(url) as location:
        yield location


@contextmanager
def _milvus(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    yield f"milvus-lite://{tmp_path / 'contract.db'}"


Factory = Callable[[pytest.FixtureRequest, Path], AbstractContextManager[str]]

#: Every backend the contract suite runs on: name -> factory of a fresh, empty location.
BACKENDS: dict[str, Factory] = {
    "sqlite": _sqlite,
    "postgres": _postgres,
    "milvus": _milvus,
}


@dataclass(frozen=True)
class StoreUnderTest:
    """One backend under test: its name and a fresh location; ``connect()`` opens it again."""

    backend: str
    location: str

    def connect(self) -> semsearch.Database:
        return semsearch.connect(self.location)


@pytest.fixture(scope="session")
def postgres_url() -> Iterator[str]:
    """A real PostgreSQL with pgvector for the whole session (see tests/postgres/server.py)."""
    url = server.acquire()
    yield url
    server.release()


@pytest.fixture(params=list(BACKENDS))
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[StoreUnderTest]:
    """A fresh, empty store on each backend in ``BACKENDS``."""
    with BACKENDS[request.param](request, tmp_path) as location:
        yield StoreUnderTest(request.param, location)


@pytest.fixture(scope="module", params=list(BACKENDS))
def module_store(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[StoreUnderTest]:
    """Like ``store`` but shared by one module's tests: only for tests that do not write."""
    tmp = tmp_path_factory.mktemp(request.param)
    with BACKENDS[request.param](request, tmp) as location:
        yield StoreUnderTest(request.param, location)


@pytest.fixture
def database(store: StoreUnderTest) -> Iterator[semsearch.Database]:
    """``semsearch.connect`` on the store under test, closed afterwards."""
    db = store.connect()
    yield db
    db.close()
