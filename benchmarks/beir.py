"""Retrieval quality on a BEIR data set: each leg, candidate fusions, and the chosen default.

Usage (from the project root; the index is cached, so only the first run embeds):

    HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/beir.py ../shared/data/scifact

1. Opens the cached index of ``semsearch eval`` (real model, all-MiniLM-L6-v2 by default).
2. Runs the keyword and the semantic leg once per query, record-level, to depth 200.
3. Fuses those legs offline with every candidate (RRF with several k and weights, convex
   combination with min-max or theoretical-minimum normalisation, leg depths 20-200) and scores
   each with trec_eval (pytrec-eval-terrier). Fusion is a pure function of the two lists, so this
   equals running hybrid search with that configuration.
4. Checks the choice against a 2-fold split of the queries (choose on one half, score on the
   other) to show how much of the margin is fitted to this split.
5. Runs ``run_eval`` end to end (keyword, semantic, hybrid with the library's default) for the
   latency figures, and writes the section ``beir`` of docs/benchmarks.md.
"""

from __future__ import annotations

import os
import sqlite3
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

from benchmarks.report import machine_info, markdown_table, write_section
from semsearch import search
from semsearch.cli.eval_cmd import default_cache_dir
from semsearch.embedders.registry import resolve_embedder
from semsearch.evaluation import load_beir, open_index, run_eval, score_run
from semsearch.fusion import Fusion

LEG_DEPTH = 200
EVAL_DEPTH = 100  # hits per query in every scored run (recall@100)
Legs = dict[str, dict[str, list[tuple[str, float]]]]  # mode -> query -> ranked (id, score)


def legs(coll, queries: dict[str, str]) -> Legs:
    """Each leg's record-level ranking per query, as hybrid search sees it (no min_score)."""
    out: Legs = {"semantic": {}, "keyword": {}}
    for mode in out:
        for qid, text in queries.items():
            result = coll.search(text, mode=mode, limit=LEG_DEPTH, min_score=None)
            out[mode][qid] = [(h.id, h.score) for h in result]
    return out


def as_run(ranked: dict[str, list[tuple[str, float]]]) -> dict[str, dict[str, float]]:
    """Rank-derived scores, like ``run_mode``: trec_eval must not re-sort our ties."""
    return {
        q: {d: float(EVAL_DEPTH - r) for r, (d, _) in enumerate(docs[:EVAL_DEPTH])}
        for q, docs in ranked.items()
    }


def fused(legs_: Legs, fusion: Fusion, depth: int) -> dict[str, list[tuple[str, float]]]:
    return {
        q: fusion.fuse(legs_["semantic"][q][:depth], legs_["keyword"][q][:depth])
        for q in legs_["semantic"]
    }


def candidates() -> list[tuple[str, Fusion, int]]:
    """(label, fusion, leg depth) for every configuration measured."""
    out: list[tuple[str, Fusion, int]] = []
    for k in (1, 5, 10, 20, 40, 60, 100):
        for ws in ((1, 1), (1, 1.5), (1, 2), (1.5, 1), (2, 1)):
            out.append((f"rrf k={k} w={ws[0]:g}:{ws[1]:g}", Fusion("rrf", ws, k), 100))
    for floors, name in (((None, None), "minmax"), ((-1.0, 0.0), "tmin")):
        for a in (0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8):
            f = Fusion("weighted", (a, round(1 - a, 2)), floors=floors)
            out.append((f"convex {name} a={a:g}", f, 100))
    return out


def depth_sweep(best: dict[str, Fusion]) -> list[tuple[str, Fusion, int]]:
    return [(f"{label} depth={d}", f, d) for label, f in best.items() for d in (20, 50, 100, 200)]


def score_all(
    qrels, legs_: Legs, configs: list[tuple[str, Fusion, int]]
) -> list[tuple[str, Fusion, int, dict[str, float]]]:
    return [(lab, f, d, score_run(qrels, as_run(fused(legs_, f, d)))) for lab, f, d in configs]


def two_fold(qrels, legs_: Legs, configs, pick: Callable) -> list[list[object]]:
    """Pick the best config of a family on one half of the queries, score it on the other."""
    ids = sorted(qrels)
    folds = [set(ids[0::2]), set(ids[1::2])]
    rows = []
    for i, (tune, test) in enumerate([(folds[0], folds[1]), (folds[1], folds[0])]):
        sub = {q: qrels[q] for q in tune}
        best = max(
            (c for c in configs if pick(c[0])),
            key=lambda c: score_run(sub, as_run(fused(legs_, c[1], c[2])))["ndcg_cut_10"],
        )
        held = {q: qrels[q] for q in test}
        run = as_run(fused(legs_, best[1], best[2]))
        legs_held = {m: score_run(held, as_run(legs_[m]))["ndcg_cut_10"] for m in legs_}
        hybrid = score_run(held, run)["ndcg_cut_10"]
        rows.append(
            [
                f"fold {i + 1}",
                best[0],
                f"{hybrid:.4f}",
                *(f"{legs_held[m]:.4f}" for m in ("keyword", "semantic")),
            ]
        )
    return rows


