"""Shared CLI plumbing: options, the error mapping (once), and opening an index."""

from __future__ import annotations

import functools
import logging
import os
import re
import traceback
from collections.abc import Callable
from typing import Annotated, Any, NoReturn, ParamSpec, TypeVar

import click
import typer
from rich.console import Console
from rich.markup import escape

from semsearch import settings
from semsearch.errors import (
    BackendUnavailable,
    DimensionMismatch,
    EmbedderUnavailable,
    FolderMismatch,
    IndexNotFound,
    IndexUnhealthy,
    InvalidFilter,
    InvalidQuery,
    InvalidRecord,
    ModelMismatch,
    NotAnIndex,
    RerankerUnavailable,
    SemsearchError,
    StoreCorrupted,
)
from semsearch.schema import SchemaConflict

__all__ = [
    "CollectionOpt",
    "FileExcludeOpt",
    "FileIncludeOpt",
    "IndexOpt",
    "KeywordTokenizerOpt",
    "NewFolderOpt",
    "SentenceWindowsOpt",
    "WatchNewFolderOpt",
    "WindowVectorsOpt",
    "cli_errors",
    "err_console",
    "failed_note",
    "open_collection",
    "out",
    "start_watch",
]

# User text (record text, ids, queries, paths) prints verbatim: no emoji codes (":x:" stays
# ":x:"), and every f-string that puts user text into Rich markup passes it through escape().
out = Console(highlight=False, soft_wrap=True, emoji=False)
err_console = Console(stderr=True, highlight=False, soft_wrap=True, emoji=False)

IndexOpt = Annotated[
    str,
    typer.Option(
        "--index",
        "-i",
        envvar=settings.ENV_INDEX,
        help="Index file (*.embed.db).",
        show_envvar=True,
    ),
]
# Which files of a folder `index` and `watch` read (semsearch/sources/vault.py).
FileIncludeOpt = Annotated[
    list[str] | None, typer.Option("--include", help="Glob of files to index (repeatable).")
]
FileExcludeOpt = Annotated[
    list[str] | None, typer.Option("--exclude", help="Glob of files to skip (repeatable).")
]
CollectionOpt = Annotated[
    str,
    typer.Option(
        "--collection",
        "-c",
        envvar=settings.ENV_COLLECTION,
        help="Collection name.",
        show_envvar=True,
    ),
]

KeywordTokenizerOpt = Annotated[
    str | None,
    typer.Option(
        "--keyword-tokenizer",
        help="New collections only: porter (English stemming, default) or trigram (substrings: "
        "Chinese, Japanese, Korean, prefixes); fixed at creation.",
    ),
]

WindowVectorsOpt = Annotated[
    str | None,
    typer.Option(
        "--window-vectors",
        show_default=False,
        help="How sentence windows are embedded: 'separate' (default for new collections: "
        "each window a text of its own) or 'late' (from its chunk's own forward pass, where "
        "the model can: about 2x faster indexing, see docs/retrieval.md). Fixed at creation.",
    ),
]

SentenceWindowsOpt = Annotated[
    bool | None,
    typer.Option(
        "--sentence-windows/--no-sentence-windows",
        show_default=False,
        help="Embed each chunk's sentences too and rank by chunk and best sentence (default "
        "for new collections); --no-sentence-windows embeds whole chunks only (faster "
        "indexing). Stored with the collection; left out keeps what is stored.",
    ),
]

NewFolderOpt = Annotated[
    bool,
    typer.Option(
        "--new-folder",
        help="Re-point a collection that holds another folder's notes at PATH: its records "
        "become PATH's notes and the others are removed (e.g. the folder moved; unchanged "
        "notes are not re-embedded). Without it such a run is refused and nothing changes.",
    ),
]

WatchNewFolderOpt = Annotated[
    bool,
    typer.Option(
        "--new-folder",
        help="With --watch: re-point a collection that holds another folder's notes at the "
        "watched folder, as `semsearch index --new-folder` does. Without it such a start is "
        "refused and nothing changes.",
    ),
]


