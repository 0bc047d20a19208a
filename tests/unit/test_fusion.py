"""Fusion functions: expected scores are worked out by hand from the published formulas.

RRF (Cormack, Clarke and Buettcher 2009): score(d) = sum_i w_i / (k + rank_i(d)), ranks 1-based,
a list without d adds nothing. Convex combination (Bruch et al. 2023): sum_i w_i * norm_i(d)
with min-max (or floor-to-max) normalisation and weights summing to 1.
"""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from semsearch.fusion import Fusion, rrf, weighted

A = [("a", 0.9), ("b", 0.5), ("c", 0.1)]  # semantic-like: cosine scores
B = [("c", 10.0), ("d", 6.0), ("a", 2.0)]  # keyword-like: BM25 scores


def close(got: list[tuple[str, float]], expected: list[tuple[str, float]]) -> None:
    assert [i for i, _ in got] == [i for i, _ in expected]
    for (_, g), (_, e) in zip(got, expected, strict=True):
        assert math.isclose(g, e, rel_tol=1e-12), (got, expected)


# -- RRF --------------------------------------------------------------------------------------


def test_rrf_uses_one_based_ranks() -> None:
    close(rrf([[("x", 0.3)]]), [("x", 1 / 61)])  # rank 1 with k=60 -> 1/61, not 1/60
    close(rrf([[("x", 5.0), ("y", 4.0)]], k=1), [("x", 1 / 2), ("y", 1 / 3)])


def test_rrf_sums_reciprocal_ranks_and_absent_documents_add_nothing() -> None:
    # a: ranks 1 and 3; c: ranks 3 and 1; b: only in A at rank 2; d: only in B at rank 2.
    expected = [
        ("a", 1 / 61 + 1 / 63),
        ("c", 1 / 63 + 1 / 61),
        ("b", 1 / 62),
        ("d", 1 / 62),
    ]
    close(rrf([A, B]), expected)  # a/c and b/d tie exactly: ids break the ties


def test_rrf_ignores_the_lists_own_scores() -> None:
    rescaled = [(i, s * 1000 - 7) for i, s in B]
    assert rrf([A, B]) == rrf([A, rescaled])


def test_rrf_weights() -> None:
    close(
        rrf([A, B], weights=[2.0, 1.0]),
        [("a", 2 / 61 + 1 / 63), ("c", 2 / 63 + 1 / 61), ("b", 2 / 62), ("d", 1 / 62)],
    )


def test_rrf_weight_zero_switches_a_list_off() -> None:
    close(rrf([A, B], weights=[1, 0]), [("a", 1 / 61), ("b", 1 / 62), ("c", 1 / 63)])
    close(rrf([A, B], weights=[0, 1]), [("c", 1 / 61), ("d", 1 / 62), ("a", 1 / 63)])


def test_rrf_with_an_empty_list_keeps_the_other_order() -> None:
    close(rrf([[], B]), [("c", 1 / 61), ("d", 1 / 62), ("a", 1 / 63)])
    assert rrf([[], []]) == []


def test_rrf_ties_break_by_id() -> None:
    close(rrf([[("b", 1.0)], [("a", 1.0)]]), [("a", 1 / 61), ("b", 1 / 61)])
    both = 1 / 61 + 1 / 62  # y is 1st in one list and 2nd in the other, and so is x
    close(rrf([[("y", 1), ("x", 0)], [("x", 1), ("y", 0)]]), [("x", both), ("y", both)])


def test_rrf_duplicate_id_keeps_its_best_rank() -> None:
    close(rrf([[("a", 3), ("b", 2), ("a", 1)]]), [("a", 1 / 61), ("b", 1 / 62)])


@pytest.mark.parametrize(
    "kwargs", [{"k": 0}, {"k": -1}, {"weights": [1, -1]}, {"weights": [1, 1, 1]}]
)
def test_rrf_rejects_bad_parameters(kwargs: dict) -> None:
    with pytest.raises(ValueError):
        rrf([A, B], **kwargs)


# -- convex combination -----------------------------------------------------------------------


def test_weighted_min_max_equal_weights() -> None:
    # min-max: A -> a 1, b .5, c 0; B -> c 1, d .5, a 0. Each list weighs 1/2.
    close(weighted([A, B]), [("a", 0.5), ("c", 0.5), ("b", 0.25), ("d", 0.25)])


def test_weighted_uneven_weights() -> None:
    # a = .75*1 + .25*0; b = .75*.5; c = .75*0 + .25*1; d = .25*.5
    close(
        weighted([A, B], weights=[3, 1]),
        [("a", 0.75), ("b", 0.375), ("c", 0.25), ("d", 0.125)],
    )


def test_weighted_weight_one_and_zero_reproduce_each_list() -> None:
    close(weighted([A, B], weights=[1, 0]), [("a", 1.0), ("b", 0.5), ("c", 0.0)])
    close(weighted([A, B], weights=[0, 1]), [("c", 1.0), ("d", 0.5), ("a", 0.0)])


def test_weighted_floors_replace_the_observed_minimum() -> None:
    # A with floor -1: a (0.9+1)/1.9 = 1, b 1.5/1.9, c 1.1/1.9. B with floor 0: c 1, d .6, a .2.
    expected = {
        "a": 0.5 * 1.0 + 0.5 * 0.2,
        "b": 0.5 * 1.5 / 1.9,
        "c": 0.5 * 1.1 / 1.9 + 0.5 * 1.0,
        "d": 0.5 * 0.6,
    }
    got = weighted([A, B], floors=[-1.0, 0.0])
    close(got, sorted(expected.items(), key=lambda kv: -kv[1]))
    assert [i for i, _ in got] == ["c", "a", "b", "d"]


