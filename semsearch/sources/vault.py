"""Folders of notes ("vaults") as records: one file, one record; incremental and idempotent.

Markdown is read here; PDFs, plain text, org, HTML and .docx files by the readers of
:mod:`semsearch.sources.formats` (which says what each gives: page numbers, line numbers,
heading paths). All of them are indexed by default (:data:`DEFAULT_INCLUDE`).

A record's id is the file's path relative to the folder (POSIX). Its fields are ``path``,
``title`` (front matter ``title``, else the first H1, else the file name), ``folder``,
``modified`` (mtime, Unix seconds), ``body_line`` (1-based line of the body's first non-blank line) and the
keys of the YAML front matter. The front matter never goes into a chunk. A PDF's fields are
``path``, ``title`` (its Title, else the file name), ``folder``, ``modified``, ``pages`` and
``page_starts`` (see :mod:`semsearch.sources.pdf`); one that has no text, is encrypted or
broken is skipped with the reason. Other formats' fields: ``path``, ``title``, ``folder``,
``modified``, ``source_format`` and what the format holds (org property drawers, a .docx's
author); a file that gives no record (:class:`~semsearch.sources.skipped.FileSkipped`) is
skipped with the reason.
"""

from __future__ import annotations

import datetime as dt
import fnmatch
import logging
import os
import re
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from semsearch.collection import Collection
from semsearch.errors import SemsearchError
from semsearch.results import SOURCE_FORMAT, UpsertReport
from semsearch.schema import Field, Schema
from semsearch.search import path_matches
from semsearch.sources.folder_guard import check_folder, remember_folder
from semsearch.sources.formats import document_record, reader_for
from semsearch.sources.skipped import FileSkipped
from semsearch.validation import surrogate_at

__all__ = [
    "VAULT_SCHEMA",
    "LinkOutsideFolder",
    "SyncReport",
    "index_folder",
    "read_note",
    "scan_folder",
]

log = logging.getLogger(__name__)

#: Declared fields of a markdown collection, and its chunker.
VAULT_SCHEMA = Schema(
    fields=(
        Field("path", "str"),
        Field("title", "str"),
        Field("folder", "str"),
        Field("modified", "float"),
    ),
    text=("text",),
    chunker="markdown",
)
DEFAULT_INCLUDE = ("*.md", "*.markdown", "*.pdf", "*.txt", "*.org", "*.html", "*.htm", "*.docx")
SKIPPED_DIRS = frozenset({".git", "node_modules"})
_OPENING = re.compile(r"\A---[ \t]*\r?\n")
#: The warning for a file whose first line opens front matter that no ``---``/``...`` closes.
UNCLOSED_FRONT_MATTER = (
    "front matter opened with '---' on line 1 is never closed; the whole file was indexed as "
    "text, with no front matter fields (close it with a '---' line, or remove the first line)"
)
_FRONT_MATTER = re.compile(r"\A---[ \t]*\r?\n(.*?\r?\n)?(?:---|\.\.\.)[ \t]*(?:\r?\n|\Z)", re.S)
_H1 = re.compile(r"^#[ \t]+(.+?)[ \t#]*$", re.M)
FILES_PER_BATCH = 64


class UnreadableName(OSError):
    """A file whose name is not valid UTF-8: no store can hold it as a record id (skipped)."""


class LinkOutsideFolder(OSError):
    """A note's resolved path (after symbolic links) lies outside the resolved folder root.

    An ``OSError`` so callers that skip unreadable files by name skip these the same way.
    """

    def __str__(self) -> str:
        return f"{self.filename}: {self.strerror}"


def inside_root(root: Path, path: Path) -> bool:
    """True when ``path``, with every symbolic link resolved, lies under resolved ``root``."""
    return Path(os.path.realpath(path)).is_relative_to(os.path.realpath(root))