def start_watch(
    folder: str | None,
    location: str,
    collection: str,
    new_folder: bool,
    echo: Callable[[str], None],
) -> Any:
    """``--watch FOLDER`` of ``serve`` and ``mcp``: a watcher thread on its own connection
    (semsearch/sources/watch.py) started before the server, or None without a folder; each
    line it reports goes to ``echo``.

    Raises:
        FolderMismatch: the collection holds another folder's notes and ``new_folder`` is
            False (nothing is written).
    """
    if folder is None:
        return None
    from semsearch.sources.watch import watch_in_background

    return watch_in_background(
        location, folder, collection, embedder=os.environ.get(settings.ENV_MODEL), echo=echo,
        new_folder=new_folder,
    )  # fmt: skip


#: Exit codes per error family (documented in docs/cli.md); a subclass takes its base's code and
#: any other SemsearchError exits 1. 0 is success and 2 is a command-line usage error (typer's).
EXIT_CODES: dict[type[SemsearchError], int] = {
    IndexNotFound: 3,  # not found: index file or collection
    InvalidQuery: 4,  # bad input: query, arguments, filter, record, data set
    InvalidFilter: 4,
    InvalidRecord: 4,
    ModelMismatch: 5,  # conflicts with what is stored: model, dimension, schema
    DimensionMismatch: 5,
    SchemaConflict: 5,
    FolderMismatch: 5,
    BackendUnavailable: 6,  # the backend cannot be reached, is closed or not installed
    NotAnIndex: 7,  # the store is not a usable semsearch index: foreign file, corrupt, too new
    StoreCorrupted: 7,
    EmbedderUnavailable: 8,  # the embedding model cannot be loaded or fails
    RerankerUnavailable: 4,  # a reranker spec naming no provider or model: bad input
    IndexUnhealthy: 9,  # semantic search refused while the index is quarantined
}

P = ParamSpec("P")
R = TypeVar("R")


def exit_code(exc: SemsearchError) -> int:
    """The process exit code for a semsearch error."""
    for cls in type(exc).__mro__:
        if cls in EXIT_CODES:
            return EXIT_CODES[cls]
    return 1


#: Exit code of an exception that is not a SemsearchError: a bug (sysexits.h EX_SOFTWARE).
EXIT_INTERNAL = 70
#: Set to 1 to print the traceback of an internal error on stderr.
ENV_DEBUG = "SEMSEARCH_DEBUG"
log = logging.getLogger("semsearch.cli")
log.addHandler(logging.NullHandler())  # no traceback on stderr unless asked (or configured)


#: Python argument names in library errors, and the CLI flags that set them.
_FLAGS = {"limit": "--limit", "min_score": "--min-score", "offset": "--offset",
          "rerank_top_n": "--rerank-top-n"}  # fmt: skip
_ARGUMENT = re.compile(r"(?<![\w-])(" + "|".join(_FLAGS) + r")(=| must\b)")


def cli_wording(text: str) -> str:
    """A library error's text as a CLI user reads it: ``limit=10`` becomes ``--limit 10`` and
    ``limit must be`` becomes ``--limit must be``; other text is unchanged."""
    return _ARGUMENT.sub(lambda m: _FLAGS[m[1]] + (" " if m[2] == "=" else m[2]), text)


def cli_errors(func: Callable[P, R]) -> Callable[P, R]:
    """Print a SemsearchError's message and hint on stderr and exit non-zero, no traceback.

    Any other exception (a bug) exits :data:`EXIT_INTERNAL` with its type and a hint, never its
    own text (it may hold absolute paths or record data); its traceback is logged (logger
    ``semsearch.cli``), and printed on stderr when ``SEMSEARCH_DEBUG=1``. typer's and click's
    own exits (usage errors, ``typer.Exit``, Ctrl-C) pass through.
    """

    @functools.wraps(func)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return func(*args, **kwargs)
        except SemsearchError as exc:
            _refuse(exc)
        except (click.exceptions.Exit, click.ClickException, click.exceptions.Abort):
            raise
        except Exception as exc:
            extra = missing_extra(exc)
            if extra is not None:
                _refuse(extra)
            _internal_error(exc)
            raise typer.Exit(EXIT_INTERNAL) from None

    return wrapper


