"""Side-by-side ANN benchmark: semsearch's SQLite store (exact and HNSW) against chromadb,
LanceDB, sqlite-vec, Milvus Lite, raw faiss HNSW and a numpy scan, on the same vectors.

Usage:
    .venv/bin/pip install -e '.[bench]'              # the peers; never needed by tests
    .venv/bin/python benchmarks/ann.py                # 100k clustered + SciFact, writes docs
    .venv/bin/python benchmarks/ann.py --million      # adds 1,000,000 x 384 (slow to build)
    .venv/bin/python benchmarks/ann.py --n 20000 --systems numpy,faiss --no-write
    .venv/bin/python benchmarks/ann.py --systems faiss,semsearch-hnsw,semsearch-hnsw-int8

Under each table, one line per semsearch HNSW row gives its disk, peak RSS and build time as
multiples of raw faiss HNSW's in the same run (issue 23's targets).

Data (benchmarks/ann_data.py): clustered 384-d unit vectors, and the real all-MiniLM-L6-v2
embeddings of the SciFact corpus chunks with its real queries. Every row has ``bucket`` uniform
in 0..99, so ``bucket < 1`` keeps 1% and ``bucket < 10`` keeps 10%.

Method: each system runs in its own process (so its peak RSS is its own; the input arrays,
about 150 MB at 100k, are part of every process). Build time covers storing the vectors and
building the index. For systems with a search knob (HNSW ``ef``), ``ef`` is raised through
16..512 until recall@10 against the exact numpy top-10 reaches 0.95; latency is single-query,
sequential, warm (p50/p99 over the queries; QPS = 1 / mean latency). Filtered rows reuse that
``ef`` and compare with the exact filtered top-10. A system that cannot install or fails is
listed with its error.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks import ann_data  # noqa: E402
from benchmarks.report import machine_info, markdown_table, percentile, write_section  # noqa: E402

K = 10
TARGET = 0.95
SECTION = "ann"
ORDER = [
    "numpy", "semsearch-exact", "semsearch-hnsw", "faiss", "chromadb", "lancedb", "sqlite-vec",
    "milvus-lite",
]  # fmt: skip
# also runnable, not in the default set: "semsearch-hnsw-int8" (an SQ8 graph, rescored) and
# "semsearch-hnsw-first-search" (no graph grown while writing: the first search builds it)
SLOW = {"milvus-lite": 50, "sqlite-vec": 50, "lancedb": 100}  # query caps for slow scanners


def dataset(name: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(x float32[n, 384], queries float32[m, 384], bucket int64[n]) for a dataset name."""
    if name == "scifact":
        x, q = ann_data.scifact()
        q = q[:300]
    else:
        n = int(name.split("-")[1])
        path = ann_data.CACHE / f"clustered_{n}.npz"
        if path.exists():
            data = np.load(path)
            x, q = data["x"], data["q"]
        else:
            x, q = ann_data.clustered(n, 300)
            ann_data.CACHE.mkdir(parents=True, exist_ok=True)
            np.savez(path, x=x, q=q)
    buckets = np.random.default_rng(1).integers(0, 100, x.shape[0])
    return x, q, buckets


def exact_top(x: np.ndarray, q: np.ndarray, rows: np.ndarray | None) -> list[set[int]]:
    """The exact top-K rows per query (among ``rows`` if given), as sets."""
    sub = x if rows is None else x[rows]
    out = []
    for start in range(0, q.shape[0], 50):
        s = q[start : start + 50] @ sub.T
        top = np.argpartition(-s, K, axis=1)[:, :K]
        out += [set((top[i] if rows is None else rows[top[i]]).tolist()) for i in range(len(top))]
    return out


def timed(system: Any, q: np.ndarray, truth: list[set[int]], lt: int | None) -> dict[str, float]:
    lat, recall = [], []
    for i in range(q.shape[0]):
        started = time.perf_counter()
        got = system.search(q[i], K, lt)
        lat.append(time.perf_counter() - started)
        recall.append(len(set(got) & truth[i]) / max(1, min(K, len(truth[i]))))
    return {
        "p50": percentile(lat, 50) * 1e3,
        "p99": percentile(lat, 99) * 1e3,
        "qps": 1.0 / float(np.mean(lat)),
        "recall": float(np.mean(recall)),
    }


def folder_bytes(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())


