"""`semsearch models`: the local models, their engines and ONNX cache; build the cache ahead;
pull a model from the Hugging Face Hub into the model cache; calibrate a model's threshold."""

from __future__ import annotations

import json
import os
from typing import Annotated

import typer
from rich.markup import escape

from semsearch import settings
from semsearch.cli.common import CollectionOpt, IndexOpt, cli_errors, out, require_index

models_app = typer.Typer(
    help="Local embedding models: engines, ONNX cache state and sizes; pull from the Hub; "
    "calibrate a threshold.",
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


@models_app.command("calibrate")
@cli_errors
def calibrate_model(
    model: Annotated[
        str,
        typer.Argument(
            help="The collection's model (e.g. local:<org>/<name>, or its id).", show_default=False
        ),
    ],
    index: IndexOpt = settings.DEFAULT_INDEX,
    collection: CollectionOpt = settings.DEFAULT_COLLECTION,
    sample: Annotated[int, typer.Option("--sample", help="Records sampled (at least 50).")] = 1000,
    seed: Annotated[int, typer.Option("--seed", help="Random seed of the sample.")] = 0,
    save: Annotated[
        bool,
        typer.Option("--save", help="Store it in the model cache as the model's default."),
    ] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON document.")] = False,
) -> None:
    """Estimate a model's min_score from a collection's stored vectors (no model load): the
    85th percentile of the cosines of random record pairs. With --save, searches with this
    model use it and stop calling their threshold a guess."""
    import dataclasses

    import semsearch
    from semsearch.embedders.calibration import (
        calibrate,
        check_model,
        check_savable,
        save_calibration,
    )

    require_index(index)
    # only stored vectors are read: a placeholder embedder (never called) leaves the stored
    # model unresolved, so an index made elsewhere with a model absent here still calibrates
    coll = semsearch.connect(index).collection(
        collection, create=False, embedder="fake:1", strict_model=False
    )
    check_model(model, coll.stats().model_id)
    if save:
        check_savable(coll.stats().model_id)  # before the work, not after
    result = calibrate(coll, sample=sample, seed=seed)
    saved = save_calibration(result, collection, index) if save else None
    if as_json:
        doc = dataclasses.asdict(result) | {"saved": str(saved) if saved else None}
        typer.echo(json.dumps(doc, indent=2))
        return
    pairs, near = result.random_pairs, result.nearest
    out.print(
        f"[bold]{escape(result.model_id)}[/]: threshold {result.threshold:.2f} "
        f"({result.quantile:.0%} of random record pairs score below it; {result.records} records)"
    )
    out.print(
        f"  random pairs: mean {pairs.mean:.3f}, sd {pairs.sd:.3f}, "
        f"p50 {pairs.p50:.3f}, p90 {pairs.p90:.3f}, p99 {pairs.p99:.3f} ({pairs.count} pairs)"
    )
    out.print(
        f"  nearest neighbours: p05 {near.p05:.3f}, p50 {near.p50:.3f}; "
        f"{result.nearest_above:.1%} at or above the threshold"
    )
    if saved:
        out.print(f"saved to {escape(str(saved))}; searches with this model now default to it")
    else:
        out.print("not saved: add --save to make it this model's default min_score")