def test_weighted_equal_scores_normalise_to_one_and_tie_by_id() -> None:
    close(weighted([[("z", 0.4), ("y", 0.4)]]), [("y", 1.0), ("z", 1.0)])


def test_weighted_empty_list_leaves_the_other() -> None:
    close(weighted([[], B]), [("c", 1.0), ("d", 0.5), ("a", 0.0)])


# Hand-worked: cosines a 1.0, b 0.5 (floor -1: norms 1.0, 0.75); BM25 c 4.0, a 2.0 (floor 0:
# norms 1.0, 0.5); weights 0.75 and 0.25.
COS = [("a", 1.0), ("b", 0.5)]
BM25 = [("c", 4.0), ("a", 2.0)]
TMIN = {"weights": [0.75, 0.25], "floors": [-1.0, 0.0]}


def test_weighted_absent_documents_get_zero_from_a_complete_list() -> None:
    # a: .75*1 + .25*.5 = .875; b: .75*.75 + 0 = .5625; c: 0 + .25*1 = .25
    close(weighted([COS, BM25], **TMIN), [("a", 0.875), ("b", 0.5625), ("c", 0.25)])
    close(weighted([COS, BM25], **TMIN, truncated=[False, False]), weighted([COS, BM25], **TMIN))


def test_weighted_absent_documents_get_a_truncated_lists_lowest_score() -> None:
    # both cut: b gets BM25's lowest norm .5 (.5625 + .125 = .6875), c gets the cosine list's
    # lowest norm .75 (.5625 + .25 = .8125), so c overtakes b
    close(
        weighted([COS, BM25], **TMIN, truncated=[True, True]),
        [("a", 0.875), ("c", 0.8125), ("b", 0.6875)],
    )
    # only the cosine list cut: c still gets .75 from it, b gets 0 from the complete BM25 list
    close(
        weighted([COS, BM25], **TMIN, truncated=[True, False]),
        [("a", 0.875), ("c", 0.8125), ("b", 0.5625)],
    )


@pytest.mark.parametrize(
    "kwargs",
    [
        {"weights": [0, 0]},
        {"weights": [-1, 2]},
        {"weights": [1]},
        {"floors": [0.0]},
        {"truncated": [True]},
    ],
)
def test_weighted_rejects_bad_parameters(kwargs: dict) -> None:
    with pytest.raises(ValueError):
        weighted([A, B], **kwargs)


@st.composite
def ranked_lists(draw: st.DrawFn) -> list[tuple[str, float]]:
    ids = draw(st.lists(st.text("abcdefgh", min_size=1, max_size=3), unique=True, max_size=30))
    scores = draw(st.lists(st.floats(-1, 1, allow_nan=False), min_size=len(ids), max_size=len(ids)))
    return sorted(zip(ids, scores, strict=True), key=lambda p: (-p[1], p[0]))


@given(ranked_lists(), ranked_lists())
def test_weight_one_reproduces_the_vector_order_exactly(vec: list, kw: list) -> None:
    order = [i for i, _ in vec]
    assert [i for i, _ in Fusion("weighted", weights=(1.0, 0.0)).fuse(vec, kw)] == (
        order if vec else [i for i, _ in kw]  # an empty leg hands over to the other
    )
    assert [i for i, _ in Fusion("weighted", weights=(0.0, 1.0)).fuse(vec, kw)] == (
        [i for i, _ in kw] if kw else order
    )


# -- Fusion (what hybrid search calls) ---------------------------------------------------------


def test_fusion_rrf_default_is_textbook_rrf() -> None:
    assert Fusion().fuse(A, B) == rrf([A, B], k=60)


def test_fusion_with_an_empty_leg_returns_the_other_whatever_the_weights() -> None:
    close(Fusion("rrf", weights=(1, 0)).fuse([], B), [("c", 1 / 61), ("d", 1 / 62), ("a", 1 / 63)])
    close(Fusion("weighted", weights=(0, 1)).fuse(A, []), [("a", 1.0), ("b", 0.5), ("c", 0.0)])


def test_fusion_absent_lowest_applies_only_to_a_truncated_leg() -> None:
    lowest = Fusion("weighted", (0.75, 0.25), floors=(-1.0, 0.0), absent="lowest")
    floor = Fusion("weighted", (0.75, 0.25), floors=(-1.0, 0.0))
    close(
        lowest.fuse(COS, BM25, truncated=(True, True)), [("a", 0.875), ("c", 0.8125), ("b", 0.6875)]
    )
    close(lowest.fuse(COS, BM25), [("a", 0.875), ("b", 0.5625), ("c", 0.25)])  # complete legs
    close(floor.fuse(COS, BM25, truncated=(True, True)), [("a", 0.875), ("b", 0.5625), ("c", 0.25)])


@pytest.mark.parametrize(
    "kwargs",
    [
        {"method": "borda"},
        {"weights": (0.0, 0.0)},
        {"weights": (-0.1, 1.0)},
        {"k": 0},
        {"absent": "zero"},
        {"method": "rrf", "absent": "lowest"},
    ],
)
def test_fusion_rejects_bad_configuration(kwargs: dict) -> None:
    with pytest.raises(ValueError):
        Fusion(**kwargs)
