"""`semsearch watch PATH`: keep the index in step with a folder of notes while it changes."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import Annotated

import typer

from semsearch import settings
from semsearch.cli.common import (
    CollectionOpt,
    FileExcludeOpt,
    FileIncludeOpt,
    IndexOpt,
    NewFolderOpt,
    cli_errors,
    err_console,
)


@cli_errors
def watch(
    path: Annotated[
        str, typer.Argument(help="Folder of notes: markdown, PDF, .txt, .org, .html, .docx.")
    ],
    index: IndexOpt = settings.DEFAULT_INDEX,
    collection: CollectionOpt = settings.DEFAULT_COLLECTION,
    include: FileIncludeOpt = None,
    exclude: FileExcludeOpt = None,
    debounce: Annotated[
        int,
        typer.Option(
            "--debounce", min=0, help="Group file events over this many milliseconds (>= 0)."
        ),
    ] = 300,
    new_folder: NewFolderOpt = False,
) -> None:
    """Sync the folder, then follow its changes until Ctrl-C. Health goes to `stats`."""
    import semsearch
    from semsearch.errors import SemsearchError
    from semsearch.sources.vault import DEFAULT_INCLUDE, VAULT_SCHEMA
    from semsearch.sources.watch import FolderWatcher

    if not Path(path).is_dir():  # before the index file is created
        raise SemsearchError(f"{path} is not a folder", hint="give the path of a folder of notes")
    with semsearch.connect(index) as db:
        coll = db.collection(
            collection, schema=VAULT_SCHEMA, embedder=os.environ.get(settings.ENV_MODEL)
        )
        watcher = FolderWatcher(
            coll,
            path,
            include=tuple(include or DEFAULT_INCLUDE),
            exclude=tuple(exclude or ()),
            debounce_ms=debounce,
            new_folder=new_folder,
            echo=lambda line: err_console.print(line, markup=False),
        )
        err_console.print(
            f"watching {path} -> {db.location} (collection {collection})", markup=False
        )
        with contextlib.suppress(KeyboardInterrupt):
            watcher.run()
        err_console.print("stopped")
