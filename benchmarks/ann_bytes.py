"""Where the bytes of the SQLite store + HNSW sidecar go, per chunk, against raw faiss HNSW.

Usage:
    .venv/bin/python benchmarks/ann_bytes.py --n 100000
    .venv/bin/python benchmarks/ann_bytes.py --n 20000 --keep /tmp/bytes

Builds the store as benchmarks/ann.py does (clustered 384-d unit vectors from
benchmarks/ann_data.py, one record with one chunk each, then the first search builds and saves
the graph), then prints, per SQLite table and index (the ``dbstat`` virtual table, the way
sqlite3_analyzer counts: every page it owns, so free space inside pages counts too) and per
sidecar file, its bytes and bytes per chunk, and the size of raw faiss ``IndexHNSWFlat`` on the
same vectors (``faiss.write_index``, as benchmarks/ann.py measures it). Writes nothing else.
"""

from __future__ import annotations

import argparse
import sqlite3
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks import ann_data  # noqa: E402
from benchmarks.ann_peers import Faiss, Semsearch  # noqa: E402
from benchmarks.report import markdown_table  # noqa: E402


def sqlite_bytes(path: Path) -> list[tuple[str, int]]:
    """(table or index name, bytes of the pages it owns), largest first, from ``dbstat``."""
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        conn.execute("PRAGMA wal_checkpoint(PASSIVE)")
        rows = conn.execute(
            "SELECT name, SUM(pgsize) FROM dbstat GROUP BY name ORDER BY 2 DESC"
        ).fetchall()
        free = conn.execute("PRAGMA freelist_count").fetchone()[0]
        page = conn.execute("PRAGMA page_size").fetchone()[0]
    finally:
        conn.close()
    return [(str(r[0]), int(r[1])) for r in rows] + [("(free pages)", int(free) * int(page))]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=100_000)
    ap.add_argument("--keep", type=Path, help="build in this folder and keep the files")
    args = ap.parse_args()
    x, _ = ann_data.clustered(args.n, 1)
    x = np.ascontiguousarray(x, dtype=np.float32)
    buckets = np.arange(args.n) % 100
    with tempfile.TemporaryDirectory(prefix="ann-bytes-") as tmp:
        folder = args.keep or Path(tmp)
        folder.mkdir(parents=True, exist_ok=True)
        system = Semsearch(exact=False)
        system.build(x, buckets, folder)
        system.db.close()
        rows = [(f"SQLite: {name}", size) for name, size in sqlite_bytes(system.path)]
        files = sorted(p for p in folder.iterdir() if p.name != "bench.embed.db")
        rows += [(f"file: {p.name.replace('bench.embed.db', '<db>')}", p.stat().st_size)
                 for p in files]  # fmt: skip
        total = sum(p.stat().st_size for p in folder.iterdir())
        raw_folder = folder / "raw"
        raw_folder.mkdir(exist_ok=True)
        Faiss().build(x, buckets, raw_folder)
        raw = (raw_folder / "faiss.hnsw").stat().st_size
    table = [[name, f"{size:,}", f"{size / args.n:,.1f}"] for name, size in rows]
    table.append(["semsearch total (every file)", f"{total:,}", f"{total / args.n:,.1f}"])
    table.append(["raw faiss IndexHNSWFlat", f"{raw:,}", f"{raw / args.n:,.1f}"])
    print(f"{args.n:,} x 384 clustered: semsearch / raw faiss = {total / raw:.2f}x\n")
    print(markdown_table(["part", "bytes", "bytes per chunk"], table))


if __name__ == "__main__":
    main()
