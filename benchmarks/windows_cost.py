"""What sentence windows cost and buy on BEIR SciFact (issue 20, item 2; issue 45).

Indexes the SciFact corpus three times into fresh SQLite files with the default model (int8
MiniLM): with ``sentence_windows=False`` (chunk vectors only), with windows embedded as texts
of their own (``window_vectors="separate"``, the default) and with windows from their chunk's
own forward pass (``window_vectors="late"``), and reports for each: chunk and window vectors,
file size (MB), index time (s, the upsert in this process, model loaded before), nDCG@10 and
query p50 (ms) in semantic and hybrid mode over the test queries.

Usage (a quiet machine; the full corpus takes about 6 minutes of embedding per run):
    .venv/bin/python benchmarks/windows_cost.py [--docs N] [--queries N] [--no-write]
Writes the "sentence-windows" section of docs/benchmarks.md unless --no-write.
"""

from __future__ import annotations

import argparse
import sqlite3
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.report import machine_info, markdown_table, percentile, write_section
from semsearch import connect
from semsearch.embedders.local import LocalEmbedder
from semsearch.evaluation import load_beir, run_mode, score_run

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "scifact"


def vectors(path: Path) -> tuple[int, int]:
    """(chunk vectors, window vectors) in the file; windows counted from their spans' bytes."""
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        # "embedded", not "vector IS NOT NULL": format 6 keeps vectors in blocks
        chunks = conn.execute("SELECT COUNT(*) FROM chunks WHERE status = 'embedded'").fetchone()
        windows = conn.execute("SELECT COALESCE(SUM(length(spans)), 0) / 8 FROM chunk_windows")
        return int(chunks[0]), int(windows.fetchone()[0])
    finally:
        conn.close()


#: (label, sentence_windows, window_vectors)
VARIANTS = (("off", False, None), ("separate", True, "separate"), ("late", True, "late"))


def measure(
    variant: tuple[str, bool, str | None], docs: dict, queries: dict, qrels: dict, tmp: Path
) -> list[object]:
    label, windows, kind = variant
    path = tmp / f"windows-{label}.embed.db"
    embedder = LocalEmbedder(precision="int8")
    embedder.embed_documents(["warm up"])
    if kind == "late":
        embedder.embed_documents_late(["warm up. the graph."], [[(0, 8), (9, 19)]])
    with connect(path) as db:
        coll = db.collection(
            "scifact", embedder=embedder, sentence_windows=windows, window_vectors=kind
        )
        rows = [{"id": i, "title": t, "text": f"{t} {b}".strip()} for i, (t, b) in docs.items()]
        start = time.perf_counter()
        coll.upsert(rows)
        seconds = time.perf_counter() - start
        print(f"{label}: index {seconds:.1f} s", flush=True)
        out: list[object] = [label, *vectors(path)]
        size = db.store.file_size()  # type: ignore[attr-defined]  # main file + WAL
        out += [f"{size / 1e6:.1f}", f"{seconds:.0f}"]
        for mode in ("semantic", "hybrid"):
            run, ms, *_ = run_mode(coll, queries, mode, 10)
            out += [f"{score_run(qrels, run)['ndcg_cut_10']:.4f}", f"{percentile(ms, 50):.1f}"]
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--docs", type=int, default=None, help="first N documents only")
    parser.add_argument("--queries", type=int, default=None, help="first N queries only")
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args()
    ds = load_beir(DATA)
    docs = dict(list(ds.corpus.items())[: args.docs] if args.docs else ds.corpus.items())
    queries = dict(list(ds.queries.items())[: args.queries] if args.queries else ds.queries.items())
    qrels = {q: ds.qrels[q] for q in queries if q in ds.qrels}
    with tempfile.TemporaryDirectory() as tmp:
        rows = [measure(v, docs, queries, qrels, Path(tmp)) for v in VARIANTS]
    headers = ["windows", "chunk vectors", "window vectors", "file MB", "index s",
               "semantic nDCG@10", "semantic p50 ms", "hybrid nDCG@10", "hybrid p50 ms"]  # fmt: skip
    table = markdown_table(headers, rows)
    print(table)
    if not args.no_write:
        body = "\n\n".join([
            "## Sentence windows: cost and gain on BEIR SciFact test",
            f"{len(docs)} documents, {len(queries)} queries, default model (int8), SQLite "
            "store; index s is the upsert in one process, the model loaded before.",
            table, machine_info(),
        ])  # fmt: skip
        write_section("sentence-windows", body)


if __name__ == "__main__":
    main()
