"""benchmarks/git_ref.py (the ``--compare REF`` helper of http_load and mcp_latency): the ratio
and verdict arithmetic, the MCP table parser, and a checkout of an old commit (git archive only;
no server, no index)."""

from __future__ import annotations

import pytest

from benchmarks import git_ref, mcp_latency
from benchmarks.report import markdown_table

BEFORE_HTTP_LOAD = "db52819"  # the parent of c15c449, which added benchmarks/http_load.py


def test_ratio_is_current_over_ref_and_na_when_either_is_missing() -> None:
    assert git_ref.ratio(90.0, 100.0) == "0.90"
    assert git_ref.ratio(None, 100.0) == "n/a"
    assert git_ref.ratio(90.0, None) == "n/a"
    assert git_ref.ratio(90.0, 0.0) == "n/a"


def test_verdict_weighs_throughput_up_and_latency_down() -> None:
    assert git_ref.verdict([("0.85", True), ("1.00", False)], 0.1) == "slower"  # QPS fell 15%
    assert git_ref.verdict([("1.00", True), ("1.15", False)], 0.1) == "slower"  # p99 rose 15%
    assert git_ref.verdict([("1.20", True), ("0.95", False)], 0.1) == "faster"
    assert git_ref.verdict([("1.05", True), ("1.05", False)], 0.1) == "same"
    # Faster on one figure and slower on the other reads slower: a regression is never hidden.
    assert git_ref.verdict([("1.30", True), ("1.30", False)], 0.1) == "slower"
    assert git_ref.verdict([("n/a", True), ("1.00", False)], 0.1) == "n/a"


def test_compare_rows_matches_keys_and_reports_na_for_a_missing_or_failed_run() -> None:
    current: list[tuple[git_ref.Key, git_ref.Figures]] = [
        ((1, "keyword"), {"qps": 110.0, "p99": 50.0}),
        ((1, "hybrid"), {"qps": 80.0, "p99": 70.0}),
        ((2, "keyword"), {"qps": 200.0, "p99": 40.0}),
    ]
    ref: dict[git_ref.Key, git_ref.Figures] = {
        (1, "keyword"): {"qps": 100.0, "p99": 50.0},
        (1, "hybrid"): {"qps": None, "p99": None},  # the ref answered errors
    }
    rows = git_ref.compare_rows(current, ref, lambda _: [("qps", True), ("p99", False)], 0.1)
    assert rows == [
        [1, "keyword", "1.10", "1.00", "same"],
        [1, "hybrid", "n/a", "n/a", "n/a"],
        [2, "keyword", "n/a", "n/a", "n/a"],
    ]


def test_mcp_table_parser_reads_the_printed_table() -> None:
    rows = [
        ["start-up to first answer (stats)", 1, "5230", "-"],
        ["get (full note)", 10, "2.1", "3.0"],
    ]
    text = "## MCP\n\nMachine: x.\n\n" + markdown_table(mcp_latency.HEADERS, rows) + "\n"
    assert mcp_latency.parse_table(text) == [[str(c) for c in row] for row in rows]
    ratios = mcp_latency.ratio_table(
        [["get (full note)", 10, "2.0", "3.0"], ["new row", 1, "9", "-"]],
        mcp_latency.parse_table(text),
        0.1,
    )
    assert ratios == [
        ["get (full note)", 10, "0.95", "1.00", "same"],
        ["new row", 1, "n/a", "n/a", "n/a"],
    ]


def test_checkout_of_a_commit_without_the_script_fails_clearly() -> None:
    with git_ref.checkout(BEFORE_HTTP_LOAD) as ref:
        assert (ref.path / "semsearch" / "__init__.py").exists()
        with pytest.raises(git_ref.RefError, match=r"http_load\.py does not exist"):
            ref.require("benchmarks/http_load.py", '"--serve"')
        with pytest.raises(git_ref.RefError, match=r'README\.md has no "--serve"'):
            ref.require("README.md", '"--serve"')
        path = ref.path
    assert not path.exists()


def test_an_unknown_ref_is_refused() -> None:
    with pytest.raises(git_ref.RefError, match="not a commit"):
        git_ref.resolve("no-such-branch-or-sha")