@dataclass
class SyncReport:
    """What one folder sync did. ``skipped`` lists (relative path, reason); ``links`` holds the
    relative paths of symbolic links not followed by policy (also in ``skipped``, not failures);
    ``by_policy`` holds every path skipped by policy, not failure: those links and the PDFs that
    give no record (no text layer, encrypted, not a readable PDF, pypdf not installed), and
    other files that give none (a broken .docx, a format whose parser is not installed). Files
    that could not be read (an I/O error, not UTF-8) are in ``skipped`` only: failures.
    ``warnings`` lists (relative path, reason) of files indexed but probably not as meant, e.g.
    front matter opened with ``---`` and never closed (the whole file is indexed as body).
    ``vanished`` lists the relative paths the scan found and that were gone when their turn to
    be read came (renamed or deleted during the sync): removed like any other missing file, and
    not failures (a renamed note's new name is found by the next sync).
    """

    new: int = 0
    changed: int = 0
    unchanged: int = 0
    removed: int = 0
    skipped: list[tuple[str, str]] = field(default_factory=list)
    links: list[str] = field(default_factory=list)
    by_policy: list[str] = field(default_factory=list)
    chunks_embedded: int = 0
    chunks_reused: int = 0
    chunks_pending: int = 0
    errors: list[str] = field(default_factory=list)
    warnings: list[tuple[str, str]] = field(default_factory=list)
    seconds: float = 0.0
    #: (relative path, why) of notes stored (keyword-searchable) whose text the model could
    #: not embed (NaN, Inf or a zero vector); the other notes are embedded.
    failed: list[tuple[str, str]] = field(default_factory=list)
    #: chunks left failed: those notes', and the chunks an embedder that failed was given
    chunks_failed: int = 0
    vanished: list[str] = field(default_factory=list)

    def add_upsert(self, result: UpsertReport) -> None:
        """Count one upsert's records and chunks (all but ``chunks_reused`` and ``errors``,
        which each caller handles its own way)."""
        self.new += result.added
        self.changed += result.updated
        self.unchanged += result.unchanged
        self.chunks_embedded += result.chunks_embedded
        self.chunks_pending += result.chunks_pending
        self.failed += list(result.failed.items())
        self.chunks_failed += result.chunks_failed

    def skip(self, rel: str, reason: str, *, by_policy: bool = False) -> None:
        """Report ``rel`` as skipped with ``reason``; ``by_policy``: not a failure."""
        self.skipped.append((rel, reason))
        if by_policy:
            self.by_policy.append(rel)


def scan_folder(
    root: Path,
    include: Sequence[str] = DEFAULT_INCLUDE,
    exclude: Sequence[str] = (),
    links: list[tuple[str, str]] | None = None,
) -> Iterator[str]:
    """Relative POSIX paths of the files under ``root`` to index, sorted.

    Hidden folders, ``.git`` and ``node_modules`` are skipped; a file is kept when it matches an
    ``include`` glob (on its name or relative path) and no ``exclude`` glob. Symbolic links to
    folders are never descended (no loops; a folder inside ``root`` is indexed under its own
    path): each one is appended to ``links`` as (relative path, reason) and logged. Links to
    files are listed; :func:`read_note` refuses those that resolve outside ``root``.
    """
    found = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if not d.startswith(".") and d not in SKIPPED_DIRS]
        for name in [d for d in dirnames if os.path.islink(os.path.join(dirpath, d))]:
            _skip_folder_link(root, Path(dirpath, name), links)
        for name in filenames:
            rel = Path(dirpath, name).relative_to(root).as_posix()
            if name.startswith(".") or not os.path.isfile(os.path.join(dirpath, name)):
                continue  # hidden files, FIFOs, sockets and broken links are never read
            if not any(
                fnmatch.fnmatchcase(name, g) or fnmatch.fnmatchcase(rel, g) for g in include
            ):
                continue
            if not any(path_matches(rel, g) for g in exclude):
                found.append(rel)
    yield from sorted(found)


def _skip_folder_link(root: Path, link: Path, links: list[tuple[str, str]] | None) -> None:
    rel = link.relative_to(root).as_posix()
    where = "inside" if inside_root(root, link) else "outside"
    reason = f"symbolic link to a folder {where} the indexed folder; not followed"
    log.info("skipped %s: %s", rel, reason)
    if links is not None:
        links.append((rel, reason))