def main(beir_dir: str, write: bool = True) -> None:
    dataset = load_beir(beir_dir, "test")
    embedder = resolve_embedder(os.environ.get("SEMSEARCH_MODEL"))
    t0 = time.perf_counter()
    coll = open_index(
        dataset, embedder, os.environ.get("SEMSEARCH_CACHE_DIR") or default_cache_dir()
    )
    print(f"index ready in {time.perf_counter() - t0:.1f} s: {coll.store.location}", flush=True)
    legs_ = legs(coll, dataset.queries)
    qrels = dataset.qrels
    single = {m: score_run(qrels, as_run(legs_[m])) for m in legs_}
    scored = score_all(qrels, legs_, candidates())
    families = {"rrf": "rrf", "convex minmax": "convex minmax", "convex tmin": "convex tmin"}
    best = {
        fam: max((s for s in scored if s[0].startswith(prefix)), key=lambda s: s[3]["ndcg_cut_10"])
        for fam, prefix in families.items()
    }
    sweep = score_all(qrels, legs_, depth_sweep({s[0]: s[1] for s in best.values()}))
    folds = [
        row
        for prefix in families.values()
        for row in two_fold(qrels, legs_, candidates(), lambda lab, p=prefix: lab.startswith(p))
    ]
    offline = score_run(qrels, as_run(fused(legs_, search.HYBRID_FUSION, search.HYBRID_DEPTH)))
    report = run_eval(dataset, coll, ["keyword", "semantic", "hybrid"], EVAL_DEPTH)
    coll.store.close()
    body = render(dataset, coll.model_id, single, scored, sweep, folds, report, beir_dir)
    body += f"\n\nThe same default fused offline from the legs above: nDCG@10 {offline['ndcg_cut_10']:.4f}."
    print(body)
    if write:
        write_section("beir", body)


def fmt(m: dict[str, float]) -> list[str]:
    return [f"{m['ndcg_cut_10']:.4f}", f"{m['recall_100']:.4f}", f"{m['mrr_10']:.4f}"]


def render(dataset, model_id, single, scored, sweep, folds, report, beir_dir) -> str:
    heads = ["configuration", "nDCG@10", "recall@100", "MRR@10"]
    legs_rows = [[f"{m} leg alone", *fmt(single[m])] for m in ("keyword", "semantic")]
    top = sorted(scored, key=lambda s: -s[3]["ndcg_cut_10"])
    cand_rows = [[lab, *fmt(m)] for lab, _f, _d, m in top]
    sweep_rows = [[lab, *fmt(m)] for lab, _f, _d, m in sweep]
    e2e = [
        [m.mode, f"{m.ndcg_at_10:.4f}", f"{m.recall_at_100:.4f}", f"{m.mrr_at_10:.4f}",
         f"{m.latency_p50_ms:.1f}", f"{m.latency_p95_ms:.1f}"]
        for m in report.modes
    ]  # fmt: skip
    default = search.HYBRID_FUSION
    return "\n\n".join(
        [
            f"## Retrieval quality: BEIR {dataset.name} ({dataset.split}, "
            f"{len(dataset.queries)} queries, {len(dataset.corpus)} documents)",
            f"Machine: {machine_info(('numpy', 'torch', 'sentence-transformers', 'pytrec-eval-terrier'))}; "
            f"SQLite {sqlite3.sqlite_version}. Model: `{model_id}`.",
            f"Command: `HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/beir.py {beir_dir}` "
            f"(end-to-end rows: `semsearch eval {beir_dir}`). Metrics: trec_eval via "
            "pytrec-eval-terrier; one record per document (title + text), hits are record-level "
            "(best chunk); semantic runs use `min_score=None`.",
            "### End to end (`semsearch eval`, library defaults)",
            f"Hybrid default: `{default}`, leg depth {search.HYBRID_DEPTH}.",
            markdown_table(["mode", "nDCG@10", "recall@100", "MRR@10", "p50 ms", "p95 ms"], e2e),
            "### Each leg alone (depth 100)",
            markdown_table(heads, legs_rows),
            "### Fusion candidates (leg depth 100), best first",
            markdown_table(heads, cand_rows),
            "### Leg depth, for the best of each family",
            markdown_table(heads, sweep_rows),
            "### Two-fold check (choose on one half of the queries, score on the other)",
            markdown_table(
                ["fold", "chosen on the other half", "hybrid nDCG@10", "keyword", "semantic"],
                folds,
            ),
        ]
    )


if __name__ == "__main__":
    args = [a for a in sys.argv[1:] if a != "--dry-run"]  # --dry-run: print, do not write docs
    main(args[0] if args else "../shared/data/scifact", write="--dry-run" not in sys.argv)
