"""Hybrid search's leg depth and absent-record rule on BEIR SciFact: quality and time.

Each leg of a hybrid search returns its top ``depth`` records; the fusion
(semsearch.search.HYBRID_FUSION, convex 0.75 semantic / 0.25 keyword from theoretical minimums)
must score a record that one leg returned and the other did not. ``absent="floor"`` gives it
0 from the leg that lacks it; ``absent="lowest"`` gives it that leg's lowest normalised score
when the leg was cut at its depth (a record outside a leg's top D scores at most its D-th).

For each (rule, depth): nDCG@10 and MRR@10 over SciFact's 300 test queries (limit 10), and the
p50 of a warm hybrid search with the query embedding computed beforehand and excluded, on the
cached `semsearch eval` index (default model, sentence windows).

Usage: .venv/bin/python benchmarks/hybrid_depth.py [../shared/data/scifact] [--no-write]
(SEMSEARCH_CACHE_DIR names the cache folder: the index must have been built with sentence
windows, which a cache built before windows lacks; point it at a fresh folder to build one.)
Writes the "hybrid-depth" section of docs/benchmarks.md.
"""

from __future__ import annotations

import dataclasses
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.report import machine_info, markdown_table, write_section
from semsearch import search
from semsearch.cli.eval_cmd import default_cache_dir
from semsearch.collection import Collection
from semsearch.embedders.query_cache import CachedEmbedder, QueryCache
from semsearch.embedders.registry import resolve_embedder
from semsearch.evaluation import load_beir, open_index, score_run

DEPTHS = (15, 20, 30, 40, 50, 100, 200)
RULES = ("floor", "lowest")


def measure(
    coll: Collection, queries: dict[str, str], qrels: dict, rule: str, depth: int
) -> list[str]:
    """[nDCG@10, MRR@10, p50 ms] of hybrid search with ``rule`` and ``depth``."""
    saved = search.HYBRID_FUSION, search.HYBRID_DEPTH
    search.HYBRID_FUSION = dataclasses.replace(saved[0], absent=rule)  # type: ignore[arg-type]
    search.HYBRID_DEPTH = depth
    try:
        run, times = {}, []
        for qid, text in queries.items():
            start = time.perf_counter()
            hits = coll.search(text, mode="hybrid", limit=10).hits
            times.append((time.perf_counter() - start) * 1000)
            run[qid] = {h.id: float(h.score) for h in hits}
    finally:
        search.HYBRID_FUSION, search.HYBRID_DEPTH = saved
    scores = score_run(qrels, run)
    return [
        f"{scores['ndcg_cut_10']:.4f}",
        f"{scores['mrr_10']:.4f}",
        f"{statistics.median(times):.1f}",
    ]


def main(beir_dir: str, write: bool = True) -> None:
    data = load_beir(beir_dir)
    embedder = resolve_embedder(os.environ.get("SEMSEARCH_MODEL"))
    cached = CachedEmbedder(embedder, QueryCache(len(data.queries) + 1))
    cache_dir = os.environ.get("SEMSEARCH_CACHE_DIR") or default_cache_dir()
    coll = open_index(data, cached, cache_dir)
    try:
        for text in data.queries.values():  # embedded once, before any timing; warms caches
            coll.search(text, mode="hybrid", limit=10)
        default = (search.HYBRID_FUSION.absent, search.HYBRID_DEPTH)
        rows = [
            [
                f"{rule}, depth {depth}" + (" (default)" if (rule, depth) == default else ""),
                *measure(coll, data.queries, data.qrels, rule, depth),
            ]
            for rule in RULES
            for depth in DEPTHS
        ]
    finally:
        coll.store.close()
    table = markdown_table(["absent rule, leg depth", "nDCG@10", "MRR@10", "hybrid p50 ms"], rows)
    body = "\n\n".join([
        "## Hybrid search: leg depth and the absent-record rule (SciFact)",
        f"SciFact's 5,183 documents ({data.name}, cached eval index, default model, sentence "
        "windows); 300 test queries, limit 10, warm; query embeddings computed beforehand and "
        "excluded. `floor`: a record one leg lacks gets 0 from it; `lowest`: it gets the leg's "
        "lowest normalised score when the leg was cut at its depth "
        "(semsearch.fusion.weighted). The semantic leg rescores the records of its depth with "
        "their sentence windows (before stop 36 it rescored at least 50 whatever the depth).",
        table,
        machine_info(),
    ])  # fmt: skip
    print(table)
    if write:
        write_section("hybrid-depth", body)


if __name__ == "__main__":
    main(
        sys.argv[1]
        if len(sys.argv) > 1 and not sys.argv[1].startswith("--")
        else "../shared/data/scifact",
        "--no-write" not in sys.argv,
    )
