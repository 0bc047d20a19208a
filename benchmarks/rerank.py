"""Reranking cost: the per-pair time of cross-encoders on the ONNX engine, and the formula.

Usage (from the project root, after `make install-test`; needs transformers to write the
test model's tokenizer files):

    .venv/bin/python -m benchmarks.rerank            # writes the `rerank` section
    .venv/bin/python -m benchmarks.rerank --quick    # a smoke run: few repeats, prints only

No cross-encoder weights ship in any package installable here, so the models are random-weight
folders built by the test helper (tests/engine/conftest.py ``make_tiny_cross_encoder``): the
tiny test model (hidden 32, 2 layers), and one of the shape of
cross-encoder/ms-marco-MiniLM-L6-v2 (hidden 384, 6 layers, 12 heads). Time per pair depends
on the shape and the pair length, not on the weights' values, so the second row is what that
model costs; its quality is not measured here (docs/retrieval.md says how to measure it).

Pairs: one SciFact query against SciFact abstracts (synthetic text when ../shared/data is
absent), truncated to each model's window. A reranked search adds at most
``max(top_n, limit) x t_pair`` to retrieval, plus one tokenisation pass.
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

from benchmarks.report import machine_info, markdown_table, write_section
from semsearch.rerank.local import LocalReranker
from tests.engine.conftest import make_tiny_cross_encoder

ROOT = Path(__file__).resolve().parents[1]
SCIFACT = ROOT.parent / "shared" / "data" / "scifact"
PACKAGES = ("numpy", "onnxruntime", "onnx", "tokenizers")
MODELS = {
    "tiny test model (hidden 32, 2 layers, 40-token pairs)": {"max_length": 40},
    "MiniLM-L6 shape (hidden 384, 6 layers, 256-token pairs)": {
        "hidden": 384, "layers": 6, "heads": 12, "positions": 512, "max_length": 256,
    },
}  # fmt: skip


def _texts(n: int) -> tuple[str, list[str]]:
    """A query and ``n`` passages: SciFact's when present, else repeated plain sentences."""
    corpus, queries = SCIFACT / "corpus.jsonl", SCIFACT / "queries.jsonl"
    if corpus.is_file() and queries.is_file():
        with queries.open(encoding="utf-8") as handle:
            query = json.loads(handle.readline())["text"]
        texts = []
        with corpus.open(encoding="utf-8") as handle:
            for line in handle:
                texts.append(json.loads(line)["text"])
                if len(texts) == n:
                    break
        return query, texts
    sentence = "The lighthouse key is kept under the blue pot beside the compost heap. "
    return "where is the lighthouse key", [sentence * 20 for _ in range(n)]


def _per_pair_ms(reranker: LocalReranker, query: str, texts: list[str], repeats: int) -> float:
    reranker.rerank(query, texts[:2])  # builds and loads the graph outside the timing
    runs = []
    for _ in range(repeats):
        start = time.perf_counter()
        reranker.rerank(query, texts)
        runs.append((time.perf_counter() - start) * 1000 / len(texts))
    return statistics.median(runs)


def measure(quick: bool) -> str:
    """The per-pair table in markdown."""
    repeats, sizes = (2, (10,)) if quick else (9, (10, 50))
    query, texts = _texts(max(sizes))
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        os.environ.setdefault("SEMSEARCH_CACHE_DIR", str(Path(tmp) / "cache"))
        for label, shape in MODELS.items():
            folder = make_tiny_cross_encoder(
                Path(tmp) / label.split(" (")[0].replace(" ", "-"), **shape
            )
            for threads in (1, None):
                reranker = LocalReranker(folder, threads=threads)
                for n in sizes:
                    ms = _per_pair_ms(reranker, query, texts[:n], repeats)
                    used = "1" if threads == 1 else f"all ({reranker._runner_once().threads})"
                    rows.append([label, used, n, f"{ms:.3f}", f"{ms * 50:.1f}"])
                    print(rows[-1], flush=True)
    return (
        "## Reranking: per-pair time on the ONNX engine\n\n"
        f"Machine: {machine_info(PACKAGES)}.\n"
        "Command: `.venv/bin/python -m benchmarks.rerank`: median of 9 calls of "
        "`LocalReranker.rerank(query, N passages)` (fp32), divided by N; random-weight models "
        "of the shapes named (time does not depend on weight values).\n\n"
        "A reranked search adds at most `max(rerank_top_n, limit) x t_pair` to its retrieval "
        "time; the last column is that bound for the default `rerank_top_n = 50`.\n\n"
        + markdown_table(["model", "threads", "pairs per call", "t_pair ms", "50 pairs ms"], rows)
    )


def main(argv: list[str]) -> None:
    quick = "--quick" in argv
    body = measure(quick)
    print(body)
    if not quick:
        write_section("rerank", body)


if __name__ == "__main__":
    main(sys.argv[1:])
