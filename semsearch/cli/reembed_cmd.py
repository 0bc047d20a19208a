"""`semsearch reembed --model SPEC`: switch a collection to another embedding model."""

from __future__ import annotations

from typing import Annotated

import typer

from semsearch import settings
from semsearch.cli.common import CollectionOpt, IndexOpt, WindowVectorsOpt, cli_errors, out


@cli_errors
def reembed(
    model: Annotated[
        str | None,
        typer.Option(
            "--model",
            "-m",
            help="The new model spec, e.g. openai:text-embedding-3-small, "
            "gemini:gemini-embedding-001?dimensions=768, ollama:nomic-embed-text, local:<path>. "
            "Default: the collection's own model.",
        ),
    ] = None,
    window_vectors: WindowVectorsOpt = None,
    index: IndexOpt = settings.DEFAULT_INDEX,
    collection: CollectionOpt = settings.DEFAULT_COLLECTION,
) -> None:
    """Re-embed every record with another model, or rebuild its sentence windows
    (--window-vectors); the old vectors serve until the new set is done."""
    import semsearch
    from semsearch.cli.common import require_index
    from semsearch.cli.progress import ProgressLine
    from semsearch.reembed import reembed as run_reembed

    require_index(index)
    with semsearch.connect(index) as db, ProgressLine("re-embedding", "chunks") as bar:
        report = run_reembed(
            db, collection, model, window_vectors=window_vectors, progress=bar.advance
        )
    if not report.swapped:
        out.print(
            f"collection {collection!r} already uses {report.new_model} and those sentence "
            "windows; nothing to do",
            markup=False,
        )
        return
    out.print(
        f"collection {collection!r}: {report.old_model} -> {report.new_model}; "
        f"{report.records} records, {report.chunks_embedded} chunks embedded",
        markup=False,
    )


@cli_errors
def reindex(
    index: IndexOpt = settings.DEFAULT_INDEX,
    collection: CollectionOpt = settings.DEFAULT_COLLECTION,
) -> None:
    """Embed the chunks left pending (e.g. after an embedding API outage)."""
    from semsearch.cli.common import open_collection
    from semsearch.cli.progress import ProgressLine

    coll = open_collection(index, collection)
    before = coll.stats()
    with ProgressLine("embedding chunks", "chunks", total=before.pending + before.failed) as bar:
        report = coll.reindex(progress=bar.advance)
    out.print(f"collection {collection!r}: {report.chunks_embedded} chunks embedded", markup=False)
    coll.store.close()
