"""Milvus Lite vs the SQLite store on clustered vectors: insert time, latency, recall, file size.

Usage:
    .venv/bin/python benchmarks/milvus.py              # 20,000 x 384, writes docs/benchmarks.md
    .venv/bin/python benchmarks/milvus.py --n 100000   # the issue's size (long: see the notes)

Data: ``n`` unit vectors in ``--clusters`` gaussian clusters (the shape of real embeddings; on
uniform random vectors every ANN index scores near zero recall), plus ``--queries`` fresh
points from the same clusters. Each record has an int field ``bucket`` (uniform in 0..99), so
``bucket == 0`` keeps 1% and ``bucket < 10`` keeps 10%. Ground truth is an exact numpy scan.

Both stores are filled through the Store primitives semsearch itself uses (``write_records`` then
``set_vectors``, batches of 5000), so insert time includes records, chunks, keyword rows and
flushes. Latency is one ``vector_search(k=10)`` call, as ``Collection.search`` makes it.
"Milvus raw" rows call Milvus' filtered ANN directly, without semsearch's exact fallback.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.ann_data import clustered  # noqa: E402  (the ANN benchmark's generator)
from semsearch.filters import Filter, parse_filter  # noqa: E402
from semsearch.results import Chunk  # noqa: E402
from semsearch.schema import Schema  # noqa: E402
from semsearch.stores.base import ChunkWrite, CollectionInfo, RecordWrite  # noqa: E402

SCHEMA = Schema.from_types({"bucket": "int"})
NAME = "bench"
K = 10
#: Records per write_records call (Milvus Lite scans every row per query: fewer, larger calls).
BATCH = 5000
HEADING = "## Milvus Lite vs SQLite (issue 7)"
NOTES = """How to read it:

- "Milvus Lite X" rows go through `MilvusStore.vector_search`, as `Collection.search` does:
  filters matching at most 256 chunks are ranked exactly (so their recall is 1.0 by design),
  broader ones use Milvus' filtered ANN and fall back to an exact scan when it returns fewer
  than min(k, matches) hits. "raw filtered ANN" rows call Milvus' filtered search directly: that
  is the recall the entity cache semsearch replaces got, since it used IVF_FLAT nprobe=16.
- **Default index: HNSW**, chosen by recall. Through semsearch, at 100,000 vectors, it reached
  recall@10 1.000 unfiltered, 0.990 at 1% and 0.972 at 10%: the 1% filter (1,000 matches) is
  above the 256-match exact path, so semsearch's fallback only helps when Milvus returns fewer
  than k hits (raw: 0.820). IVF_FLAT (nlist 128) is as accurate without a filter on clustered
  data and 5x faster in Milvus Lite, but its filtered recall collapses (0.398 at 1% with
  nprobe=16, the configuration of the entity cache semsearch replaces; 0.820 at nprobe=64):
  FAISS scans only `nprobe` cells, then drops the rows that fail the filter. Choose
  `?index=IVF_FLAT` only for unfiltered workloads that need speed.
- Milvus Lite is slow at this size: 60-75 ms for its raw filtered search and 300 ms unfiltered
  (HNSW), against about 1 ms for the SQLite store. semsearch's filtered path adds one more Lite
  query (are there at most 256 matches?), which costs about 400 ms here. Insert time includes
  semsearch's reads per batch (known hashes, old chunks, vectors to reuse), each a full scan in
  Lite, so it grows faster than linearly (137-159 s for 100,000, 26-35 s for 20,000).
- The SQLite rows use its HNSW graph (above 20,000 chunks) and scan filtered sets of at most
  20,000 chunks exactly; "insert s" for SQLite includes building the graph (the first search).
- Latencies were taken on a shared machine (see load below); compare rows within this table,
  not with other sections. Recall does not depend on load.

