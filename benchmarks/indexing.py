"""Indexing and query benchmark for the core: foam-docs and SciFact with the real model.

Measures, in one run on the same texts:
- index time and chunks/s through semsearch (chunking + SQLite writes + embedding);
- raw ``SentenceTransformer.encode`` on exactly the chunk texts semsearch embedded, and our
  overhead as a ratio (target: at most 1.10, i.e. at most 10% slower than raw encode);
- warm query latency p50/p95 excluding and including the query embedding;
- index file size; ``semsearch --help`` wall time.

Usage: .venv/bin/python benchmarks/indexing.py [--queries 200] [--no-scifact]
Writes the "indexing" section of docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import semsearch
from benchmarks.report import machine_info, markdown_table, percentile, write_section
from semsearch.chunking import embedding_text
from semsearch.embedders.local import LocalEmbedder
from semsearch.sources.vault import VAULT_SCHEMA, index_folder

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"


class PrecomputedQueries:
    """Wraps an embedder so queries come from a cache: search latency without embedding."""

    def __init__(self, inner: LocalEmbedder, queries: Sequence[str]) -> None:
        self.inner = inner
        self.model_id = inner.model_id
        self.cache = dict(zip(queries, inner.embed_documents(list(queries)), strict=True))

    def __getattr__(self, name: str) -> object:
        return getattr(self.inner, name)

    def embed_query(self, text: str) -> np.ndarray:
        return self.cache[text]


def chunk_texts(db_path: Path) -> list[str]:
    rows = sqlite3.connect(db_path).execute("SELECT text, heading_path FROM chunks").fetchall()
    return [embedding_text(t, tuple(json.loads(h))) for t, h in rows]


def raw_encode_seconds(model: LocalEmbedder, texts: list[str]) -> float:
    runner = model.runner()
    start = time.perf_counter()
    runner.encode(texts)
    return time.perf_counter() - start


def timed(fn: Callable[[], object]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def bench_corpus(
    name: str,
    model: LocalEmbedder,
    build: Callable[[semsearch.Collection], object],
    workdir: Path,
    schema: semsearch.Schema | None,
) -> dict[str, object]:
    path = workdir / f"{name}.embed.db"
    raw_before = None
    with semsearch.connect(path) as db:
        coll = db.collection(name, schema=schema, embedder=model)
        seconds = timed(lambda: build(coll))
        stats = coll.stats()
    texts = chunk_texts(path)
    raw_before = raw_encode_seconds(model, texts)
    raw_after = raw_encode_seconds(model, texts)
    raw = (raw_before + raw_after) / 2
    size = sum(p.stat().st_size for p in workdir.glob(f"{name}.embed.db*"))
    return {
        "corpus": name,
        "records": stats.records,
        "chunks": stats.chunks,
        "index_s": seconds,
        "chunks_per_s": stats.chunks / seconds,
        "raw_s": raw,
        "raw_chunks_per_s": len(texts) / raw,
        "ratio": seconds / raw,
        "mb": size / 1e6,
        "path": path,
    }


def scifact_records() -> list[dict[str, str]]:
    corpus = DATA / "scifact" / "corpus.jsonl"
    out = []
    with corpus.open(encoding="utf-8") as fh:
        for line in fh:
            doc = json.loads(line)
            out.append({"id": doc["_id"], "text": f"{doc['title']}\n\n{doc['text']}".strip()})
    return out


def query_latency(
    path: Path, name: str, model: LocalEmbedder, queries: list[str]
) -> dict[str, float]:
    out: dict[str, float] = {}
    cached = PrecomputedQueries(model, queries)
    for label, embedder in (("search_only", cached), ("with_embedding", model)):
        with semsearch.connect(path) as db:
            coll = db.collection(name, create=False, embedder=embedder)  # type: ignore[arg-type]
            coll.search(queries[0])  # warm: loads the vector matrix
            times = []
            for q in queries:
                start = time.perf_counter()
                coll.search(q, limit=10)
                times.append((time.perf_counter() - start) * 1000)
        out[f"{label}_p50"] = percentile(times, 50)
        out[f"{label}_p95"] = percentile(times, 95)
    return out


def help_wall_time(runs: int = 5) -> float:
    exe = Path(sys.executable).with_name("semsearch")
    times = [
        timed(lambda: subprocess.run([str(exe), "--help"], capture_output=True, check=True))
        for _ in range(runs)
    ]
    return float(np.median(times))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--no-scifact", action="store_true")
    args = parser.parse_args()
    model = LocalEmbedder()
    model.embed_documents(["warm up the model"] * 8)
    workdir = Path(tempfile.mkdtemp(prefix="semsearch-bench-"))
    rows = [
        bench_corpus(
            "foam",
            model,
            lambda c: index_folder(c, DATA / "vault" / "foam-docs"),
            workdir,
            VAULT_SCHEMA,
        )
    ]
    if not args.no_scifact:
        records = scifact_records()
        rows.append(bench_corpus("scifact", model, lambda c: c.upsert(records), workdir, None))
    queries = [json.loads(line)["text"] for line in (DATA / "scifact" / "queries.jsonl").open()][
        : args.queries
    ]
    target = rows[-1]
    latency = query_latency(target["path"], str(target["corpus"]), model, queries)  # type: ignore[arg-type]
    help_s = help_wall_time()
    shutil.rmtree(workdir, ignore_errors=True)

    table = markdown_table(
        [
            "corpus",
            "records",
            "chunks",
            "index s",
            "chunks/s",
            "raw encode s",
            "raw chunks/s",
            "ours / raw",
            "file MB",
        ],
        [
            [
                r["corpus"],
                r["records"],
                r["chunks"],
                f"{r['index_s']:.1f}",
                f"{r['chunks_per_s']:.0f}",
                f"{r['raw_s']:.1f}",
                f"{r['raw_chunks_per_s']:.0f}",
                f"{r['ratio']:.3f}",
                f"{r['mb']:.1f}",
            ]
            for r in rows
        ],
    )
    lat = markdown_table(
        ["query latency (ms, limit 10, warm)", "p50", "p95"],
        [
            [
                "search only (query vector precomputed)",
                f"{latency['search_only_p50']:.2f}",
                f"{latency['search_only_p95']:.2f}",
            ],
            [
                "including query embedding",
                f"{latency['with_embedding_p50']:.2f}",
                f"{latency['with_embedding_p95']:.2f}",
            ],
        ],
    )
    body = (
        "## Core: indexing throughput and query latency\n\n"
        f"Machine: {machine_info()}.\n\n"
        f"Command: `.venv/bin/python benchmarks/indexing.py --queries {args.queries}`\n\n"
        "`ours / raw` is semsearch's whole index time (chunking with the model's tokenizer, SQLite "
        "writes, embedding) divided by `SentenceTransformer.encode(batch_size=32)` on exactly the "
        "chunk texts semsearch embedded, in the same run (mean of a run before and after). "
        "Target: at most 1.10.\n\n"
        f"{table}\n\n"
        f"Queries: the first {len(queries)} SciFact queries against the {target['corpus']} index "
        f"({target['chunks']} chunks, exact numpy scan).\n\n"
        f"{lat}\n\n"
        f"`semsearch --help` wall time: {help_s * 1000:.0f} ms (median of 5; torch is never imported).\n"
    )
    print(body)
    write_section("indexing", body)


if __name__ == "__main__":
    main()
