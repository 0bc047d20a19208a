"""Hybrid search plumbing on a real SQLite file with the fake embedder: fusion wiring,
components, degraded legs. What the fusion is worth is measured in benchmarks/beir.py."""

from __future__ import annotations

import math

import pytest

import semsearch
from semsearch import search
from semsearch.fusion import Fusion

DOCS = {
    "p1": "solar panels on the roof of the barn",
    "p2": "wind turbines near the coast",
    "p3": "the roof needs new tiles before winter",
    "p4": "batteries store energy from solar panels",
}


@pytest.fixture
def coll(db: semsearch.Database, fake_embedder) -> semsearch.Collection:
    c = db.collection("energy", embedder=fake_embedder)
    c.upsert([{"id": i, "text": t} for i, t in DOCS.items()])
    return c


def legs(coll: semsearch.Collection, query: str) -> dict[str, list[tuple[str, float]]]:
    return {
        m: [(h.id, h.score) for h in coll.search(query, mode=m, limit=10, min_score=None)]
        for m in ("semantic", "keyword")
    }


def calibrated(cos: float, evidence: float, confident: bool, threshold: float = 0.30) -> float:
    """The calibrated hybrid score written out (docs/search-modes.md): a quarter of a sigmoid
    of the cosine around the threshold (scale 0.2), a quarter of x / (x + 0.5), plus a half
    for a confident match. 0.30 is the fake embedder's threshold."""
    semantic = 1 / (1 + math.exp(-(cos - threshold) / 0.2))
    return 0.25 * semantic + 0.25 * evidence / (evidence + 0.5) + (0.5 if confident else 0.0)


def test_hybrid_is_the_calibrated_fusion_of_both_legs_with_components(coll) -> None:
    both = legs(coll, "solar roof")
    evidence = {
        h.record_id: (h.evidence, h.coverage)
        for h in coll.store.keyword_search(coll.name, "solar roof", 10, None)
    }
    # neither leg is cut (4 records, depth 20): a record a leg lacks gets cosine -1 or
    # evidence 0 from it
    cos = dict(both["semantic"])
    expected = {}
    for doc in {*cos, *evidence}:
        x, coverage = evidence.get(doc, (0.0, 0.0))
        c = cos.get(doc, -1.0)
        expected[doc] = calibrated(c, x, c >= 0.30 or coverage >= 1.0)
    result = coll.search("solar roof", mode="hybrid", limit=10, min_score=None)
    assert result.ids == sorted(expected, key=lambda d: (-expected[d], d))
    assert [h.score for h in result] == pytest.approx([expected[d] for d in result.ids], rel=1e-9)
    assert not result.degraded and result.mode == "hybrid"
    for hit in result:
        assert hit.components is not None
        for name, leg in both.items():
            ranks = {doc: (rank, score) for rank, (doc, score) in enumerate(leg, 1)}
            got = hit.components[name]
            rank, score = ranks.get(hit.id, (None, None))
            assert got.rank == rank
            assert got.score == (None if score is None else pytest.approx(score, rel=1e-12))
    # the default floor keeps the confident hits: those scoring 0.5 or more
    floored = coll.search("solar roof", mode="hybrid", limit=10)
    assert floored.ids == [d for d in result.ids if expected[d] >= 0.5]
    assert floored.min_score == 0.5


def test_hybrid_contains_every_document_either_leg_found(coll) -> None:
    both = legs(coll, "solar roof")
    result = coll.search("solar roof", mode="hybrid", limit=10, min_score=None)
    assert set(result.ids) == {d for leg in both.values() for d, _ in leg}
    assert set(dict(both["keyword"])) == {"p1", "p3", "p4"}  # p2 has neither word


def test_request_fusion_overrides_the_default(coll) -> None:
    from semsearch.search import PathScope, SearchRequest, run_search

    only_keyword = Fusion("weighted", weights=(0.0, 1.0))
    req = SearchRequest(
        "solar roof", "hybrid", 10, None, PathScope(), None, None, fusion=only_keyword
    )
    result = run_search(coll, req)
    assert result.ids == [d for d, _ in legs(coll, "solar roof")["keyword"]]


