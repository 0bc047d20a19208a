"""MaxScore pruning (bm25/prune.py) returns the exhaustive top k.

The reference is :meth:`Postings.top`, which scores every posting of every term; both run on
posting arrays built from real SciFact text by FTS5's own tokenizer."""

from __future__ import annotations

import numpy as np
import pytest

from semsearch.bm25 import prune as keyword_prune
from semsearch.bm25.postings import Postings, build_postings
from semsearch.bm25.prune import top_pruned
from semsearch.stores.fts5_tokens import PieceTokenizer
from semsearch.stores.sqlite.schema import FTS_TOKENIZER
from tests.unit.test_keyword_sidecar_fake_embedder import queries, scifact


@pytest.fixture(scope="module")
def tokenizer() -> PieceTokenizer:
    return PieceTokenizer(FTS_TOKENIZER)


@pytest.fixture(scope="module")
def postings(tokenizer: PieceTokenizer) -> Postings:
    records = [(i + 1, str(r["title"]), str(r["text"])) for i, r in enumerate(scifact(2000))]
    return build_postings(records, tokenizer)


def ranked(found: tuple[np.ndarray, np.ndarray, int], k: int) -> list[tuple[float, int]]:
    """The top k as (score, position), best first, ties by position."""
    return sorted(zip((-found[1]).tolist(), found[0].tolist(), strict=True))[:k]


def assert_same_top(ours: list[tuple[float, int]], theirs: list[tuple[float, int]]) -> None:
    assert [p for _, p in ours] == [p for _, p in theirs]
    assert [s for s, _ in ours] == pytest.approx([s for s, _ in theirs], rel=1e-12)


@pytest.mark.parametrize("k", [1, 10, 50])
@pytest.mark.parametrize("share", [None, 0.01, 0.1])
def test_pruned_top_k_is_the_exhaustive_top_k(
    postings: Postings, tokenizer: PieceTokenizer, k: int, share: float | None
) -> None:
    n = len(postings.rowids)
    mask = None if share is None else (np.arange(n) % round(1 / share)) == 0
    for text in queries(150):
        terms: list[str | tuple[np.ndarray, np.ndarray]] = list(tokenizer.terms(text))
        exhaustive = postings.top(terms, k, mask)
        pruned = top_pruned(postings, terms, k, mask)
        assert_same_top(ranked(pruned, k), ranked(exhaustive, k))
        if exhaustive[2] < k:
            assert pruned[2] == exhaustive[2]  # fewer than k matches: counted exactly
        else:
            assert pruned[2] >= k


def test_pruning_skips_the_long_lists_of_common_terms(
    postings: Postings, tokenizer: PieceTokenizer, monkeypatch: pytest.MonkeyPatch
) -> None:
    scored: list[str] = []
    add_term = keyword_prune.add_term

    def counting(out, p, term, weight, norm) -> None:  # type: ignore[no-untyped-def]
        scored.append(term)
        add_term(out, p, term, weight, norm)

    monkeypatch.setattr(keyword_prune, "add_term", counting)
    skipped = 0
    for text in queries(150):
        terms = [t for t in tokenizer.terms(text) if t in postings.term_ids]
        scored.clear()
        top_pruned(postings, list(terms), 10, None)
        skipped += len(terms) - len(scored)
        if len(scored) < len(terms):  # what was left unscored are the commonest terms
            left = [t for t in terms if t not in scored]
            assert max(postings.df(t) for t in scored) <= min(postings.df(t) for t in left)
    assert skipped > 150  # more than one whole term list per query skipped, on average


def test_a_phrase_clause_is_scored_first_and_counted(postings: Postings) -> None:
    # a phrase's part (positions, scores) as FTS5 would give it: here two records
    phrase = (np.array([3, 7]), np.array([5.0, 4.0]))
    terms: list[str | tuple[np.ndarray, np.ndarray]] = [phrase, "cell", "the"]
    assert_same_top(ranked(top_pruned(postings, terms, 5, None), 5),
                    ranked(postings.top(terms, 5, None), 5))  # fmt: skip


def test_candidates_that_can_no_longer_reach_the_top_k_are_dropped_between_terms(
    postings: Postings, tokenizer: PieceTokenizer, monkeypatch: pytest.MonkeyPatch
) -> None:
    looked_up: list[int] = []  # candidates looked up, per pruned term, of one query
    add = keyword_prune._add_to_candidates

    def counting(p, term, weight, cand, part) -> None:  # type: ignore[no-untyped-def]
        looked_up.append(len(cand))
        add(p, term, weight, cand, part)

    monkeypatch.setattr(keyword_prune, "_add_to_candidates", counting)
    shrank = 0
    for text in queries(150):
        looked_up.clear()
        top_pruned(postings, list(tokenizer.terms(text)), 10, None)
        assert looked_up == sorted(looked_up, reverse=True)  # a candidate never comes back
        shrank += len(looked_up) > 1 and looked_up[-1] < looked_up[0]
    assert shrank >= 10  # queries whose later terms looked up fewer records than the first
