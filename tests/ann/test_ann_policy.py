"""ANN options and the exact-versus-graph policy (pure functions), and configure_ann's storage."""

from __future__ import annotations

from pathlib import Path

import pytest

import semsearch
from semsearch.ann.cache import configure_ann
from semsearch.ann.policy import AnnOptions, graph_ef, plan_search
from tests.ann import synthetic as syn

OPTS = AnnOptions(threshold=1000, exact_filter_rows=500, ef_search=64)


def test_unknown_option_is_refused_with_the_valid_names() -> None:
    with pytest.raises(semsearch.InvalidQuery) as info:
        AnnOptions.from_options({"ann": {"efSearch": 10}})
    assert "efSearch" in info.value.message
    assert "ef_search" in (info.value.hint or "")


@pytest.mark.parametrize(
    ("key", "value"), [("M", 2), ("ef_search", 5000), ("storage", "int4"), ("threshold", 0)]
)
def test_out_of_range_option_names_its_valid_range(key: str, value: object) -> None:
    with pytest.raises(semsearch.InvalidQuery) as info:
        AnnOptions.from_options({"ann": {key: value}})
    assert key in info.value.message and info.value.hint


def test_absent_options_are_the_defaults() -> None:
    assert AnnOptions.from_options({}) == AnnOptions()
    assert AnnOptions.from_options({"ann": {"M": 16}}).M == 16


@pytest.mark.parametrize(
    ("allowed", "exact", "has_graph", "plan"),
    [
        (50_000, True, True, "exact"),  # forced
        (50_000, False, False, "exact"),  # no graph yet
        (500, False, True, "exact"),  # selective filter: scan the filtered set
        (501, False, True, "graph"),
        (50_000, False, True, "graph"),
    ],
)
def test_plan_picks_exact_for_forced_small_or_selective_searches(
    allowed: int, exact: bool, has_graph: bool, plan: str
) -> None:
    assert plan_search(allowed, 50_000, exact, has_graph, OPTS) == plan


def test_ef_grows_as_the_filter_narrows_and_is_at_least_k() -> None:
    assert graph_ef(10, 1.0, OPTS) == 64
    assert graph_ef(200, 1.0, OPTS) == 200
    # 64 * 0.1 ** -0.6 = 254.8 -> 255; 64 * 0.5 ** -0.6 = 97.0 -> 98 (ceil of 97.005)
    assert graph_ef(10, 0.1, OPTS) == 255
    assert graph_ef(10, 0.5, OPTS) == 98
    assert graph_ef(10, 1e-6, OPTS) == 4096  # capped
    assert graph_ef(5000, 1e-6, OPTS) == 5000


def test_configure_ann_is_stored_with_the_collection_and_seen_after_reopening(
    tmp_path: Path,
) -> None:
    path = tmp_path / "opts.embed.db"
    with semsearch.connect(path) as db:
        coll = syn.open_collection(db, 8)
        configure_ann(coll, M=16, storage="float16")
        with pytest.raises(semsearch.InvalidQuery):
            configure_ann(coll, M=1000)
    with semsearch.connect(path) as db:
        info = db.store.get_collection("vecs")
        assert info is not None
        assert AnnOptions.from_options(info.options) == AnnOptions(M=16, storage="float16")
