"""The `semsearch` command: one typer app; each command group lives in its own module."""

from __future__ import annotations

import typer

from semsearch.cli import (
    compact_cmd,
    eval_cmd,
    import_cmd,
    index_cmd,
    mcp_cmd,
    models_cmd,
    reembed_cmd,
    search_cmd,
    serve_cmd,
    stats_cmd,
    watch_cmd,
)

app = typer.Typer(
    name="semsearch",
    help="Semantic, keyword and hybrid search over your own notes and data.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)
app.command("index")(index_cmd.index)
app.command("search")(search_cmd.search)
app.command("stats")(stats_cmd.stats)
app.command("import")(import_cmd.import_records)
app.command("reembed")(reembed_cmd.reembed)
app.command("reindex")(reembed_cmd.reindex)
app.command("mcp")(mcp_cmd.mcp)
app.command("serve")(serve_cmd.serve)
app.command("eval")(eval_cmd.eval_beir)
app.command("watch")(watch_cmd.watch)
app.command("compact")(compact_cmd.compact)
app.add_typer(models_cmd.models_app, name="models")


def main() -> None:
    """Console-script entry point."""
    app()


if __name__ == "__main__":
    main()