**When to choose Milvus.** Beyond a few tens of thousands of chunks, Milvus Lite is the
slowest store here; use the SQLite store on one machine, or a Milvus server or cluster when the
data outgrows one machine or other services already run Milvus (docs/milvus.md)."""


def _records(start: int, stop: int, buckets: np.ndarray) -> list[RecordWrite]:
    out = []
    for i in range(start, stop):
        text = f"item {i} bucket {buckets[i]}"
        digest = hashlib.sha256(text.encode()).hexdigest()
        chunk = ChunkWrite(Chunk(text, 0, 0, len(text)), text, digest)
        out.append(
            RecordWrite(
                f"r{i:07d}",
                {"bucket": int(buckets[i])},
                {"bucket": int(buckets[i])},
                text,
                digest,
                [chunk],
            )
        )
    return out


def fill(store: Any, vectors: np.ndarray, buckets: np.ndarray) -> float:
    """Write every record and its vector through the Store primitives; seconds taken."""
    store.create_collection(
        CollectionInfo(NAME, SCHEMA.to_json(), "bench:clustered", vectors.shape[1])
    )
    started = time.perf_counter()
    for start in range(0, len(vectors), BATCH):
        stop = min(start + BATCH, len(vectors))
        result = store.write_records(NAME, _records(start, stop, buckets))
        ids = [p.chunk_id for p in result.pending]
        store.set_vectors(NAME, ids, vectors[start:stop])
        print(
            f"  {type(store).__name__}: {stop:,} written, {time.perf_counter() - started:.0f} s",
            flush=True,
        )
    return time.perf_counter() - started


def truth(vectors: np.ndarray, queries: np.ndarray, mask: np.ndarray | None) -> list[set[str]]:
    """Exact top-10 record ids per query (optionally among rows where ``mask`` is True)."""
    rows = np.arange(len(vectors)) if mask is None else np.flatnonzero(mask)
    scores = queries @ vectors[rows].T
    top = np.argsort(-scores, axis=1)[:, :K]
    return [{f"r{rows[j]:07d}" for j in t} for t in top]


def measure(
    search: Callable[[np.ndarray], list[str]], queries: np.ndarray, expected: list[set[str]]
) -> dict[str, float]:
    """p50/p99 latency (ms) and mean recall@10 of ``search`` over the queries."""
    times, recalls = [], []
    for q, want in zip(queries, expected, strict=True):
        t0 = time.perf_counter()
        got = search(q)
        times.append((time.perf_counter() - t0) * 1000)
        recalls.append(len(set(got[:K]) & want) / min(K, len(want)))
    return {
        "p50": float(np.percentile(times, 50)),
        "p99": float(np.percentile(times, 99)),
        "recall": float(np.mean(recalls)),
    }


def store_search(store: Any, where: Filter | None) -> Callable[[np.ndarray], list[str]]:
    return lambda q: [h.record_id for h in store.vector_search(NAME, q, K, where)]


def raw_search(store: Any, where: Filter | None) -> Callable[[np.ndarray], list[str]]:
    from semsearch.stores.milvus_query import ann

    found = store._coll(NAME, "vectors")
    expr = store.filter_expr(where)
    index = store.meta(NAME)["index"]
    return lambda q: [h.record_id for h in ann(found, index, q, K, expr, store.search_params)]


def run(args: argparse.Namespace) -> list[list[str]]:
    from semsearch.stores.milvus import MilvusStore
    from semsearch.stores.sqlite import SQLiteStore

    vectors, queries = clustered(args.n, args.queries, args.dim, args.clusters)
    buckets = np.random.default_rng(11).integers(0, 100, args.n)
    filters = {
        "none": (None, None),
        "1%": (parse_filter({"bucket": 0}, SCHEMA), buckets == 0),
        "10%": (parse_filter({"bucket": {"$lt": 10}}, SCHEMA), buckets < 10),
    }
    expected = {name: truth(vectors, queries, mask) for name, (_, mask) in filters.items()}
    rows: list[list[str]] = []
    tmp = Path(tempfile.mkdtemp(prefix="semsearch-milvus-bench-"))
    try:
        for index, sweeps in (
            ("HNSW", [{"ef": 128}]),
            ("IVF_FLAT", [{"nprobe": p} for p in (16, 32, 64)]),
        ):
            store = MilvusStore(f"milvus-lite://{tmp / (index + '.db')}", index=index)
            seconds = fill(store, vectors, buckets)
            mb = store.file_size() / 1e6
            for params in sweeps:
                store.search_params = params
                label = ", ".join(f"{k}={v}" for k, v in params.items())
                for fname, (where, _) in filters.items():
                    m = measure(store_search(store, where), queries, expected[fname])
                    rows.append(_row(f"Milvus Lite {index}", label, fname, seconds, mb, m))
                    print(rows[-1], flush=True)
                    if where is not None:
                        m = measure(raw_search(store, where), queries, expected[fname])
                        rows.append(
                            _row(
                                f"Milvus Lite {index}, raw filtered ANN",
                                label,
                                fname,
                                seconds,
                                mb,
                                m,
                            )
                        )
                        print(rows[-1], flush=True)
            store.close()
        sqlite = SQLiteStore(str(tmp / "bench.embed.db"))
        started = time.perf_counter()
        fill(sqlite, vectors, buckets)
        sqlite.vector_search(NAME, queries[0], K, None)  # builds the HNSW graph above 20,000
        seconds = time.perf_counter() - started
        mb = sqlite.file_size() / 1e6
        label = "SQLite (HNSW; exact for small filters)" if args.n >= 20_000 else "SQLite (exact)"
        for fname, (where, _) in filters.items():
            m = measure(store_search(sqlite, where), queries, expected[fname])
            rows.append(_row(label, "-", fname, seconds, mb, m))
            print(rows[-1], flush=True)
        sqlite.close()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return rows


def _row(
    store: str, params: str, filt: str, seconds: float, mb: float, m: dict[str, float]
) -> list[str]:
    return [
        store,
        params,
        filt,
        f"{seconds:.0f}",
        f"{mb:.0f}",
        f"{m['p50']:.1f}",
        f"{m['p99']:.1f}",
        f"{m['recall']:.3f}",
    ]


def table(rows: list[list[str]]) -> str:
    head = [
        "store",
        "search params",
        "filter",
        "insert s",
        "size MB",
        "p50 ms",
        "p99 ms",
        "recall@10",
    ]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    return "\n".join([*lines, *("| " + " | ".join(r) + " |" for r in rows)])


def machine(load_before: str) -> str:
    import milvus_lite
    import pymilvus

    load_after = subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
    return (
        f"Machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
        f"Python {platform.python_version()}, numpy {np.__version__}, pymilvus "
        f"{pymilvus.__version__}, milvus-lite {milvus_lite.__version__}.  \n"
        f"Load before: `{load_before}`  \nLoad after: `{load_after}`"
    )


def write_section(text: str, path: Path = ROOT / "docs" / "benchmarks.md") -> None:
    """Replace (or append) this benchmark's section, keyed by its heading; others stay as they are."""
    old = path.read_text() if path.exists() else "# Benchmarks\n"
    pattern = re.compile(rf"^{re.escape(HEADING)}\n.*?(?=^## |\Z)", re.S | re.M)
    new = pattern.sub(lambda _: text, old) if pattern.search(old) else old.rstrip() + "\n\n" + text
    path.write_text(new)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--n", type=int, default=20_000)
    parser.add_argument("--dim", type=int, default=384)
    parser.add_argument("--clusters", type=int, default=1000)
    parser.add_argument("--queries", type=int, default=50)
    parser.add_argument("--no-write", action="store_true", help="print only")
    args = parser.parse_args()
    load_before = subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
    started = time.perf_counter()
    rows = run(args)
    body = table(rows)
    cmd = (
        "`.venv/bin/python benchmarks/milvus.py"
        + ("" if args.n == 20_000 else f" --n {args.n}")
        + "`"
    )
    section = (
        f"{HEADING}\n\n{args.n:,} x {args.dim} unit vectors in {args.clusters} gaussian clusters, "
        f"{args.queries} queries, k={K}; run with {cmd} in {time.perf_counter() - started:.0f} s.\n\n"
        f"{body}\n\n{NOTES}\n\n{machine(load_before)}\n"
    )
    print(section)
    if not args.no_write:
        write_section(section)


if __name__ == "__main__":
    main()