def read_note(
    root: Path, rel: str, warnings: list[tuple[str, str]] | None = None
) -> dict[str, Any]:
    """Read one markdown file (or PDF, text, org, HTML or .docx file; see
    :mod:`semsearch.sources.formats`) into a record (``id``, ``text`` and fields).

    Args:
        warnings: appended (and logged) when the file is indexed but probably not as meant:
            front matter opened with ``---`` on the first line and never closed is indexed
            whole, as body, with no front matter fields; front matter that is not valid YAML
            (or not a mapping) gives no fields.
    Raises:
        UnicodeDecodeError: the file is not valid UTF-8. OSError: it cannot be read.
        UnreadableName: (an OSError) its name is not valid UTF-8.
        LinkOutsideFolder: (an OSError) a symbolic link takes the path outside ``root``.
        FileSkipped: a file that gives no record: a PDF with no text, encrypted or broken, a
            .docx that is not readable, or a format whose optional parser is not installed
            (see :mod:`semsearch.sources.formats`).
    """
    if surrogate_at(rel) is not None:  # os.fsdecode kept the bytes of a non-UTF-8 name
        raise UnreadableName(0, "its name is not valid UTF-8; rename the file", rel)
    path = root / rel
    if not inside_root(root, path):
        log.info("skipped %s: a symbolic link to a path outside the indexed folder", rel)
        raise LinkOutsideFolder(
            0, "a symbolic link to a path outside the indexed folder; not followed", rel
        )
    folder = rel.rsplit("/", 1)[0] if "/" in rel else ""
    if reader_for(rel) is not None:
        document = document_record(path.read_bytes(), rel) or {}
        stat = {"path": rel, "folder": folder, "modified": path.stat().st_mtime}
        return {"id": rel, **document, **stat}
    raw = path.read_bytes().decode("utf-8-sig")  # a BOM must not hide the front matter
    problems: list[str] = []
    front, body, body_line = split_front_matter(raw, problems)
    if body_line == 1 and _OPENING.match(raw):
        problems.append(UNCLOSED_FRONT_MATTER)
    for reason in problems:
        log.warning("%s: %s", rel, reason)
        if warnings is not None:
            warnings.append((rel, reason))
    # the record's text is stripped (schema.render), so its first line is the first non-blank
    body_line += body[: len(body) - len(body.lstrip())].count("\n")
    h1 = _H1.search(body)
    title = front.get("title") or (h1.group(1).strip() if h1 else Path(rel).stem)
    fields = {k: _jsonable(v) for k, v in front.items() if k not in ("id", "text", SOURCE_FORMAT)}
    fields.update(
        path=rel,
        title=str(title),
        folder=folder,
        modified=path.stat().st_mtime,
        body_line=body_line,
    )
    return {"id": rel, "text": body, **fields}


def split_front_matter(
    raw: str, problems: list[str] | None = None
) -> tuple[dict[str, Any], str, int]:
    """(front matter mapping, body, 1-based line where the body starts). Front matter that is
    not valid YAML, or not a mapping, gives {}; with ``problems``, why is appended to it."""
    match = _FRONT_MATTER.match(raw)
    if match is None:
        return {}, raw, 1
    body_line = raw[: match.end()].count("\n") + 1
    try:
        data = yaml.safe_load(match.group(1) or "") or {}
    except yaml.YAMLError as exc:
        data, why = {}, f"is not valid YAML ({str(exc).splitlines()[0][:120]})"
    else:
        why = "" if isinstance(data, dict) else f"is a YAML {type(data).__name__}, not key: value"
    if why and problems is not None:
        problems.append(
            f"front matter on lines 1-{body_line - 1} {why}; the note was indexed without its "
            "fields (fix the YAML, e.g. quote values that hold ':' or '[')"
        )
    return (data if isinstance(data, dict) else {}), raw[match.end() :], body_line


def _jsonable(value: Any) -> Any:
    if isinstance(value, dt.date | dt.datetime):
        return value.isoformat()
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set):
        return [_jsonable(v) for v in value]
    if value is None or isinstance(value, str | int | float | bool):
        return value
    return str(value)


