"""`semsearch models`: the local models, their engines and ONNX cache; build the cache ahead;
pull a model from the Hugging Face Hub into the model cache."""

from __future__ import annotations

import json
import os
from typing import Annotated

import typer
from rich.markup import escape

from semsearch import settings
from semsearch.cli.common import cli_errors, out

models_app = typer.Typer(
    help="Local embedding models: engines, ONNX cache state and sizes; pull from the Hub.",
    no_args_is_help=False,
    invoke_without_command=True,
)


def _extra_specs() -> list[str]:
    configured = os.environ.get(settings.ENV_MODEL, "")
    if configured and not configured.startswith("local:") and ":" not in configured:
        configured = f"local:{configured}"
    return [configured] if configured else []


@models_app.callback()
@cli_errors
def list_models(
    ctx: typer.Context,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON document.")] = False,
) -> None:
    """List local models (the packaged default, SEMSEARCH_MODEL, pulled ones) and their cache."""
    if ctx.invoked_subcommand is not None:
        return
    from semsearch.embedders.catalog import local_models

    models = local_models(_extra_specs())
    if as_json:
        doc = [
            {
                "spec": m.spec,
                "model_id": m.model_id,
                "folder": str(m.folder) if m.folder else None,
                "engine": m.engine,
                "problem": m.problem,
                "default_precision": m.default_precision,
                "revision": m.revision,
                "cache": [
                    {
                        "precision": g.precision,
                        "path": str(g.path),
                        "built": g.built,
                        "bytes": g.bytes,
                    }
                    for g in m.graphs
                ],
            }
            for m in models
        ]
        typer.echo(json.dumps(doc, indent=2))
        return
    for m in models:
        engine = m.engine or f"unavailable: {m.problem}"
        out.print(f"[bold]{escape(m.model_id)}[/]  engine {escape(engine)}")
        if m.folder:
            out.print(f"  folder: {escape(str(m.folder))}")
        if m.revision:
            out.print(f"  revision: {m.revision} (pulled from the Hub)")
        for g in m.graphs:
            mark = " (default)" if g.precision == m.default_precision else ""
            state = f"built, {g.bytes / 1e6:.1f} MB" if g.built else "not built"
            out.print(f"  onnx {g.precision}{mark}: {state}  {escape(str(g.path))}")


@models_app.command("prepare")
@cli_errors
def prepare_models(
    spec: Annotated[
        str | None, typer.Argument(help="A local: model spec (default: the packaged model).")
    ] = None,
    precision: Annotated[
        list[str] | None,
        typer.Option("--precision", help="fp32 or int8 (repeatable; default: the model's)."),
    ] = None,
    force: Annotated[bool, typer.Option("--force", help="Rebuild even when cached.")] = False,
) -> None:
    """Build the ONNX graph of a local model now, so the first search does not wait for it."""
    from semsearch.embedders.catalog import prepare
    from semsearch.embedders.local import default_model_spec

    target = spec or (_extra_specs() or [default_model_spec()])[0]
    for path in prepare(target, precision, force=force):
        out.print(f"ready: {escape(str(path))}")


@models_app.command("pull")
@cli_errors
def pull_model(
    hub_id: Annotated[
        str, typer.Argument(help="A Hugging Face Hub model id, <org>/<name>.", show_default=False)
    ],
    revision: Annotated[
        str | None,
        typer.Option("--revision", help="Branch, tag or commit (default: main); pinned."),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON document.")] = False,
) -> None:
    """Download a model once into the model cache (checked, resumable); then local:<hub-id>
    works offline. Honours HF_ENDPOINT, HF_HUB_OFFLINE and HF_TOKEN. Nothing else downloads."""
    from semsearch.cli.progress import ProgressLine
    from semsearch.models import pull

    with ProgressLine(f"pulling {hub_id}", "kB") as line:
        done = pull(hub_id, revision, progress=lambda b, t: line.update(b // 1000, t // 1000))
    if as_json:
        doc = {
            "hub_id": done.hub_id,
            "spec": done.spec,
            "revision": done.revision,
            "requested": done.requested,
            "folder": str(done.folder),
            "files": len(done.files),
            "bytes": done.bytes,
        }
        typer.echo(json.dumps(doc, indent=2))
        return
    out.print(
        f"pulled {escape(done.hub_id)} at {done.revision} "
        f"({len(done.files)} files, {done.bytes / 1e6:.1f} MB) into {escape(str(done.folder))}"
    )
    out.print(f"use it as {escape(done.spec)} (e.g. SEMSEARCH_MODEL={escape(done.spec)})")
