"""BEIR evaluation on a 50-document slice of the real SciFact, with the real model.

Full-split numbers live in benchmarks/beir.py and docs/benchmarks.md, not here.
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from semsearch.evaluation import (
    index_path,
    load_beir,
    open_index,
    run_eval,
    run_mode,
    score_run,
)
from tests.integration.scifact_slice import write_scifact_slice

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def scifact(tmp_path_factory, minilm):
    root = tmp_path_factory.mktemp("scifact")
    dataset = load_beir(write_scifact_slice(root / "scifact50"))
    coll = open_index(dataset, minilm, root / "cache")
    yield dataset, coll
    coll.store.close()


@pytest.fixture(scope="module")
def runs(scifact) -> dict[str, dict]:
    """Each mode's run of limit-10 searches with the default floor (what eval scores)."""
    dataset, coll = scifact
    return {m: run_mode(coll, dataset.queries, m, 10)[0] for m in ("keyword", "semantic", "hybrid")}


@pytest.fixture(scope="module")
def deep_runs(scifact) -> dict[str, dict]:
    """The second search per query, 100 hits, from which eval scores recall@100."""
    dataset, coll = scifact
    return {m: run_mode(coll, dataset.queries, m, 100)[0] for m in ("keyword", "semantic")}


def test_slice_loads_as_beir(scifact) -> None:
    dataset, coll = scifact
    assert len(dataset.corpus) == 50 == coll.count()
    assert dataset.queries and set(dataset.qrels) == set(dataset.queries)
    assert all(d in dataset.corpus for judged in dataset.qrels.values() for d in judged)


def test_metrics_come_from_pytrec_eval_on_our_run(scifact, runs, deep_runs, monkeypatch) -> None:
    import pytrec_eval

    dataset, coll = scifact
    seen: list[tuple[set[str], dict]] = []
    real = pytrec_eval.RelevanceEvaluator

    class Spy(real):  # type: ignore[misc, valid-type]
        def __init__(self, qrels, measures):
            super().__init__(qrels, measures)
            self.measures = set(measures)

        def evaluate(self, run):
            seen.append((self.measures, run))
            return super().evaluate(run)

    monkeypatch.setattr(pytrec_eval, "RelevanceEvaluator", Spy)
    report = run_eval(dataset, coll, ["keyword", "semantic"])  # limit 10, the default floor
    ours = runs
    full = [run for measures, run in seen if "ndcg_cut.10" in measures]
    # the library saw exactly our runs: the limit-10 one (nDCG, MRR), then the 100-hit one
    # (recall@100), per mode
    assert full == [ours["keyword"], deep_runs["keyword"], ours["semantic"], deep_runs["semantic"]]
    top10 = [run for measures, run in seen if measures == {"recip_rank"}]
    assert all(len(docs) <= 10 for run in top10 for docs in run.values())

    for mode in report.modes:
        per_query = real(dataset.qrels, {"ndcg_cut.10"}).evaluate(ours[mode.mode])
        expected = sum(v["ndcg_cut_10"] for v in per_query.values()) / len(dataset.qrels)
        assert math.isclose(mode.ndcg_at_10, expected, rel_tol=1e-12)
        assert 0 < mode.mrr_at_10 <= 1 and 0 < mode.recall_at_100 <= 1
        assert mode.latency_p50_ms <= mode.latency_p95_ms


def test_hybrid_run_holds_the_union_of_both_legs(scifact) -> None:
    dataset, coll = scifact
    runs = {  # no floor: every record either leg found is fused
        m: run_mode(coll, dataset.queries, m, 100, min_score=None)[0]
        for m in ("keyword", "semantic", "hybrid")
    }
    for qid in dataset.queries:
        legs = set(runs["keyword"][qid]) | set(runs["semantic"][qid])
        assert set(runs["hybrid"][qid]) == legs, qid


def test_run_scores_follow_our_ranking(scifact) -> None:
    dataset, coll = scifact
    qid, text = next(iter(dataset.queries.items()))
    run = run_mode(coll, {qid: text}, "hybrid", 10)[0][qid]
    hits = coll.search(text, mode="hybrid", limit=10).ids
    assert sorted(run, key=lambda d: -run[d]) == hits  # trec_eval cannot re-sort our ties


def test_real_model_beats_chance_on_the_slice(scifact, runs) -> None:
    dataset, _ = scifact
    assert score_run(dataset.qrels, runs["semantic"])["ndcg_cut_10"] > 0.5  # random: about 0.1


def test_second_open_reuses_the_cached_index(scifact) -> None:
    from semsearch.embedders.fake import FakeEmbedder

    dataset, coll = scifact
    path = index_path(dataset, coll.model_id, Path(coll.store.location).parent)
    assert Path(coll.store.location) == path
    assert dataset.corpus_sha256[:16] in path.name and "all-MiniLM-L6-v2" in path.name
    counting = FakeEmbedder(dim=384)
    counting.model_id = coll.model_id  # stands in for the same model: must not be called
    again = open_index(dataset, counting, path.parent)
    try:
        assert counting.texts_embedded == 0 and again.count() == 50
    finally:
        again.store.close()
