"""The reranking options shared by `search`, `eval`, `serve` and `mcp`."""

from __future__ import annotations

from typing import Annotated

import typer

from semsearch import settings

__all__ = ["RerankOpt", "RerankTopNOpt", "RerankerOpt"]

_SPEC_HELP = (
    "Rerank the top N hits with this reranker: local:<cross-encoder folder>, cohere:<model>, "
    "jina:<model> or voyage:<model> (scores become sigmoid(logit) in [0, 1])."
)

RerankOpt = Annotated[
    str | None,
    typer.Option(
        "--rerank", envvar=settings.ENV_RERANKER, show_envvar=True, metavar="SPEC", help=_SPEC_HELP
    ),
]
RerankerOpt = Annotated[
    str | None,
    typer.Option(
        "--reranker",
        envvar=settings.ENV_RERANKER,
        show_envvar=True,
        metavar="SPEC",
        help="Server-wide reranker: every search reranks with it unless a request turns "
        "reranking off. " + _SPEC_HELP,
    ),
]
RerankTopNOpt = Annotated[
    int | None,
    typer.Option(
        "--rerank-top-n",
        min=1,
        max=1000,
        envvar=settings.ENV_RERANK_TOP_N,
        show_envvar=True,
        help="Hits rescored by the reranker (default 50).",
    ),
]
