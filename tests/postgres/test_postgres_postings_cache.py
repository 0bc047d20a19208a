"""Unfiltered keyword search on PostgreSQL scores cached term postings in numpy
(stores/postgres/postings_cache.py, bm25_memory.py): the same ranking as the SQL statement,
and never stale after a write from another connection."""

from __future__ import annotations

import math

import numpy as np
import pytest

import semsearch
from semsearch.embedders.fake import FakeEmbedder
from semsearch.filters import parse_filter
from semsearch.schema import Schema
from semsearch.stores.postgres.bm25_memory import score_postings
from semsearch.stores.postgres.postings_cache import PostingsCache, TermPostings, term_postings

_RECORDS = [
    {"id": "a", "title": "Otters", "text": "the otter eats kelp in the kelp forest", "n": 1},
    {"id": "b", "text": "a river otter and a sea otter met near the bridge", "n": 2},
    {"id": "c", "text": "kelp kelp kelp grows fast in cold water", "n": 3},
    {"id": "d", "text": "T-cell counts rise; the T cell response is strong", "n": 4},
    {"id": "e", "text": "stone bridge over the river, long and " + "old " * 30, "n": 5},
    {"id": "f", "text": "otter", "n": 6},
    {"id": "g", "text": "otter", "n": 7},  # ties with f: record id decides
]
_QUERIES = ["otter", "kelp forest", "river otter bridge", "T-cell response", "old stone", "sea"]


def _hits(coll, query: str, where=None) -> list[tuple[str, float, float, float]]:
    found = coll.store.keyword_search(coll.name, query, 4, where)
    return [(h.record_id, h.score, h.evidence, h.coverage) for h in found]


def test_numpy_scores_rank_as_the_sql_statement_does(pg_location) -> None:
    with semsearch.connect(pg_location) as db:
        coll = db.collection(
            "c", schema=Schema.from_types({"title": "str", "n": "int"}), embedder=FakeEmbedder(8)
        )
        coll.upsert(_RECORDS)
        cached = {q: _hits(coll, q) for q in _QUERIES}
        assert coll.store._postings.size > 0  # the cached path answered
        coll.store._postings = None  # the SQL statement answers
        in_sql = {q: _hits(coll, q) for q in _QUERIES}
    # f and g hold the same text: equal scores, so record id orders them
    otter = [h[0] for h in cached["otter"]]
    assert sorted(otter) == ["a", "b", "f", "g"] and otter.index("f") == otter.index("g") - 1
    for query in _QUERIES:
        assert [h[0] for h in cached[query]] == [h[0] for h in in_sql[query]], query
        for mine, theirs in zip(cached[query], in_sql[query], strict=True):
            assert mine[1:] == pytest.approx(theirs[1:], rel=1e-12), query


def test_a_write_from_another_connection_is_seen_by_the_next_search(pg_location) -> None:
    with semsearch.connect(pg_location) as db, semsearch.connect(pg_location) as other:
        coll = db.collection("c", embedder=FakeEmbedder(8))
        coll.upsert([{"id": "a", "text": "otter kelp"}, {"id": "b", "text": "river stone"}])
        assert [h[0] for h in _hits(coll, "otter")] == ["a"]  # "otter" now cached
        writer = other.collection("c", embedder=FakeEmbedder(8))
        writer.upsert([{"id": "z", "text": "otter otter"}])
        assert [h[0] for h in _hits(coll, "otter")] == ["z", "a"]
        writer.upsert([{"id": "z", "text": "kelp"}])  # rewritten: no longer holds "otter"
        assert [h[0] for h in _hits(coll, "otter")] == ["a"]
        writer.delete(["a"])
        assert _hits(coll, "otter") == []


def test_filtered_searches_keep_the_sql_statement(pg_location) -> None:
    with semsearch.connect(pg_location) as db:
        coll = db.collection(
            "c", schema=Schema.from_types({"title": "str", "n": "int"}), embedder=FakeEmbedder(8)
        )
        coll.upsert(_RECORDS)
        where = parse_filter({"n": {"$gte": 2}}, coll.schema)
        assert sorted(h[0] for h in _hits(coll, "otter", where)) == ["b", "f", "g"]
        assert coll.store._postings.size == 0


