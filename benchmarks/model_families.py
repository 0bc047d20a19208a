"""Cold CLI search and query time per encoder family on the ONNX engine (issue 47).

The target: a cold CLI search with a model of all-MiniLM-L6-v2's size stays within 2x a
keyword search (as issue 18 set for MiniLM). Models: the packaged MiniLM (BERT), the same
files pulled from a fake Hub under a Hub id (``local:<org>/<name>``, resolved through the model
cache), and random XLM-RoBERTa and MPNet models of MiniLM's shape (384 hidden, 6 layers, 12
heads, 1536 feed-forward, 30,522-row embedding table; tests/engine/tiny_families.py) with a
tokenizer of 8,000 pieces trained on docs/ (Unigram for XLM-R, WordPiece for MPNet). Each model
indexes the repository's docs/ folder, its graph is built beforehand (``models prepare``), then
whole processes are timed: ``semsearch search`` semantic and keyword on that index (median of 7,
each run measured by a fresh parent), and warm ``embed_query`` in process (p50 of 200).
Prints a table and rewrites the ``model-families`` section of docs/benchmarks.md.

    .venv/bin/python -m benchmarks.model_families [--runs 7] [--no-write]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.engine import _load as load_average
from benchmarks.engine import _timed_process
from benchmarks.report import machine_info, markdown_table, write_section
from tests.engine.fake_hub import FakeHub
from tests.engine.tiny_families import make_tiny_family

SECTION = "model-families"
PACKAGES = ("numpy", "onnxruntime", "tokenizers", "transformers", "huggingface_hub")
ROOT = Path(__file__).resolve().parents[1]
MINILM_SHAPE = (384, 6, 12, 1536)
QUERY = "privacy excludes"
HEADERS = [
    "model",
    "family",
    "cold semantic search s",
    "cold keyword search s",
    "ratio",
    "warm query p50 ms",
    "load average",
]


def _query_p50(spec: str, runs: int = 200) -> float:
    """Median ms of ``embed_query`` on one model, in this process, after one warm-up."""
    from semsearch.embedders.registry import resolve_embedder

    embedder = resolve_embedder(spec)
    embedder.embed_query("warm up")
    times = []
    for i in range(runs):
        start = time.perf_counter()
        embedder.embed_query(f"{QUERY} {i}")
        times.append((time.perf_counter() - start) * 1000)
    return sorted(times)[len(times) // 2]


def _row(label: str, family: str, spec: str, work: Path, runs: int) -> list[object]:
    exe = str(Path(sys.executable).with_name("semsearch"))
    env = {**os.environ, "SEMSEARCH_MODEL": spec}
    index = work / f"{label.replace('/', '-')}.embed.db"
    subprocess.run([exe, "models", "prepare", spec], check=True, env=env, capture_output=True)
    made = [exe, "index", str(ROOT / "docs"), "--index", str(index)]
    subprocess.run(made, check=True, env=env, capture_output=True)
    search = [exe, "search", QUERY, "--index", str(index)]
    semantic, _, _ = _timed_process(search, runs=runs, env=env)
    keyword, _, _ = _timed_process([*search, "--mode", "keyword"], runs=runs, env=env)
    warm = _query_p50(spec)
    row = [label, family, f"{semantic:.2f}", f"{keyword:.2f}", f"{semantic / keyword:.2f}"]
    return [*row, f"{warm:.1f}", load_average()]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args(argv)
    from semsearch.embedders.local import _packaged_model_path

    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        os.environ["SEMSEARCH_CACHE_DIR"] = str(work / "cache")
        os.environ.pop("HF_HUB_OFFLINE", None)
        repo = "semsearch-bench/all-MiniLM-L6-v2"
        with FakeHub(repo, _packaged_model_path()) as hub:
            env = {**os.environ, "HF_ENDPOINT": hub.url}
            pull = [str(Path(sys.executable).with_name("semsearch")), "models", "pull", repo]
            subprocess.run(pull, check=True, env=env, capture_output=True)
        os.environ["HF_HUB_OFFLINE"] = "1"  # searches never reach a Hub
        cases = [
            ("all-MiniLM-L6-v2 (packaged, int8)", "bert", "local:all-MiniLM-L6-v2?precision=int8"),
            (f"{repo} (pulled, int8)", "bert", f"local:{repo}?precision=int8"),
        ]
        corpus = [p.read_text(encoding="utf-8") for p in sorted((ROOT / "docs").rglob("*.md"))]
        for family in ("xlm-roberta", "mpnet"):
            folder = make_tiny_family(
                work / f"minilm-size-{family}",
                family,
                max_seq_length=256,
                size=MINILM_SHAPE,
                vocab_size=30522,
                corpus=corpus,
                pieces=8000,
            )
            cases.append(
                (f"random {family}, MiniLM's size (int8)", family, f"local:{folder}?precision=int8")
            )
        for label, family, spec in cases:
            rows.append(_row(label, family, spec, work, args.runs))
            print(rows[-1], flush=True)
    body = (
        "## Model families on the ONNX engine: cold CLI search (issue 47)\n\n"
        f"Machine: {machine_info(PACKAGES)}.\n"
        f"Command: `.venv/bin/python -m benchmarks.model_families --runs {args.runs}`: "
        "whole `semsearch search` processes on an index of docs/ built with each model, "
        f"median of {args.runs}; graphs built beforehand. Target: semantic ≤ 2x keyword.\n\n"
        + markdown_table(HEADERS, rows)
    )
    print(body)
    if not args.no_write:
        write_section(SECTION, body)


if __name__ == "__main__":
    main()
