"""Hybrid search plumbing on a real SQLite file with the fake embedder: fusion wiring,
components, degraded legs. What the fusion is worth is measured in benchmarks/beir.py."""

from __future__ import annotations

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


def test_hybrid_is_the_default_fusion_of_both_legs_with_components(coll) -> None:
    both = legs(coll, "solar roof")
    expected = search.HYBRID_FUSION.fuse(both["semantic"], both["keyword"])
    result = coll.search("solar roof", mode="hybrid", limit=10)
    # Scores to 1e-12, not bit for bit: the first keyword search is FTS5's and starts the
    # keyword sidecar's background build, which may answer the next one; the two sum BM25's
    # terms in different orders (rarest first in the sidecar), so the last bit can differ.
    assert [h.id for h in result] == [d for d, _ in expected]
    assert [h.score for h in result] == pytest.approx([s for _, s in expected], rel=1e-12)
    assert not result.degraded and result.mode == "hybrid"
    for hit in result:
        assert hit.components is not None
        for name, leg in both.items():
            ranks = {doc: (rank, score) for rank, (doc, score) in enumerate(leg, 1)}
            got = hit.components[name]
            rank, score = ranks.get(hit.id, (None, None))
            assert got.rank == rank
            assert got.score == (None if score is None else pytest.approx(score, rel=1e-12))


def test_hybrid_contains_every_document_either_leg_found(coll) -> None:
    both = legs(coll, "solar roof")
    result = coll.search("solar roof", mode="hybrid", limit=10)
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
    result = coll.search("zebra", mode="hybrid", limit=10)
    semantic = coll.search("zebra", mode="semantic", limit=10, min_score=None)
    assert result.degraded and "keyword leg missing" in (result.degraded_reason or "")
    assert result.ids == semantic.ids
    assert all(h.components and h.components["keyword"].rank is None for h in result)


def test_no_vectors_yet_returns_the_keyword_leg_degraded(db, fake_embedder) -> None:
    c = db.collection("pending", embedder=fake_embedder)
    c.upsert([{"id": i, "text": t} for i, t in DOCS.items()], embed=False)
    result = c.search("solar roof", mode="hybrid", limit=10)
    keyword = c.search("solar roof", mode="keyword", limit=10)
    assert result.degraded and "semantic leg missing" in (result.degraded_reason or "")
    assert result.ids == keyword.ids


def test_embedder_down_returns_the_keyword_leg_degraded(db) -> None:
    from semsearch.embedders.fake import FakeEmbedder

    emb = FakeEmbedder()
    c = db.collection("down", embedder=emb)
    c.upsert([{"id": i, "text": t} for i, t in DOCS.items()])
    emb.fail = True
    result = c.search("solar roof", mode="hybrid", limit=10)
    assert result.degraded and "semantic leg missing" in (result.degraded_reason or "")
    assert result.ids == c.search("solar roof", mode="keyword", limit=10).ids
    assert not result.hyde


def test_a_record_missing_from_a_cut_leg_gets_its_lowest_score_fake_embedder(
    coll, monkeypatch
) -> None:
    # both legs cut at 2 of their 3-4 candidates: a record one leg lacks gets that leg's
    # lowest normalised score (cosine from -1, BM25 from 0, each to the leg's best)
    monkeypatch.setattr(search, "HYBRID_DEPTH", 2)
    cut = {
        m: {h.id: h.score for h in coll.search("solar roof", mode=m, limit=2, min_score=None)}
        for m in ("semantic", "keyword")
    }
    sem, kw = cut["semantic"], cut["keyword"]
    assert len(sem) == len(kw) == 2 and set(sem) != set(kw)  # something is missing somewhere
    sem_best, kw_best = max(sem.values()), max(kw.values())
    sem_norm = {d: (s + 1) / (sem_best + 1) for d, s in sem.items()}
    kw_norm = {d: s / kw_best for d, s in kw.items()}
    expected = {
        d: 0.75 * sem_norm.get(d, min(sem_norm.values()))
        + 0.25 * kw_norm.get(d, min(kw_norm.values()))
        for d in {*sem, *kw}
    }
    result = coll.search("solar roof", mode="hybrid", limit=2)  # legs cut at max(limit, depth)
    assert result.ids == sorted(expected, key=lambda d: (-expected[d], d))[:2]
    assert [h.score for h in result] == pytest.approx([expected[d] for d in result.ids], rel=1e-9)
    for hit in result:  # components still say which leg returned the record
        assert (hit.components["keyword"].rank is None) == (hit.id not in kw)
        assert (hit.components["semantic"].rank is None) == (hit.id not in sem)


def test_hybrid_semantic_leg_rescores_its_own_depth_of_records_fake_embedder(
    coll, monkeypatch
) -> None:
    depths: list[int] = []
    rescore = search.rescore

    def spy(store, name, query, ranked, depth, also=()):  # type: ignore[no-untyped-def]
        depths.append(depth)
        return rescore(store, name, query, ranked, depth, also)

    monkeypatch.setattr(search, "rescore", spy)
    coll.search("solar roof", mode="hybrid", limit=5)
    coll.search("solar roof", mode="hybrid", limit=40)
    coll.search("solar roof", mode="semantic", limit=5)
    # hybrid: the leg's records, max(limit, HYBRID_DEPTH); semantic: max(limit, RESCORE_DEPTH)
    assert depths == [search.HYBRID_DEPTH, 40, search.RESCORE_DEPTH]
    assert (search.HYBRID_DEPTH, search.RESCORE_DEPTH) == (20, 50)  # the measured defaults