def run_child(system_key: str, data_name: str, queries: int) -> dict[str, Any]:
    """Build one system on one dataset and measure it; runs in its own process."""
    from benchmarks.ann_peers import SYSTEMS

    x, q, buckets = dataset(data_name)
    q = q[: min(queries, SLOW.get(system_key, queries))]
    system = SYSTEMS[system_key]()
    out: dict[str, Any] = {"system": system.name}
    with tempfile.TemporaryDirectory(prefix="ann-bench-") as tmp:
        folder = Path(tmp)
        started = time.perf_counter()
        system.build(x, buckets, folder)
        out["build_s"] = time.perf_counter() - started
        out["disk_mb"] = folder_bytes(folder) / 1e6
        truth = exact_top(x, q, None)
        for ef in system.efs:
            system.set_ef(ef)
            system.search(q[0], K, None)  # warm
            out.update(timed(system, q, truth, None), ef=ef)
            if out["recall"] >= TARGET:
                break
        for lt in (1, 10):
            rows = np.flatnonzero(buckets < lt)
            truth = exact_top(x, q[:100], rows)
            m = timed(system, q[:100], truth, lt)
            out[f"f{lt}_p50"], out[f"f{lt}_recall"] = m["p50"], m["recall"]
            if hasattr(system, "distinct_filters"):  # a new filter per query: no cached set
                system.distinct_filters = True
                cold = timed(system, q[:50], truth[:50], lt)
                system.distinct_filters = False
                out[f"f{lt}_cold_p50"] = cold["p50"]
        if hasattr(system, "reopen_first_result"):
            out["open_first_s"] = system.reopen_first_result(q[1])
    out["rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return out


def run_parent(data_names: list[str], systems: list[str], queries: int, timeout: int) -> dict:
    results: dict[str, list[dict[str, Any]]] = {}
    for name in data_names:
        x, q, _ = dataset(name)  # prepares the cache once, outside the timed children
        print(f"\n== {name}: {x.shape[0]:,} x {x.shape[1]}, {min(queries, len(q))} queries ==")
        results[name] = []
        for key in systems:
            row = _spawn(key, name, queries, timeout)
            results[name].append(row)
            print(json.dumps(row), flush=True)
    return results


def _spawn(key: str, name: str, queries: int, timeout: int) -> dict[str, Any]:
    cmd = [sys.executable, __file__, "--child", key, "--dataset", name, "--queries", str(queries)]
    # One BLAS thread: a single-query matrix-vector product gains nothing from more, and on a
    # loaded machine OpenBLAS thread hand-offs dominate its latency (faiss builds keep OpenMP).
    env = dict(os.environ, HF_HUB_OFFLINE="1", TOKENIZERS_PARALLELISM="false")
    env.update(OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1")
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
    except subprocess.TimeoutExpired:
        return {"system": key, "error": f"did not finish within {timeout} s"}
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
    if proc.returncode != 0 or not lines:
        err = [ln for ln in proc.stderr.strip().splitlines() if ln.strip()]
        return {"system": key, "error": (err[-1] if err else f"exit {proc.returncode}")[:200]}
    return dict(json.loads(lines[-1]))


def _fmt(v: Any, digits: int = 1) -> str:
    return "—" if v is None else f"{v:,.{digits}f}" if isinstance(v, float) else str(v)


def _cold(r: dict[str, Any]) -> str:
    if r.get("f1_cold_p50") is None:
        return "—"
    return f"{r['f1_cold_p50']:,.2f} / {r['f10_cold_p50']:,.2f}"


def against_faiss(rows: list[dict[str, Any]]) -> str:
    """One line per semsearch HNSW row: its disk, peak RSS and build time as multiples of raw
    faiss HNSW's in the same run (issue 23's targets: <= 1.0x, 1.1x and 1.1x), or ""."""
    raw = next((r for r in rows if r["system"].startswith("raw faiss") and "error" not in r), None)
    if raw is None:
        return ""
    lines = []
    for r in rows:
        if "HNSW" in r["system"] and r["system"].startswith("semsearch") and "error" not in r:
            lines.append(
                f"- {r['system']} / raw faiss HNSW: disk {r['disk_mb'] / raw['disk_mb']:.2f}x, "
                f"peak RSS {r['rss_mb'] / raw['rss_mb']:.2f}x, "
                f"build {r['build_s'] / raw['build_s']:.2f}x"
            )
    return "\n".join(lines)


def table(rows: list[dict[str, Any]]) -> str:
    headers = [
        "system", "build s", "disk MB", "peak RSS MB", "ef", "recall@10", "p50 ms", "p99 ms",
        "QPS", "1% p50 ms", "1% recall", "10% p50 ms", "10% recall", "1% / 10% new filter p50 ms",
        "open→first s",
    ]  # fmt: skip
    body = []
    for r in rows:
        if "error" in r:
            body.append([r["system"], f"not run: {r['error']}"] + [""] * (len(headers) - 2))
            continue
        body.append([
            r["system"], _fmt(r["build_s"]), _fmt(r["disk_mb"]), _fmt(r["rss_mb"], 0),
            _fmt(r["ef"]), _fmt(r["recall"], 3), _fmt(r["p50"], 2), _fmt(r["p99"], 2),
            _fmt(r["qps"], 0), _fmt(r.get("f1_p50"), 2), _fmt(r.get("f1_recall"), 3),
            _fmt(r.get("f10_p50"), 2), _fmt(r.get("f10_recall"), 3),
            _cold(r), _fmt(r.get("open_first_s"), 3),
        ])  # fmt: skip
    return markdown_table(headers, body)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=100_000, help="clustered vectors (0: none)")
    ap.add_argument("--million", action="store_true", help="also run 1,000,000 x 384")
    ap.add_argument("--no-scifact", action="store_true")
    ap.add_argument("--systems", default=",".join(ORDER))
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--timeout", type=int, default=1800, help="seconds per system and dataset")
    ap.add_argument("--no-write", action="store_true", help="do not touch docs/benchmarks.md")
    ap.add_argument("--save", help="also write the raw results (JSON) to this file")
    ap.add_argument("--merge", nargs="*", default=[], help="render earlier --save files too")
    ap.add_argument("--note", default="", help="a sentence added under the command line")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    ap.add_argument("--dataset", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        print(json.dumps(run_child(args.child, args.dataset, args.queries)))
        return
    names = [f"clustered-{args.n}"] if args.n > 0 else []
    names += [] if args.no_scifact else ["scifact"]
    names += ["clustered-1000000"] if args.million else []
    started, load_before = time.time(), os.getloadavg()
    results: dict[str, Any] = {}
    for path in args.merge:
        results.update(json.loads(Path(path).read_text()))
    if names:
        results.update(run_parent(names, args.systems.split(","), args.queries, args.timeout))
    if args.save:
        Path(args.save).write_text(json.dumps(results))
    body = render(results, args, time.time() - started, load_before)
    print("\n" + body)
    if not args.no_write:
        write_section(SECTION, body)


def render(results: dict, args: argparse.Namespace, seconds: float, load: tuple) -> str:
    packages = (
        "numpy",
        "faiss-cpu",
        "chromadb",
        "lancedb",
        "sqlite-vec",
        "pymilvus",
        "milvus-lite",
    )
    parts = [
        "## ANN: semsearch SQLite (exact and HNSW) vs chromadb, LanceDB, sqlite-vec, Milvus Lite, "
        "faiss, numpy (issue 5)",
        (
            "Merged from runs saved with `--save` (commands below). "
            if args.merge
            else f"Command: `.venv/bin/python benchmarks/ann.py{' --million' if args.million else ''}` "
            f"({seconds / 60:.1f} min). "
        )
        + f"Machine: {machine_info(packages)}; load average at start "
        f"{', '.join(f'{v:.1f}' for v in load)}. " + args.note,
        "Single-query latency, warm, k=10, at the smallest `ef` reaching recall@10 ≥ 0.95 "
        "(— where a system has no knob). Filtered columns keep 1% / 10% of rows. "
        "Peak RSS includes the input arrays every process loads. semsearch caches a filter's "
        "allowed set per snapshot (ann/filter.py), so the filtered columns are a filter "
        'used again; the "new filter" column gives every query a filter never seen before '
        "(same selectivity), which pays the SQL evaluation of the filter.",
    ]
    for name, rows in results.items():
        parts += [f"### {name}", table(rows)]
        ratios = against_faiss(rows)
        if ratios:
            parts.append(ratios)
    return "\n\n".join([*parts, CHOICE])


CHOICE = """### Why faiss, and the policy (issue 5)

- faiss-cpu 1.15 was chosen over hnswlib 0.8 and usearch 2.26. Unfiltered HNSW speed is a tie
  on this machine (100k x 384 clustered, ef=64: faiss 0.19-0.40 ms, hnswlib 0.16-0.42 ms,
  usearch 0.6-1.7 ms). The difference is filtering and loading: faiss evaluates a filter inside
  the graph search in C++ (`IDSelectorBitmap`) and memory-maps a saved graph
  (`IO_FLAG_MMAP_IFC`: a 20k-vector graph opens in about 1 ms); hnswlib's filter is a Python
  callable (150-270 QPS with 2 threads) and its last release is from 2023; usearch's Python
  `search` has no filter. faiss lacks `remove_ids` for HNSW, so deletions are tombstones plus
  compaction (tests/ann/test_ann_churn.py bounds the cost at 1.5x of a fresh build).
- In-graph filtering alone is not enough: raw faiss at ef=64 on 100k clustered vectors reached
  recall@10 0.91 at 10% selectivity and 0.24 at 1% (0.75 even at ef=1024); the "raw faiss" rows
  above show it (1%: 0.16 at 100k, 0.81 at 1M). semsearch therefore scans the filtered set
  exactly when it holds at most 20,000 chunks, widens `ef` as `selectivity^-0.6` above that, and
  falls back to an exact scan if the graph still returns too few.
- A filter's allowed set (row mask, faiss bitmap, gathered vectors) is cached per snapshot, as
  Lucene caches filters: evaluating a filter in SQL costs 1-37 ms (the "new filter" column), a
  repeated filter costs nothing. Any write makes a new snapshot and empties the cache.
- `ef_search` default 128: at 1M clustered vectors `ef=64` fell short of recall@10 0.95 and 128
  gave 0.979 (faiss alone: 0.980); smaller collections pass at 16.
- Threshold: exact below 20,000 chunks, HNSW above. numpy's scan costs about 13 ms per 100k
  vectors here (about 11 GB/s of memory bandwidth), so 20,000 chunks cost about 2.5 ms.
"""


if __name__ == "__main__":
    main()
