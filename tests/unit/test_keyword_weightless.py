"""Keyword search leaves weightless words out of the MATCH, with FTS5's own ranking kept.

FTS5's BM25 clamps the IDF of a word found in at least half of the chunks to 1e-6, so the
SQLite store first runs a query without such words. These tests compare its answers with FTS5's
own ``bm25()`` over the full query, run here with plain ``sqlite3`` on the same file (the
oracle), and with rankings worked out by hand from the BM25 formula. The fake embedder only
does the plumbing; no test here is about meaning.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

import semsearch
from semsearch.stores.sqlite import keyword as sqlite_keyword
from semsearch.stores.sqlite.keyword import TermCounts

FILLER = [
    "alpha",
    "beta",
    "gamma",
    "delta",
    "epsilon",
    "zeta",
    "eta",
    "theta",
    "iota",
    "kappa",
    "lambda",
    "mu",
]


def _cid(path: Path, name: str) -> int:
    with sqlite3.connect(path) as conn:
        return int(conn.execute("SELECT id FROM collections WHERE name = ?", (name,)).fetchone()[0])


def fts5_top(path: Path, name: str, match: str, k: int) -> list[tuple[str, float]]:
    """The oracle: FTS5's bm25() over the full OR query, best first, ties by record id."""
    table = f"fts_{_cid(path, name)}"
    with sqlite3.connect(path) as conn:
        rows = conn.execute(
            f"SELECT r.id, -bm25({table}) AS s FROM {table} JOIN chunks k ON k.id = {table}.rowid "
            f"JOIN records r ON r.rowid = k.record_rowid WHERE {table} MATCH ? "
            "ORDER BY s DESC, r.id LIMIT ?",
            (match, k),
        ).fetchall()
    return [(str(r[0]), float(r[1])) for r in rows]


def catalogue(n: int = 40) -> list[dict[str, str]]:
    """``phone``/``for``/``the`` in most records, ``case`` in 24 of 40 (all weightless), and
    ``holder``/``car`` in a few (weighty); record i has i % 12 filler words, so lengths differ."""
    records = []
    for i in range(n):
        words = FILLER[: i % 12]
        if i % 4 != 0:
            words = [*words, "phone", "for", "the"]
        if i < 24:
            words.append("case")
        if i % 7 == 0:
            words.append("holder")
        if i % 4 == 1:
            words.append("car")
        records.append({"id": f"r{i:02d}", "text": " ".join(words) or "empty"})
    return records


@pytest.fixture
def products(db: semsearch.Database, fake_embedder) -> semsearch.Collection:
    coll = db.collection("products", embedder=fake_embedder)
    coll.upsert(catalogue())
    return coll


def test_weightless_words_leave_the_ranking_as_fts5_gives_it(products, db_path) -> None:
    query = "phone holder for the car case"
    full = '"phone" OR "holder" OR "for" OR "the" OR "car" OR "case"'
    for k in (1, 5, 12):
        got = products.store.keyword_search("products", query, k, None)
        expected = fts5_top(db_path, "products", full, k)
        assert [c.record_id for c in got] == [rid for rid, _ in expected]
        # each dropped word adds at most 1e-6 x (k1 + 1) = 2.2e-6 to a score
        assert [c.score for c in got] == pytest.approx([s for _, s in expected], abs=1e-5)


def test_only_the_weighty_words_reach_the_bm25_query(products, db_path) -> None:
    conn = sqlite3.connect(db_path)
    matches: list[str] = []

    def rows(sql: str, params) -> list:
        if "bm25(" in sql:
            matches.append(params[0])
        return conn.execute(sql, params).fetchall()

    counts = TermCounts(("test",))
    cid = _cid(db_path, "products")
    found = sqlite_keyword.keyword_search(
        rows, cid, "porter", "phone holder for the car case", 5, None, counts
    )
    conn.close()
    # phone: 30 of 40 records, for/the: 30, case: 24 -> 2n >= N; holder: 6, car: 10 -> weighty
    assert matches == ['"holder" OR "car"']
    assert len(found) == 5


def test_too_few_weighty_matches_falls_back_to_the_full_query(db, fake_embedder, db_path) -> None:
    coll = db.collection("fruit", embedder=fake_embedder)
    coll.upsert([
        {"id": "a1", "text": "red apple"},
        {"id": "a2", "text": "green apple tart"},
        {"id": "a3", "text": "apple"},
        {"id": "c1", "text": "red car"},
    ])  # fmt: skip
    got = coll.store.keyword_search("fruit", "apple car", 10, None)
    # apple is in 3 of 4 chunks (weightless) and car in 1: every chunk still comes back,
    # the car one first, then the apple ones in FTS5's order
    expected = fts5_top(db_path, "fruit", '"apple" OR "car"', 10)
    assert [c.record_id for c in got] == [rid for rid, _ in expected]
    assert got[0].record_id == "c1" and len(got) == 4


def test_a_write_from_another_handle_recounts_the_words(db, fake_embedder, db_path) -> None:
    coll = db.collection("cars", embedder=fake_embedder)
    coll.upsert(
        [{"id": f"a{i}", "text": f"apple pie number {i}"} for i in range(6)]
        + [
            {"id": "c1", "text": "car"},
            {"id": "c2", "text": "car wash bay"},
            {"id": "c3", "text": "apple car park lot zone"},
            {"id": "x1", "text": "plain words"},
        ]
    )
    # apple: 7 of 10 chunks (weightless); car: 3 of 10. By car alone, shorter is better.
    assert [c.record_id for c in coll.store.keyword_search("cars", "apple car", 2, None)] == [
        "c1",
        "c2",
    ]
    with semsearch.connect(db_path) as other:
        other.collection("cars", embedder=fake_embedder).upsert(
            [{"id": f"f{i:02d}", "text": f"filler text {i}"} for i in range(20)]
        )
    # apple: 7 of 30 chunks now, IDF log(23.5 / 7.5) = 1.14 > 0, so c3's apple counts:
    # c1 = 2.06 x 1.33 = 2.73, c3 = (1.14 + 2.06) x 0.71 = 2.27, c2 = 2.06 x 0.92 = 1.90
    got = coll.store.keyword_search("cars", "apple car", 2, None)
    assert [c.record_id for c in got] == ["c1", "c3"]
    expected = fts5_top(db_path, "cars", '"apple" OR "car"', 2)
    assert [c.score for c in got] == pytest.approx([s for _, s in expected], abs=1e-5)
