"""Where the SQLite store's index build goes, phase by phase, against raw faiss on the same vectors.

Usage:
    .venv/bin/python benchmarks/ann_build.py --n 100000
    .venv/bin/python benchmarks/ann_build.py --n 20000 --storage float16,int8

Phases (each timed once, in one process, on clustered 384-d unit vectors from
benchmarks/ann_data.py): ``records`` (``write_records``: records, chunks and keyword rows,
5,000 records a transaction, as benchmarks/ann.py builds), ``vectors`` (``set_vectors``),
``load`` (the first search reads every vector from SQLite into the cache) and ``graph`` (the
HNSW build and the sidecar write), then raw faiss ``IndexHNSWFlat`` and ``IndexHNSWSQ`` built
on the same vectors with the same M and efConstruction. Prints a markdown table and the load
average before and after; writes nothing. ``total / graph`` is the build against its own graph
phase (an fp16 graph costs what ``IndexHNSWFlat`` does): on a shared machine the raw faiss
builds, run minutes apart, move with the load more than this ratio does.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks import ann_data  # noqa: E402
from benchmarks.ann_peers import EF_CONSTRUCTION, M, write_vectors  # noqa: E402
from benchmarks.report import markdown_table  # noqa: E402


def phases(x: np.ndarray, storage: str, folder: Path) -> dict[str, float]:
    """Seconds per phase of building the SQLite store's index over ``x``."""
    import semsearch
    from semsearch.schema import Field, Schema
    from semsearch.stores.base import CollectionInfo

    db = semsearch.connect(folder / f"{storage}.embed.db")
    store = db.store
    schema = Schema(fields=(Field("bucket", "int"),))
    ann = {"M": M, "ef_construction": EF_CONSTRUCTION, "storage": storage}
    store.create_collection(
        CollectionInfo("bench", schema.to_json(), "bench:384", None, {"ann": ann})
    )
    buckets = np.arange(x.shape[0]) % 100
    times: dict[str, float] = {"records": 0.0, "vectors": 0.0}
    original = store.set_vectors

    def timed_vectors(*args: Any) -> None:
        started = time.perf_counter()
        original(*args)
        times["vectors"] += time.perf_counter() - started

    store.set_vectors = timed_vectors  # type: ignore[method-assign]
    started = time.perf_counter()
    write_vectors(store, x, buckets)
    times["records"] = time.perf_counter() - started - times["vectors"]
    from semsearch.ann import rows as ann_rows

    cid = int(store._rows("SELECT id FROM collections WHERE name = 'bench'", ())[0][0])
    started = time.perf_counter()
    opts = ann_rows.AnnOptions()  # the first search loads the rows as float16 (half=True)
    store._in_read_txn(lambda conn: ann_rows.load_rows(conn, cid, {}, opts, half=True))
    times["load"] = time.perf_counter() - started
    started = time.perf_counter()
    store.vector_search("bench", x[0], 10, None)  # loads again, builds and saves the graph
    times["graph"] = time.perf_counter() - started - times["load"]
    times["total"] = sum(times.values())
    times["disk_mb"] = sum(p.stat().st_size for p in folder.glob(f"{storage}.embed.db*")) / 1e6
    db.close()
    return times


def raw_faiss(x: np.ndarray, storage: str) -> float:
    """Seconds to build raw faiss HNSW (flat or scalar-quantised) over ``x``."""
    import faiss

    started = time.perf_counter()
    if storage == "float32":
        index = faiss.IndexHNSWFlat(x.shape[1], M, faiss.METRIC_INNER_PRODUCT)
    else:
        qtype = {"float16": faiss.ScalarQuantizer.QT_fp16, "int8": faiss.ScalarQuantizer.QT_8bit}
        index = faiss.IndexHNSWSQ(x.shape[1], qtype[storage], M, faiss.METRIC_INNER_PRODUCT)
        index.train(x[:65_536])
    index.hnsw.efConstruction = EF_CONSTRUCTION
    index.add(x)
    return time.perf_counter() - started


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=100_000)
    ap.add_argument("--storage", default="float16", help="comma-separated graph storages")
    args = ap.parse_args()
    load_before = os.getloadavg()
    x, _ = ann_data.clustered(args.n, 1)
    x = np.ascontiguousarray(x, dtype=np.float32)
    flat = raw_faiss(x, "float32")
    rows = []
    for storage in args.storage.split(","):
        with tempfile.TemporaryDirectory(prefix="ann-build-") as tmp:
            t = phases(x, storage, Path(tmp))
        sq = raw_faiss(x, storage)
        rows.append([
            storage, f"{t['records']:.1f}", f"{t['vectors']:.1f}", f"{t['load']:.1f}",
            f"{t['graph']:.1f}", f"{t['total']:.1f}", f"{sq:.1f}", f"{flat:.1f}",
            f"{t['total'] / flat:.2f}", f"{t['total'] / t['graph']:.2f}", f"{t['disk_mb']:,.1f}",
        ])  # fmt: skip
    headers = [
        "graph storage", "records s", "vectors s", "load s", "graph s", "total s",
        "raw faiss same storage s", "raw faiss HNSWFlat s", "total / HNSWFlat", "total / graph",
        "disk MB",
    ]  # fmt: skip
    print(f"{args.n:,} x 384 clustered, M={M}, efConstruction={EF_CONSTRUCTION}\n")
    print(markdown_table(headers, rows))
    loads = [" ".join(f"{v:.2f}" for v in la) for la in (load_before, os.getloadavg())]
    print(f"\nload average before: {loads[0]}; after: {loads[1]}")


if __name__ == "__main__":
    main()
