"""The cost of record-level BM25 and of the new hybrid default on BEIR SciFact (issue 20).

Starts from the cached `semsearch eval` index of SciFact (built by benchmarks/beir.py, format 2).
Makes two copies: one turned back into format 1 (the record-level FTS5 tables dropped, as files
written before this change are), one as it is. Measures on each:

- disk: the file's size, and the record-level table's share (``dbstat``);
- build: the time to add the record-level table to the format-1 copy (the migration a first
  write runs; a fresh build pays the same inside its upserts);
- query p50 over SciFact's 300 test queries, warm, k=10: keyword; hybrid with the old default
  (RRF k=5, 100 records per leg) and with the new one (convex 0.75/0.25, 200 per leg). The
  query embedding is computed once per query and excluded, so hybrid times are store and
  fusion work only.

Usage: .venv/bin/python benchmarks/keyword_record_cost.py [../shared/data/scifact]
Writes the "keyword-record-cost" section of docs/benchmarks.md.
"""

from __future__ import annotations

import os
import re
import shutil
import sqlite3
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.report import machine_info, markdown_table, write_section
from semsearch import connect, search
from semsearch.cli.eval_cmd import default_cache_dir
from semsearch.embedders.query_cache import CachedEmbedder, QueryCache
from semsearch.embedders.registry import resolve_embedder
from semsearch.evaluation import index_path, load_beir
from semsearch.fusion import Fusion
from semsearch.stores.sqlite.record_fts import create_record_fts
from semsearch.stores.sqlite.schema import FTS_TOKENIZER

RECORD_TABLE = re.compile(r"fts_rec_\d+")
OLD = (Fusion("rrf", (1.0, 1.0), 5), 100)


def to_format_1(path: Path) -> None:
    conn = sqlite3.connect(path)
    names = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
    for name in names:
        if RECORD_TABLE.fullmatch(name):
            conn.execute(f"DROP TABLE {name}")
    conn.execute("DELETE FROM semsearch_migrations WHERE version >= 2")
    conn.commit()
    conn.execute("VACUUM")
    conn.close()


def migrate_seconds(path: Path) -> float:
    conn = sqlite3.connect(path, isolation_level=None)
    cid = conn.execute("SELECT id FROM collections").fetchone()[0]
    start = time.perf_counter()
    conn.execute("BEGIN")
    create_record_fts(conn, int(cid), FTS_TOKENIZER)
    conn.execute("COMMIT")
    took = time.perf_counter() - start
    conn.execute("VACUUM")
    conn.close()
    return took


def record_table_mb(path: Path) -> float:
    conn = sqlite3.connect(path)
    try:
        rows = conn.execute(
            "SELECT sum(pgsize) FROM dbstat WHERE name LIKE 'fts\\_rec\\_%' ESCAPE '\\'"
        ).fetchone()
    except sqlite3.OperationalError:  # SQLite built without dbstat
        return float("nan")
    finally:
        conn.close()
    return (rows[0] or 0) / 1e6


def p50(run) -> float:
    times = []
    for item in run:
        start = time.perf_counter()
        item()
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


def latencies(path: Path, queries: list[str], embedder: object) -> list[str]:
    with connect(path) as db:
        coll = db.collection("beir", create=False, embedder=embedder)

        def hybrid(fusion: Fusion, depth: int):
            saved = search.HYBRID_FUSION, search.HYBRID_DEPTH
            search.HYBRID_FUSION, search.HYBRID_DEPTH = fusion, depth
            try:
                return p50([lambda q=q: coll.search(q, mode="hybrid", limit=10) for q in queries])
            finally:
                search.HYBRID_FUSION, search.HYBRID_DEPTH = saved

        for q in queries[:20]:  # warm the caches
            coll.search(q, mode="hybrid", limit=10)
        keyword = p50([lambda q=q: coll.search(q, mode="keyword", limit=10) for q in queries])
        old = hybrid(*OLD)
        new = hybrid(search.HYBRID_FUSION, search.HYBRID_DEPTH)
    return [f"{keyword:.1f}", f"{old:.1f}", f"{new:.1f}"]


def main(beir_dir: str, write: bool = True) -> None:
    data = load_beir(beir_dir)
    embedder = resolve_embedder(os.environ.get("SEMSEARCH_MODEL"))
    source = index_path(
        data, embedder.model_id, os.environ.get("SEMSEARCH_CACHE_DIR") or default_cache_dir()
    )
    if not source.exists():
        sys.exit(f"no cached index at {source}: run benchmarks/beir.py first")
    queries = list(data.queries.values())
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        old, new = Path(tmp) / "f1.embed.db", Path(tmp) / "f2.embed.db"
        for copy in (old, new):
            shutil.copy(source, copy)
        to_format_1(old)
        shutil.copy(old, new)
        took = migrate_seconds(new)
        cached = CachedEmbedder(embedder, QueryCache(len(queries) + 1))
        for q in queries:  # each query embedded once, before any timing
            cached.embed_query(q)
        for label, path, build in (
            ("format 1: best chunk", old, "-"),
            ("format 2: whole record", new, f"+{took:.1f} s"),
        ):
            size = path.stat().st_size / 1e6
            rows.append([
                label, f"{size:.1f} MB", f"{record_table_mb(path):.1f} MB", build,
                *latencies(path, queries, cached),
            ])  # fmt: skip
    table = markdown_table(
        ["keyword ranking", "file", "record-level table", "build (record table)", "keyword p50 ms",
         "hybrid p50 ms, RRF k=5 depth 100", "hybrid p50 ms, convex depth 200 (default)"],
        rows,
    )  # fmt: skip
    body = "\n\n".join([
        "## The cost of record-level BM25 and of the new hybrid default (SciFact)",
        f"SciFact's 5,183 documents ({data.name}, cached eval index); 300 test queries, warm, "
        "k=10; query embeddings computed beforehand and excluded.",
        table,
        machine_info(),
    ])  # fmt: skip
    print(table)
    if write:
        write_section("keyword-record-cost", body)


if __name__ == "__main__":
    main(
        sys.argv[1]
        if len(sys.argv) > 1 and not sys.argv[1].startswith("--")
        else "../shared/data/scifact",
        "--no-write" not in sys.argv,
    )