def test_no_keyword_match_returns_the_semantic_leg_degraded(coll) -> None:
    result = coll.search("zebra", mode="hybrid", limit=10, min_score=None)
    semantic = coll.search("zebra", mode="semantic", limit=10, min_score=None)
    assert result.degraded and "keyword leg missing" in (result.degraded_reason or "")
    assert result.ids == semantic.ids
    assert all(h.components and h.components["keyword"].rank is None for h in result)


def test_no_vectors_yet_returns_the_keyword_leg_degraded(db, fake_embedder) -> None:
    c = db.collection("pending", embedder=fake_embedder)
    c.upsert([{"id": i, "text": t} for i, t in DOCS.items()], embed=False)
    result = c.search("solar roof", mode="hybrid", limit=10, min_score=None)
    keyword = c.search("solar roof", mode="keyword", limit=10)
    assert result.degraded and "semantic leg missing" in (result.degraded_reason or "")
    assert result.ids == keyword.ids


def test_embedder_down_returns_the_keyword_leg_degraded(db) -> None:
    from semsearch.embedders.fake import FakeEmbedder

    emb = FakeEmbedder()
    c = db.collection("down", embedder=emb)
    c.upsert([{"id": i, "text": t} for i, t in DOCS.items()])
    emb.fail = True
    result = c.search("solar roof", mode="hybrid", limit=10, min_score=None)
    assert result.degraded and "semantic leg missing" in (result.degraded_reason or "")
    assert result.ids == c.search("solar roof", mode="keyword", limit=10).ids
    assert not result.hyde


def test_a_record_missing_from_a_cut_leg_gets_its_lowest_values_fake_embedder(
    coll, monkeypatch
) -> None:
    # both legs cut at 2 of their 3-4 candidates: a record one leg lacks gets that leg's lowest
    # value (cosine; keyword evidence and coverage), as it scores at most that there
    monkeypatch.setattr(search, "HYBRID_DEPTH", 2)
    sem = {
        h.id: h.score for h in coll.search("solar roof", mode="semantic", limit=2, min_score=None)
    }
    kw = {
        h.record_id: (h.evidence, h.coverage)
        for h in coll.store.keyword_search(coll.name, "solar roof", 2, None)
    }
    assert len(sem) == len(kw) == 2 and set(sem) != set(kw)  # something is missing somewhere
    low_cos = min(sem.values())
    low_x, low_cov = min(x for x, _ in kw.values()), min(v for _, v in kw.values())
    expected = {}
    for d in {*sem, *kw}:
        c = sem.get(d, low_cos)
        x, cov = kw.get(d, (low_x, low_cov))
        expected[d] = calibrated(c, x, c >= 0.30 or cov >= 1.0)
    result = coll.search("solar roof", mode="hybrid", limit=2, min_score=None)
    assert result.ids == sorted(expected, key=lambda d: (-expected[d], d))[:2]
    assert [h.score for h in result] == pytest.approx([expected[d] for d in result.ids], rel=1e-9)
    for hit in result:  # components still say which leg returned the record
        assert (hit.components["keyword"].rank is None) == (hit.id not in kw)
        assert (hit.components["semantic"].rank is None) == (hit.id not in sem)


def test_hybrid_semantic_leg_is_semantic_modes_rescored_leg_fake_embedder(
    coll, monkeypatch
) -> None:
    depths: list[int] = []
    rescore = search.rescore

    def spy(store, name, query, ranked, depth, also=()):  # type: ignore[no-untyped-def]
        depths.append(depth)
        return rescore(store, name, query, ranked, depth, also)

    monkeypatch.setattr(search, "rescore", spy)
    coll.search("solar roof", mode="hybrid", limit=5)
    coll.search("solar roof", mode="hybrid", limit=80)
    coll.search("solar roof", mode="semantic", limit=5)
    # every leg rescores max(limit, RESCORE_DEPTH) records with their windows; hybrid keeps the
    # best max(limit, HYBRID_DEPTH) of them for fusion
    assert depths == [search.RESCORE_DEPTH, 80, search.RESCORE_DEPTH]
    assert (search.HYBRID_DEPTH, search.RESCORE_DEPTH) == (20, 50)  # the measured defaults
