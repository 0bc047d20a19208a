"""`semsearch mcp`: serve an index to AI agents over MCP (stdio or streamable HTTP)."""

from __future__ import annotations

import os
import sys
from typing import Annotated, Literal

import typer

from semsearch import settings
from semsearch.cli.common import (
    CollectionOpt,
    KeywordTokenizerOpt,
    WatchNewFolderOpt,
    cli_errors,
    start_watch,
)
from semsearch.cli.rerank_opts import RerankerOpt, RerankTopNOpt
from semsearch.errors import SemsearchError

#: Kept equal to semsearch.server.mcp.server.ENV_TOKEN (not imported: the SDK loads only when serving).
ENV_TOKEN = "SEMSEARCH_MCP_TOKEN"


@cli_errors
def mcp(
    index: Annotated[
        str | None,
        typer.Option(
            "--index",
            "-i",
            envvar=settings.ENV_INDEX,
            show_envvar=True,
            help=f"Index file (*.embed.db). Default: {settings.DEFAULT_INDEX}.",
        ),
    ] = None,
    location: Annotated[
        str | None,
        typer.Option("--location", help="A store location instead of --index (e.g. a URL)."),
    ] = None,
    collection: CollectionOpt = settings.DEFAULT_COLLECTION,
    transport: Annotated[
        Literal["stdio", "http"], typer.Option("--transport", "-t", help="stdio or http.")
    ] = "stdio",
    host: Annotated[str, typer.Option("--host", help="HTTP: address to bind.")] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", "-p", help="HTTP: port.")] = 8765,
    exclude: Annotated[
        list[str] | None,
        typer.Option("--exclude", help="Never show ids/paths matching this glob (repeatable)."),
    ] = None,
    read_paths: Annotated[
        list[str] | None,
        typer.Option(
            "--read-paths", help="Show only ids/paths matching one of these globs (repeatable)."
        ),
    ] = None,
    allow_writes: Annotated[
        bool, typer.Option("--allow-writes", help="Expose the upsert, delete and reindex tools.")
    ] = False,
    keyword_tokenizer: KeywordTokenizerOpt = None,
    token: Annotated[
        str | None,
        typer.Option(
            "--token",
            envvar=ENV_TOKEN,
            show_envvar=True,
            show_default=False,
            help="HTTP: require `Authorization: Bearer <token>`.",
        ),
    ] = None,
    allow_origin: Annotated[
        list[str] | None,
        typer.Option("--allow-origin", help="HTTP: also accept this browser Origin (repeatable)."),
    ] = None,
    allowed_host: Annotated[
        list[str] | None,
        typer.Option(
            "--allowed-host",
            help="HTTP: also answer this Host name (repeatable); else loopback names and the "
            "bound address only. Env: SEMSEARCH_ALLOWED_HOSTS (comma-separated).",
        ),
    ] = None,
    watch: Annotated[
        str | None,
        typer.Option("--watch", help="Keep the collection in step with this markdown folder."),
    ] = None,
    new_folder: WatchNewFolderOpt = False,
    reranker: RerankerOpt = None,
    rerank_top_n: RerankTopNOpt = None,
) -> None:
    """Serve the index to AI agents (Claude, Cursor, ...) as an MCP server. Read-only by default."""
    if index and location:
        raise SemsearchError(
            "give --index or --location, not both",
            hint=f"{settings.ENV_INDEX} counts as --index; unset it to use --location",
        )
    from semsearch.server.mcp.server import McpConfig, serve

    config = McpConfig(
        location=location or index or settings.DEFAULT_INDEX,
        collection=collection,
        exclude=tuple(exclude or ()),
        read_paths=tuple(read_paths or ()),
        allow_writes=allow_writes,
        model=os.environ.get(settings.ENV_MODEL),
        keyword_tokenizer=keyword_tokenizer,
        reranker=reranker or None,
        rerank_top_n=rerank_top_n,
    )
    watcher = start_watch(  # its lines go to stderr: stdout carries the stdio protocol
        watch, config.location, collection, new_folder,
        lambda line: print(f"semsearch watch: {line}", file=sys.stderr),
    )  # fmt: skip
    try:
        serve(
            config,
            transport=transport,
            host=host,
            port=port,
            token=token or None,
            allowed_origins=tuple(allow_origin or ()),
            allowed_hosts=tuple(allowed_host or ()),
        )
    finally:
        if watcher is not None:
            watcher.stop()
