"""`semsearch index PATH`: index a folder of notes (markdown, PDF, text, org, HTML, .docx), incrementally."""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from semsearch import settings
from semsearch.cli.common import (
    CollectionOpt,
    FileExcludeOpt,
    FileIncludeOpt,
    IndexOpt,
    KeywordTokenizerOpt,
    NewFolderOpt,
    SentenceWindowsOpt,
    WindowVectorsOpt,
    cli_errors,
    err_console,
    failed_note,
    out,
)
from semsearch.errors import SemsearchError


@cli_errors
def index(
    path: Annotated[
        str, typer.Argument(help="Folder of notes: markdown, PDF, .txt, .org, .html, .docx.")
    ],
    index: IndexOpt = settings.DEFAULT_INDEX,
    collection: CollectionOpt = settings.DEFAULT_COLLECTION,
    include: FileIncludeOpt = None,
    exclude: FileExcludeOpt = None,
    keyword_tokenizer: KeywordTokenizerOpt = None,
    sentence_windows: SentenceWindowsOpt = None,
    window_vectors: WindowVectorsOpt = None,
    new_folder: NewFolderOpt = False,
) -> None:
    """Index (or re-index) a folder of notes (markdown, PDF, .txt, .org, .html, .docx). Unchanged files are not re-embedded."""
    import semsearch
    from semsearch.cli.progress import ProgressLine
    from semsearch.sources.folder_guard import check_folder
    from semsearch.sources.vault import DEFAULT_INCLUDE, VAULT_SCHEMA, scan_folder
    from semsearch.sources.watch import sync_folder  # index_folder + health (clears quarantine)
    from semsearch.stores.keyword_capabilities import refresh_keyword_index

    if not Path(path).expanduser().is_dir():  # before the index file is created
        raise SemsearchError(f"{path} is not a folder", hint="give the path of a folder of notes")
    db = semsearch.connect(index)
    globs = (tuple(include or DEFAULT_INCLUDE), tuple(exclude or ()))
    if not new_folder and collection in db.collections():  # before an option is stored
        found = db.collection(collection, embedder=os.environ.get(settings.ENV_MODEL))
        check_folder(found, path, lambda: scan_folder(Path(path).expanduser(), *globs))
    coll = db.collection(
        collection,
        schema=VAULT_SCHEMA,
        embedder=os.environ.get(settings.ENV_MODEL),
        keyword_tokenizer=keyword_tokenizer,
        sentence_windows=sentence_windows,
        window_vectors=window_vectors,
    )
    with ProgressLine("indexing files", "files") as bar, reported_below():
        report, health = sync_folder(
            coll,
            path,
            include=globs[0],
            exclude=globs[1],
            progress=bar.update,
            new_folder=new_folder,
            on_interrupted=lambda line: err_console.print(f"[yellow]warning:[/] {escape(line)}"),
        )
    refresh_keyword_index(coll.store, coll.name)  # a build left to a search dies with us
    for rel, reason in report.skipped:
        err_console.print(f"[yellow]skipped[/] {escape(rel)}: {escape(reason)}")
    for rel, reason in report.failed:
        err_console.print(f"[yellow]not embedded[/] {escape(rel)}: {escape(reason)}")
    for rel, reason in report.warnings:
        err_console.print(f"[yellow]warning:[/] {escape(rel)}: {escape(reason)}")
    for message in dict.fromkeys(report.errors):
        err_console.print(f"[yellow]warning:[/] {escape(message)}")
    out.print(
        f"files: {report.new} new, {report.changed} changed, {report.unchanged} unchanged, "
        f"{report.removed} removed, {len(report.skipped)} skipped, "
        f"{len(report.warnings)} warnings; chunks embedded: {report.chunks_embedded} "
        f"(reused {report.chunks_reused}, "
        f"pending {report.chunks_pending}{failed_note(report.chunks_failed)}); "
        f"time: {report.seconds:.1f} s; health: {health.state}"
    )
    db.close()


@contextlib.contextmanager
def reported_below() -> Iterator[None]:
    """Hold back the vault's per-file warnings (front matter) while the sync runs: they are in
    the report, which the command prints as ``warning: FILE: why``; logged too, each was
    printed twice."""
    vault_log = logging.getLogger("semsearch.sources.vault")
    vault_log.addFilter(_below_warning)
    try:
        yield
    finally:
        vault_log.removeFilter(_below_warning)


def _below_warning(record: logging.LogRecord) -> bool:
    return record.levelno < logging.WARNING
