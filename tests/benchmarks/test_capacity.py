"""benchmarks/capacity.py: its fit and extrapolation arithmetic on worked examples, and one run
end to end at a tiny size (SQLite only: PostgreSQL and Milvus Lite take a minute to start and
fill; the script's full run covers them)."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks import capacity


def test_fit_recovers_fixed_and_per_chunk_bytes() -> None:
    # 2 MB of fixed cost plus 1,000 bytes a chunk: 22,000,000 at 20k, 102,000,000 at 100k.
    fixed, per = capacity.fit(20_000, 22_000_000, 100_000, 102_000_000)
    assert fixed == pytest.approx(2_000_000)
    assert per == pytest.approx(1_000)
    # 10M chunks: 2,000,000 + 1,000 * 10,000,000.
    assert capacity.linear_at(fixed, per, 10_000_000) == pytest.approx(10_002_000_000)


def test_fit_of_a_shrinking_part_has_a_negative_slope() -> None:
    fixed, per = capacity.fit(1_000, 5_000, 3_000, 4_000)  # 500 bytes less per 1,000 chunks
    assert (fixed, per) == (pytest.approx(5_500), pytest.approx(-0.5))


def test_fit_needs_two_sizes() -> None:
    with pytest.raises(ValueError, match="two different sizes"):
        capacity.fit(1_000, 1.0, 1_000, 2.0)


def test_nlogn_scale() -> None:
    # 10 s at 100k to 1M: 10 x (10^6 ln 10^6) / (10^5 ln 10^5) = 10 x 10 x 6/5 = 120 s.
    assert capacity.nlogn_scale(10.0, 100_000, 1_000_000) == pytest.approx(120.0)
    # 100k to 100M: 1,000 x 8/5 = 1,600 times.
    assert capacity.nlogn_scale(1.0, 100_000, 100_000_000) == pytest.approx(1_600.0)


def test_runs_end_to_end_at_a_tiny_size(tmp_path: Path) -> None:
    args = capacity.parse_args(
        ["--sizes", "1200,600", "--threshold", "300", "--stores", "sqlite", "--queries", "5",
         "--words", "20", "--windows", "3", "--workdir", str(tmp_path), "--no-write"]
    )  # fmt: skip
    assert args.sizes == [600, 1200]
    rows = capacity.measure(args)
    per = {key: capacity.fit(600, by_n[600], 1200, by_n[1200])[1] for key, by_n in rows.items()}
    hnsw = {part: v for (kind, store, part), v in per.items() if part.startswith("HNSW")}
    # Codes are 2 bytes a value in fp16 and 4 in float32, 384 values a chunk: the layouts
    # differ by exactly their codes (graph links and ids are the same in all three), less the
    # default's int64 slot per row in its .ann file (8 bytes: where each row's codes are).
    with_codes = hnsw["HNSW, fp16, codes also in graph"]
    default = hnsw["HNSW, fp16, codes in SQLite (default)"]
    assert with_codes - default == pytest.approx(2 * 384 - 8, abs=4)
    assert hnsw["HNSW, float32 graph"] - with_codes == pytest.approx(2 * 384, abs=4)
    # 3 windows a chunk make a row of 3 x (384 int8 codes + 8 bytes of span) + a 2-byte header
    # = 1,178 bytes plus a 64-character hash: under a third of a 4,096-byte page and over a
    # quarter, so three rows a page (the primary-key index adds under 5%).
    windows = per[("disk", "SQLite file", "windows")]
    assert 4096 / 3 <= windows < 1.05 * 4096 / 3
    # A fresh process that searched has RAM rows for every layout.
    stores = {store for kind, store, _ in rows if kind == "RAM"}
    assert stores == {f"SQLite, {label}" for label in capacity.LAYOUTS}
