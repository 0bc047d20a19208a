"""`semsearch eval BEIR_DIR`: retrieval quality (nDCG@10, recall@100, MRR@10) per search mode."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from semsearch import settings
from semsearch.cli.common import cli_errors, out
from semsearch.cli.rerank_opts import RerankOpt, RerankTopNOpt
from semsearch.cli.search_cmd import check_min_score

if TYPE_CHECKING:
    from semsearch.collection import Collection
    from semsearch.embedders.base import Embedder
    from semsearch.evaluation import BeirDataset, EvalReport

ENV_CACHE_DIR = "SEMSEARCH_CACHE_DIR"
#: Not SEMSEARCH_LOCATION (serve's): an evaluation writes its own collection into the store.
ENV_EVAL_LOCATION = "SEMSEARCH_EVAL_LOCATION"


def default_cache_dir() -> str:
    """``$XDG_CACHE_HOME/semsearch``, else ``~/.cache/semsearch``."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "semsearch")


@cli_errors
def eval_beir(
    beir_dir: Annotated[
        Path, typer.Argument(help="BEIR folder: corpus.jsonl, queries.jsonl, qrels/<split>.tsv.")
    ],
    split: Annotated[str, typer.Option("--split", help="qrels split to score.")] = "test",
    modes: Annotated[
        str, typer.Option("--modes", help="Comma-separated: keyword,semantic,hybrid.")
    ] = "keyword,semantic,hybrid",
    limit: Annotated[
        int,
        typer.Option(
            "--limit",
            "-n",
            help="Hits per query for nDCG@10 and MRR@10 (recall@100 runs a second search of "
            "100 hits).",
        ),
    ] = 10,
    min_score: Annotated[
        float | None,
        typer.Option(
            "--min-score",
            help="The floor every search runs with (default: each mode's default floor, what "
            "users get; -1 keeps all hits).",
        ),
    ] = None,
    model: Annotated[
        str | None,
        typer.Option("--model", envvar=settings.ENV_MODEL, show_envvar=True, help="Embedder spec."),
    ] = None,
    cache_dir: Annotated[
        str | None,
        typer.Option(
            "--cache-dir",
            envvar=ENV_CACHE_DIR,
            show_envvar=True,
            help="Where indexes are cached (default ~/.cache/semsearch).",
        ),
    ] = None,
    location: Annotated[
        str | None,
        typer.Option(
            "--location",
            envvar=ENV_EVAL_LOCATION,
            show_envvar=True,
            help="Evaluate on this store instead of the cached SQLite index: a postgresql:// "
            "URL, a Milvus location or a SQLite file (its collection 'beir' is created or "
            "updated; the cached index's vectors are reused when it exists).",
        ),
    ] = None,
    rerank: RerankOpt = None,
    rerank_top_n: RerankTopNOpt = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON document.")] = False,
) -> None:
    """Score keyword, semantic and hybrid search on a BEIR data set (index cached per corpus+model).

    With --rerank, every mode's top hits are reranked: run once with and once without it to
    measure what the reranker adds (nDCG@10) and costs (p50/p95 ms). With --location, the same
    evaluation runs on another store (PostgreSQL, Milvus), so a store switch can be checked on
    your own data before it is made.
    """
    from semsearch.embedders.registry import resolve_embedder
    from semsearch.evaluation import check_args, load_beir, run_eval
    from semsearch.rerank import plan_rerank

    wanted = check_args(modes.split(","), limit)
    check_min_score(min_score)
    plan = plan_rerank(rerank or None, rerank_top_n)
    dataset = load_beir(beir_dir, split)
    embedder = resolve_embedder(model)
    start = time.perf_counter()
    coll = _open(dataset, embedder, cache_dir or default_cache_dir(), wanted, location)
    built = time.perf_counter() - start
    try:
        report = run_eval(
            dataset, coll, wanted, limit, plan, "default" if min_score is None else min_score
        )
    finally:
        coll.store.close()
    if as_json:
        data = report.to_dict() | {"documents": len(dataset.corpus), "index_seconds": built}
        typer.echo(json.dumps(data, indent=2))
        return
    _render(report, len(dataset.corpus), built)


def _open(
    dataset: BeirDataset,
    embedder: Embedder,
    cache_dir: str,
    modes: list[str],
    location: str | None = None,
) -> Collection:
    from semsearch.cli.progress import ProgressLine
    from semsearch.database import check_location
    from semsearch.evaluation import open_index

    if location is not None:
        check_location(location)  # an unsupported location fails before any work
    with ProgressLine("embedding chunks", "chunks") as bar:
        return open_index(
            dataset, embedder, cache_dir, embed=modes != ["keyword"], progress=bar.advance,
            location=location,
        )  # fmt: skip


def _render(report: EvalReport, documents: int, built: float) -> None:
    from rich.markup import escape
    from rich.table import Table

    out.print(
        f"[bold]{escape(report.dataset)}[/] ({escape(report.split)}): {report.modes[0].queries} queries, "
        f"{documents} documents; model {escape(report.model_id)}; index ready in {built:.1f} s"
    )
    if report.reranker:
        out.print(f"reranked by {escape(report.reranker)}")
    floor = "each mode's default floor" if report.min_score == "default" else report.min_score
    out.print(f"limit {report.limit} (recall@100: a search of 100 hits); min_score: {floor}")
    table = Table("mode", "nDCG@10", "recall@100", "MRR@10", "empty", "p50 ms", "p95 ms")
    for m in report.modes:
        table.add_row(
            m.mode,
            f"{m.ndcg_at_10:.4f}",
            f"{m.recall_at_100:.4f}",
            f"{m.mrr_at_10:.4f}",
            str(m.empty),
            f"{m.latency_p50_ms:.1f}",
            f"{m.latency_p95_ms:.1f}",
        )
    out.print(table)
    for m in report.modes:
        if m.degraded:
            out.print(f"[yellow]{m.mode}: {m.degraded} of {m.queries} results degraded[/]")
    out.print(f"[dim]index: {escape(report.index)}[/]")
