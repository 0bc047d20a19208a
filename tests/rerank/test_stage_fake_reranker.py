"""The reranking stage through Collection.search, with the fake embedder and fake reranker.

FakeReranker scores a text by the share of the query's distinct words it contains, so the
expected order below is worked out by hand from the texts.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import numpy as np
import pytest

import semsearch
from semsearch.collection import Collection
from semsearch.embedders.fake import FakeEmbedder
from semsearch.errors import InvalidQuery, RerankerUnavailable
from semsearch.rerank.fake import FakeReranker
from semsearch.rerank.stage import retrieval_reason

DOCS = [
    {"id": "a", "text": "compost greens browns lighthouse"},
    {"id": "b", "text": "lighthouse key blue pot"},
    {"id": "c", "text": "kitchen onions lighthouse"},
    {"id": "d", "text": "garden"},
]
QUERY = "lighthouse key pot"  # 3 words: b has all 3, a and c one each, d none


@pytest.fixture
def coll() -> Iterator[Collection]:
    db = semsearch.connect(":memory:")
    collection = db.collection("notes", embedder=FakeEmbedder(), create=True)
    collection.upsert(DOCS)
    yield collection
    db.close()


class Recording:
    """A reranker that records how many texts it was given and answers fixed scores."""

    model_id = "recording"
    max_tokens = 512

    def __init__(self, answer: object = None) -> None:
        self.sizes: list[int] = []
        self.answer = answer

    def rerank(self, query: str, texts: Sequence[str]) -> np.ndarray:
        self.sizes.append(len(texts))
        if isinstance(self.answer, Exception):
            raise self.answer
        if self.answer is not None:
            return np.asarray(self.answer, dtype=np.float32)
        return np.linspace(0.0, 1.0, len(texts), dtype=np.float32)


def test_fake_rerank_orders_by_reranker_score_ties_by_id(coll: Collection) -> None:
    # no floor: "lighthouse", in 3 of the 4 notes, is no evidence on its own (docs/retrieval.md),
    # so the default floor keeps only b; this test is about the reranker's order
    result = coll.search(QUERY, mode="keyword", rerank="fake:", min_score=None)
    assert result.reranked_by == "fake:" and not result.degraded
    assert result.ids == ["b", "a", "c"]  # 1, 1/3, 1/3 (tie broken by id); d has no keyword
    assert [h.score for h in result] == pytest.approx([1.0, 1 / 3, 1 / 3])
    assert [h.components["rerank"].rank for h in result if h.components] == [1, 2, 3]


def test_fake_rerank_keeps_the_modes_own_score_and_rank(coll: Collection) -> None:
    plain = coll.search(QUERY, mode="hybrid")
    reranked = coll.search(QUERY, mode="hybrid", rerank=FakeReranker())
    before = {h.id: (rank, h) for rank, h in enumerate(plain, 1)}
    for hit in reranked:
        assert hit.components is not None
        rank, old = before[hit.id]
        assert hit.components["hybrid"].score == old.score
        assert hit.components["hybrid"].rank == rank
        assert old.components is not None
        assert hit.components["semantic"] == old.components["semantic"]  # each leg kept
        assert hit.components["keyword"] == old.components["keyword"]


def test_fake_rerank_rescores_max_of_limit_and_top_n(coll: Collection) -> None:
    reranker = Recording()
    coll.search(QUERY, limit=1, min_score=None, rerank=reranker, rerank_top_n=3)
    coll.search(QUERY, limit=3, min_score=None, rerank=reranker, rerank_top_n=2)
    one = coll.search(QUERY, limit=1, min_score=None, rerank=reranker)  # default 50 > 4 records
    assert reranker.sizes == [3, 3, 4]
    assert len(one) == 1


def test_fake_reranker_failure_returns_the_unreranked_hits(coll: Collection) -> None:
    plain = coll.search(QUERY, mode="semantic", min_score=None, limit=3)
    result = coll.search(QUERY, mode="semantic", min_score=None, limit=3, rerank="fake:fail")
    assert result.degraded and result.reranked_by is None
    assert result.ids == plain.ids and [h.score for h in result] == [h.score for h in plain]
    assert "fake reranker is switched off" in (result.degraded_reason or "")
    assert retrieval_reason(result) is None  # retrieval itself ran whole


@pytest.mark.parametrize(
    "answer",
    [RuntimeError("boom"), [0.5], [float("nan")] * 4],
    ids=["raises-non-semsearch-error", "wrong-count", "nan"],
)
def test_any_reranker_fault_degrades_never_raises_never_empties(
    coll: Collection, answer: object
) -> None:
    result = coll.search(QUERY, min_score=None, rerank=Recording(answer))
    assert result.degraded and len(result) == 4 and result.reranked_by is None


def test_fake_rerank_failure_on_top_of_a_missing_semantic_leg(coll: Collection) -> None:
    embedder = coll.embedder
    assert isinstance(embedder, FakeEmbedder)
    embedder.fail = True
    result = coll.search(QUERY, mode="hybrid", rerank="fake:fail", min_score=None)
    assert set(result.ids) == {"a", "b", "c"}  # the keyword leg alone: d has no query word
    reason = retrieval_reason(result)
    assert reason is not None and reason.startswith("semantic leg missing")
    assert "reranking with fake:fail failed" in (result.degraded_reason or "")


def test_rerank_arguments_are_checked_before_searching(coll: Collection) -> None:
    with pytest.raises(InvalidQuery, match="rerank_top_n"):
        coll.search(QUERY, rerank="fake:", rerank_top_n=0)
    with pytest.raises(InvalidQuery, match="rerank_top_n"):
        coll.search(QUERY, rerank="fake:", rerank_top_n=True)  # type: ignore[arg-type]
    with pytest.raises(InvalidQuery, match="rerank must be"):
        coll.search(QUERY, rerank=5)  # type: ignore[arg-type]
    with pytest.raises(RerankerUnavailable, match="unknown reranker"):
        coll.search(QUERY, rerank="nope:model")
    with pytest.raises(RerankerUnavailable, match="no model named"):
        coll.search(QUERY, rerank="cohere:")


def test_structured_search_is_not_reranked(coll: Collection) -> None:
    reranker = Recording()
    result = coll.search("", folder="a", rerank=reranker)
    assert result.mode == "structured" and reranker.sizes == [] and result.reranked_by is None
