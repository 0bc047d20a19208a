"""A search reuses the cache's snapshot while nothing was committed to the file, and sees every
commit of another connection (another store object on the file, as another process would be)
on its very next search.

The reuse is keyed by the reader connection's ``PRAGMA data_version`` (ann/cache.py
``AnnIndex.unchanged``); these tests count the refreshes it saves and check that it saves none
it must not. Ground truth is a plain numpy scan (tests/ann/synthetic.py).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import semsearch
from semsearch.ann.cache import AnnIndex
from tests.ann import synthetic as syn

DIM = 32
N = 3000


@pytest.fixture
def counted(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """The ``upkeep`` argument of every AnnIndex.refresh call, in order."""
    calls: list[bool] = []
    real = AnnIndex.refresh

    def refresh(self: AnnIndex, read, upkeep: bool = True):  # type: ignore[no-untyped-def]
        calls.append(upkeep)
        return real(self, read, upkeep)

    monkeypatch.setattr(AnnIndex, "refresh", refresh)
    return calls


def _names(coll, q: np.ndarray, exact: bool = False) -> list[str]:  # type: ignore[no-untyped-def]
    return [h.record_id for h in coll.store.vector_search(coll.name, q, 10, None, exact)]


def test_plumbing_unchanged_file_reuses_the_snapshot_without_a_refresh(
    tmp_path: Path, counted: list[bool]
) -> None:
    vectors = syn.clustered(N, DIM, seed=3)
    with semsearch.connect(tmp_path / "u.embed.db") as db:
        coll = syn.open_collection(db, DIM, threshold=1000, ef_search=64)
        syn.write(coll, vectors, list(range(N)))
        q = vectors[17]
        first = _names(coll, q)
        assert first[0] == syn.name(17)  # the query is row 17's own vector
        refreshes = len(counted)
        assert refreshes >= 1
        for _ in range(5):
            assert _names(coll, q) == first
        assert len(counted) == refreshes  # five searches, no refresh: nothing was committed


def test_plumbing_write_by_another_connection_is_seen_by_the_next_search(
    tmp_path: Path, counted: list[bool]
) -> None:
    """Deletes and adds through a second store object on the same file (its own
    writer and reader connections) show in the first store's next search, graph and exact."""
    path = tmp_path / "two.embed.db"
    vectors = syn.clustered(N, DIM, seed=4)
    live = np.ones(N + 1, dtype=np.bool_)
    with semsearch.connect(path) as db, semsearch.connect(path) as other:
        coll = syn.open_collection(db, DIM, threshold=1000, ef_search=64)
        syn.write(coll, vectors[:N], list(range(N)))
        live[N] = False
        q = vectors[42]
        assert _names(coll, q)[0] == syn.name(42)
        _names(coll, q)  # a reused snapshot, as in the test above
        before = len(counted)
        them = syn.open_collection(other, DIM)

        them.delete([syn.name(42)])
        live[42] = False
        got = _names(coll, q)
        assert len(counted) == before + 1  # the commit was noticed: one refresh
        assert syn.name(42) not in got
        assert got[0] == syn.exact_top(vectors, live[:N], q, 1)[0]

        moved = np.vstack([vectors, q[None, :]])  # record N gets the query's own vector
        syn.write(them, moved[N : N + 1], [N])
        live[N] = True
        assert _names(coll, q)[0] == syn.name(N)
        assert _names(coll, q, exact=True) == syn.exact_top(moved, live, q, 10)


def test_plumbing_reopened_reader_or_exact_only_refresh_does_not_answer(
    tmp_path: Path, counted: list[bool]
) -> None:
    """The reuse needs the same reader connection (a new one's numbers start afresh) and, for
    a graph search, a snapshot refreshed with upkeep (an exact search's refresh builds no
    graph)."""
    vectors = syn.clustered(N, DIM, seed=5)
    with semsearch.connect(tmp_path / "r.embed.db") as db:
        coll = syn.open_collection(db, DIM, threshold=1000, ef_search=64)
        syn.write(coll, vectors, list(range(N)))
        q = vectors[5]
        _names(coll, q, exact=True)
        assert counted[-1] is False
        n = len(counted)
        _names(coll, q, exact=True)
        assert len(counted) == n  # exact after exact: reused
        _names(coll, q)
        assert counted[n:] == [True]  # graph search after an exact-only refresh: refreshed
        _names(coll, q)
        assert len(counted) == n + 1
        coll.store._reopen_reader()
        _names(coll, q)
        assert len(counted) == n + 2  # a new reader connection: refreshed once more


def test_plumbing_snapshot_does_not_answer_for_another_name(tmp_path: Path) -> None:
    vectors = syn.clustered(N, DIM, seed=6)
    with semsearch.connect(tmp_path / "n.embed.db") as db:
        coll = syn.open_collection(db, DIM, threshold=1000)
        syn.write(coll, vectors, list(range(N)))
        coll.store.vector_search(coll.name, vectors[0], 10, None)
        (index,) = coll.store._cache.values()
        seen = coll.store._file_version()
        assert seen is not None
        assert index.unchanged(seen, coll.name) is index.state
        assert index.unchanged(seen, "another") is None
        assert index.unchanged((seen[0], seen[1] + 1), coll.name) is None


def test_plumbing_in_memory_store_never_reuses(counted: list[bool]) -> None:
    """In memory the reader is the writer, whose own commits leave data_version unchanged:
    every search refreshes, and sees the write just made."""
    vectors = syn.clustered(N, DIM, seed=7)
    with semsearch.connect(":memory:") as db:
        coll = syn.open_collection(db, DIM, threshold=1000)
        syn.write(coll, vectors, list(range(N)))
        assert coll.store._file_version() is None
        q = vectors[9]
        assert _names(coll, q)[0] == syn.name(9)
        n = len(counted)
        coll.delete([syn.name(9)])
        assert syn.name(9) not in _names(coll, q)
        assert len(counted) == n + 1