def _lists() -> list[TermPostings]:
    # parts given directly: rid -> part
    one = TermPostings(np.array([3, 5, 9], np.int32), np.array([1.0, 2.0, 0.5]))
    two = TermPostings(np.array([5, 7, 9], np.int32), np.array([1.5, 0.25, 1.5]))
    return [one, two]


@pytest.mark.parametrize("far", [False, True])
def test_score_postings_sums_weighted_parts_per_record(far: bool) -> None:
    lists = _lists()
    if far:  # a rid span far beyond the postings: the sorted (np.unique) path
        lists = [TermPostings(p.rids.astype(np.int64) * 10**9, p.parts) for p in lists]
    # wi 2 and 4: rid 3: 2*1 = 2; 5: 2*2 + 4*1.5 = 10; 7: 4*0.25 = 1; 9: 2*0.5 + 4*1.5 = 7
    rids, scores, evidence, coverage = score_postings(lists, [2.0, 4.0], [2.0, 0.0], 2)
    scale = 10**9 if far else 1
    got = dict(
        zip((rids // scale).tolist(), zip(scores, evidence, coverage, strict=True), strict=True)
    )
    assert got == {5: (10.0, 4.0, 2.0), 9: (7.0, 1.0, 2.0)}


def test_score_postings_keeps_every_record_tied_with_the_kth() -> None:
    tied = TermPostings(np.array([1, 2, 3], np.int32), np.array([1.0, 1.0, 0.5]))
    rids, scores, _, _ = score_postings([tied], [1.0], [1.0], 1)
    assert sorted(rids.tolist()) == [1, 2] and scores.tolist() == [1.0, 1.0]


def test_term_postings_parts_follow_bm25s_formula() -> None:
    # f = 2, |d| = 10, avgdl 5: r = 2 > 1.5, rel = 1.5 * (1 + ln(2 / 1.5)); norm = 1.2 * (0.25 + 0.75 rel)
    rel = 1.5 * (1 + math.log(2 / 1.5))
    expected = 2 * 2.2 / (2 + 1.2 * (0.25 + 0.75 * rel))
    p = term_postings(np.array([4]), np.array([2.0]), np.array([10]), 5.0)
    assert p.parts[0] == pytest.approx(expected, rel=1e-12) and p.rids.dtype == np.int32


def _posting(n: int) -> TermPostings:
    return TermPostings(np.arange(n, dtype=np.int32), np.ones(n))


def test_postings_cache_drops_least_recently_used_beyond_its_budget() -> None:
    cache = PostingsCache(budget=10)
    assert cache.get("t", "g1", ["a"]) == {}
    cache.put("t", "g1", {"a": _posting(4), "b": _posting(4)})
    assert set(cache.get("t", "g1", ["a"])) == {"a"}  # a is now the most recent
    cache.put("t", "g1", {"c": _posting(4)})  # 12 > 10: b goes
    assert set(cache.get("t", "g1", ["a", "b", "c"])) == {"a", "c"} and cache.size == 8
    cache.put("t", "g1", {"huge": _posting(11)})  # alone over the budget: not kept
    assert "huge" not in cache.get("t", "g1", ["huge"])


def test_postings_cache_forgets_a_table_when_its_generation_moves() -> None:
    cache = PostingsCache()
    cache.get("t", "g1", [])
    cache.get("u", "g1", [])
    cache.put("t", "g1", {"a": _posting(3)})
    cache.put("u", "g1", {"a": _posting(2)})
    assert cache.get("t", "g2", ["a"]) == {}  # a write: t's postings are stale
    cache.put("t", "g1", {"a": _posting(3)})  # read in the old generation: refused
    assert cache.get("t", "g2", ["a"]) == {} and cache.size == 2
    assert set(cache.get("u", "g1", ["a"])) == {"a"}