def _refuse(exc: SemsearchError) -> NoReturn:
    """Print a SemsearchError's message and hint on stderr, and exit with its code."""
    err_console.print(f"[bold red]error:[/] {escape(cli_wording(exc.message))}")
    if exc.hint:
        err_console.print(f"[bold]hint:[/] {escape(cli_wording(exc.hint))}")
    raise typer.Exit(exit_code(exc)) from None


#: Optional packages a command may need, and the extra of pyproject.toml that installs each.
OPTIONAL_PACKAGES = {
    "fastapi": "server", "uvicorn": "server", "mcp": "server",
    "psycopg": "postgres", "psycopg_pool": "postgres", "pgvector": "postgres",
    "pymilvus": "milvus", "milvus_lite": "milvus", "pypdf": "pdf", "pytrec_eval": "eval",
    "docx": "formats",
}  # fmt: skip


def missing_extra(exc: BaseException) -> BackendUnavailable | None:
    """A BackendUnavailable naming the extra to install when ``exc`` is the import of an
    optional package that is not installed (None for any other exception: a bug)."""
    if not isinstance(exc, ModuleNotFoundError) or not exc.name:
        return None
    package = exc.name.partition(".")[0]
    extra = OPTIONAL_PACKAGES.get(package)
    if extra is None:
        return None
    return BackendUnavailable(
        f"this command needs the optional package {package!r}, which is not installed",
        hint=f"pip install 'semsearch[{extra}]'",
    )


def _internal_error(exc: Exception) -> None:
    """Report an exception that is not a SemsearchError: type and hint, traceback logged."""
    debug = os.environ.get(ENV_DEBUG, "") not in ("", "0")
    log.error("internal error", exc_info=exc)
    if debug:
        err_console.print("".join(traceback.format_exception(exc)), markup=False, highlight=False)
    err_console.print(
        f"[bold red]error:[/] internal error ({escape(type(exc).__name__)}); the command did not "
        "complete"
    )
    more = "" if debug else f"; set {ENV_DEBUG}=1 to see the traceback"
    err_console.print(f"[bold]hint:[/] this is a bug in semsearch, please report it{more}")


def failed_note(chunks_failed: int) -> str:
    """``", failed N"`` for a run's summary line when N chunks were left failed (their text,
    or the embedder, failed; ``stats`` counts them the same way), else ``""``."""
    return f", failed {chunks_failed}" if chunks_failed else ""


def require_index(index: str) -> None:
    """Raise IndexNotFound (before any model load) when the index file does not exist, after
    BackendUnavailable for a location no backend takes (:func:`semsearch.database.check_location`).

    Server locations (``postgresql://``, ``milvus-lite://``, ``http(s)://``) are checked by
    their store when opened.
    """
    from semsearch.database import check_location

    check_location(index)  # the form first: "unsupported location", not "no index at"
    if index != ":memory:" and "://" not in index and not os.path.exists(index):
        raise IndexNotFound(
            f"no index at {index}",
            hint=f"name the index file with --index (or {settings.ENV_INDEX}); to build one, run "
            "`semsearch index <folder>` or `semsearch import <file>`",
        )


def open_collection(index: str, collection: str, **kwargs: Any) -> Any:
    """Open an existing collection of an existing index; the model is not loaded.

    ``SEMSEARCH_MODEL`` names the model; when it differs from the stored one, keyword search
    still works and the verbs that embed raise ModelMismatch (``strict_model=False``).
    """
    import semsearch

    require_index(index)
    db = semsearch.connect(index)
    return db.collection(
        collection,
        create=False,
        embedder=os.environ.get(settings.ENV_MODEL),
        strict_model=False,  # a model mismatch refuses semantic search only, not keyword
        **kwargs,
    )
