"""`semsearch stats`: counts per collection, without loading the model."""

from __future__ import annotations

import dataclasses
import json
from typing import Annotated

import typer
from rich.markup import escape

from semsearch import settings
from semsearch.cli.common import IndexOpt, cli_errors, out, require_index


@cli_errors
def stats(
    index: IndexOpt = settings.DEFAULT_INDEX,
    collection: Annotated[
        str | None, typer.Option("--collection", "-c", help="Only this collection.")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON document.")] = False,
) -> None:
    """Show records, chunks (embedded, pending, failed), model and file size."""
    import semsearch

    require_index(index)
    db = semsearch.connect(index)
    names = [collection] if collection else db.collections()
    rows = [db.collection(name, create=False).stats() for name in names]
    size = getattr(db.store, "file_size", lambda: 0)()
    if as_json:
        doc = {"index": index, "bytes": size, "collections": [dataclasses.asdict(r) for r in rows]}
        typer.echo(json.dumps(doc, indent=2))
        return
    out.print(f"[bold]{escape(index)}[/]  {size / 1e6:.1f} MB, {len(rows)} collection(s)")
    for s in rows:
        out.print(
            f"  [bold]{escape(s.name)}[/]: {s.records} records, {s.chunks} chunks "
            f"({s.embedded} embedded, {s.pending} pending, {s.failed} failed); "
            f"model {escape(s.model_id)} ({s.dim or '?'}-d); last write {s.last_updated}"
        )
        if s.health is not None:  # semsearch/health.py: ok | syncing | degraded | quarantined
            why = f": {escape(s.health['reason'])}" if s.health["reason"] else ""
            out.print(f"    health: {s.health['state']}{why}")
            for rel in s.health["failed"]:
                out.print(f"      failed: {escape(rel)}")