def index_folder(
    collection: Collection,
    root: str | Path,
    *,
    include: Sequence[str] = DEFAULT_INCLUDE,
    exclude: Sequence[str] = (),
    progress: Callable[[int, int], None] | None = None,
    new_folder: bool = False,
) -> SyncReport:
    """Bring ``collection`` in step with the notes (markdown, PDF, text, org, HTML, .docx)
    under ``root``.

    New files are added, changed ones replaced (unchanged chunks keep their vectors), files no
    longer present (or now excluded) are removed from every search path, as are files that
    vanish while the sync runs (renamed or deleted after the scan: ``vanished``, not a
    failure). A file that is not valid UTF-8 or cannot be read, a PDF with no text layer,
    encrypted or broken, and a .docx that is not readable, is reported in ``skipped`` (and not
    stored) and the run goes on. A run that completes stores
    ``root`` (resolved) as the collection's folder (see :mod:`semsearch.sources.folder_guard`).

    Args:
        progress: called with (files done, files total) before the first batch and after each.
        new_folder: re-point a collection that holds another folder's notes at ``root``
            (e.g. the folder moved; notes with unchanged text are not re-embedded). Without
            it such a sync is refused.
    Raises:
        SemsearchError: ``root`` is not a folder.
        FolderMismatch: the collection holds another folder's notes (nothing is written).
    """
    start = time.perf_counter()
    base = Path(root).expanduser()
    if not str(root).strip() or not base.is_dir():
        raise SemsearchError(f"{root} is not a folder", hint="give the path of a folder of notes")
    report = SyncReport()
    folder_links: list[tuple[str, str]] = []
    paths = list(scan_folder(base, include, exclude, folder_links))
    report.skipped += folder_links
    report.links += [rel for rel, _ in folder_links]
    report.by_policy += report.links
    check_folder(collection, base, lambda: paths, new_folder=new_folder)
    if paths:  # before the first write: an interrupted sync leaves the folder known
        remember_folder(collection, base)
    if progress is not None:
        progress(0, len(paths))  # the total, before the first batch's chunking and embedding
    for offset in range(0, len(paths), FILES_PER_BATCH):
        batch = paths[offset : offset + FILES_PER_BATCH]
        records = [r for r in (_try_read(base, rel, report) for rel in batch) if r is not None]
        result = collection.upsert(records)
        report.add_upsert(result)
        report.chunks_reused += result.chunks_reused
        report.errors += result.errors
        if progress is not None:
            progress(offset + len(batch), len(paths))
    kept = set(paths) - {rel for rel, _ in report.skipped} - set(report.vanished)
    existing = collection.ids()
    gone = [i for i in existing if i not in kept]
    if existing and not kept:
        found = (
            f"none of the {len(paths)} notes in {base.name or root!r} could be read (first: "
            f"{report.skipped[0][0]}: {report.skipped[0][1]})"
            if paths and report.skipped
            else f"no notes found in {base.name or root!r} (with these --include/--exclude globs)"
        )
        raise SemsearchError(
            f"{found}; refusing to remove all {len(existing)} records of collection "
            f"{collection.name!r}",
            hint="check the folder and globs, or use another --collection for another folder",
        )
    report.removed = collection.delete(gone) if gone else 0
    report.seconds = time.perf_counter() - start
    return report


def _try_read(root: Path, rel: str, report: SyncReport) -> dict[str, Any] | None:
    try:
        return read_note(root, rel, report.warnings)
    except LinkOutsideFolder as exc:
        report.skip(rel, str(exc.strerror), by_policy=True)
        report.links.append(rel)
    except FileSkipped as exc:
        report.skip(rel, exc.reason, by_policy=True)
    except UnicodeDecodeError:
        report.skipped.append((rel, "not valid UTF-8"))
    except (FileNotFoundError, NotADirectoryError):  # renamed or deleted since the scan
        report.vanished.append(rel)
    except OSError as exc:
        report.skipped.append((rel, f"cannot be read: {exc.strerror or exc}"))
    return None
