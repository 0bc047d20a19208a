"""Live folders: keep a collection in step with a folder of notes while it changes.

:class:`FolderWatcher` first runs a full incremental sync (:func:`~semsearch.sources.sync.sync_folder`,
also importable from here, so changes made while nothing watched are picked up), then follows file-system events from
``watchfiles`` (inotify on Linux, FSEvents on macOS, ReadDirectoryChangesW on Windows):

- Events are debounced (``debounce_ms``) into batches; a batch is applied by ONE thread, file
  by file in sorted order, so two quick saves of one file cannot race: the file is read when
  its batch is applied, and a save that lands later raises another event and another batch.
- Each file is one store transaction: created or modified -> upsert (unchanged text is
  skipped by content hash); deleted -> delete; renamed -> delete + create; a folder moved in
  -> every note under it upserted; a folder moved out or deleted -> every record under it
  deleted.
- Paths hidden (a part starting with ``.``), under ``.git``/``node_modules`` or matching an
  ``exclude`` glob are ignored.

Every sync and batch records the index health (:mod:`semsearch.health`): ``syncing`` while it
runs, then ``ok``, ``degraded`` (files that failed, by relative path) or ``quarantined`` (the
embedder failed mid-batch or the store raised). A quarantined index is repaired by the next
batch or by a retry every ``retry_s`` seconds: a full sync that also embeds every chunk left
pending.
"""

from __future__ import annotations

import fnmatch
import functools
import logging
import os
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

from semsearch.collection import Collection
from semsearch.errors import InvalidQuery, InvalidRecord, SemsearchError
from semsearch.health import begin_sync, end_sync, quarantine, read_health
from semsearch.search import path_matches
from semsearch.sources.folder_guard import check_folder
from semsearch.sources.skipped import FileSkipped
from semsearch.sources.sync import embed_pending, failure_message, sync_folder
from semsearch.sources.vault import (
    DEFAULT_INCLUDE,
    SKIPPED_DIRS,
    LinkOutsideFolder,
    SyncReport,
    read_note,
    scan_folder,
)
from semsearch.stores.keyword_capabilities import refresh_keyword_index

__all__ = ["FolderWatcher", "sync_folder", "watch_in_background"]

log = logging.getLogger(__name__)

#: Default debounce (ms): events closer together than this are applied as one batch.
DEBOUNCE_MS = 300
#: Seconds between repair attempts while the index is quarantined and no event arrives.
RETRY_S = 30.0


class FolderWatcher:
    """Keep ``collection`` in step with the markdown folder ``root``.

    Args:
        collection: the collection to write (open it with ``schema=VAULT_SCHEMA``); the
            watcher should have its own connection when other threads use the index.
        root: the folder of notes.
        include: globs of files to index (on the name or relative path).
        exclude: globs of relative paths to ignore (``path_matches`` semantics).
        debounce_ms: group events over at most this many milliseconds, an int >= 0 (0 and 1
            both apply each event within about a millisecond).
        retry_s: while quarantined, retry a full sync after this many idle seconds.
        echo: called with one line per sync or batch (default: the module logger).
        new_folder: re-point a collection that holds another folder's notes at ``root`` (see
            :func:`~semsearch.sources.vault.index_folder`); without it that is refused here.
    Raises:
        SemsearchError: ``root`` is not a folder.
        FolderMismatch: the collection holds another folder's notes (nothing is written).
        InvalidQuery: ``debounce_ms`` is not an int or is negative.
    """

    def __init__(
        self,
        collection: Collection,
        root: str | Path,
        *,
        include: Sequence[str] = DEFAULT_INCLUDE,
        exclude: Sequence[str] = (),
        debounce_ms: int = DEBOUNCE_MS,
        retry_s: float = RETRY_S,
        echo: Callable[[str], None] | None = None,
        new_folder: bool = False,
    ) -> None:
        if isinstance(debounce_ms, bool) or not isinstance(debounce_ms, int) or debounce_ms < 0:
            raise InvalidQuery(
                f"debounce_ms must be an int >= 0, got {debounce_ms!r}",
                hint=f"pass a number of milliseconds, e.g. {DEBOUNCE_MS}",
            )
        self.root = Path(root).resolve()
        if not self.root.is_dir():
            raise SemsearchError(
                f"{root} is not a folder", hint="give the path of a folder of notes"
            )
        self.collection = collection
        self.include = tuple(include)
        self.exclude = tuple(exclude)
        self.new_folder = new_folder
        check_folder(
            collection,
            self.root,
            lambda: scan_folder(self.root, self.include, self.exclude),
            new_folder=new_folder,
        )
        self.debounce_ms = max(1, debounce_ms)
        self.retry_s = retry_s
        self.echo = echo or log.info
        self.stop_event = threading.Event()
        self.failed: set[str] = set()
        self.batches = 0
        self._thread: threading.Thread | None = None
        self._on_stop: Callable[[], None] | None = None

    # -- syncing ------------------------------------------------------------------------------

    def sync(self) -> SyncReport:
        """Run a full incremental sync (see :func:`sync_folder`) and remember the failed files."""
        report, health = sync_folder(
            self.collection,
            self.root,
            include=self.include,
            exclude=self.exclude,
            new_folder=self.new_folder,
            on_interrupted=self.echo,
        )
        self.failed = set(health.failed)
        refresh_keyword_index(self.collection.store, self.collection.name, wait=False)
        self.echo(
            f"synced: {report.new} new, {report.changed} changed, {report.removed} removed, "
            f"{len(report.skipped)} skipped; health {health.state}"
        )
        return report

    def apply(self, paths: Iterable[str]) -> SyncReport:
        """Apply changed paths (relative POSIX, files or folders), one transaction per file.

        Returns:
            What changed. The health is stored at the end (see the module docstring).
        """
        report = SyncReport()
        start = time.perf_counter()
        store, name = self.collection.store, self.collection.name
        todo = sorted(self._expand(paths))
        if not todo:  # e.g. a non-note file changed: no write, not even the health
            return report
        begin_sync(store, name, "watch batch")
        errors: list[str] = []
        try:
            for rel in todo:
                errors += self._apply_one(rel, report)
            if not errors:
                errors = embed_pending(self.collection, report)
        except BaseException as exc:  # the store raised: vectors can no longer be trusted
            quarantine(store, name, f"the watcher failed to apply a change: {failure_message(exc)}")
            raise
        self.failed.update(rel for rel, _ in report.failed)
        reasons = dict([*report.skipped, *report.failed])
        health = end_sync(store, name, errors=errors, failed=sorted(self.failed), reasons=reasons)
        report.seconds = time.perf_counter() - start
        self.batches += 1
        refresh_keyword_index(store, name, wait=False)  # in the background: we live on
        self.echo(
            f"applied: {report.new} new, {report.changed} changed, {report.removed} removed, "
            f"{len(report.skipped)} skipped; health {health.state}"
        )
        return report

    def _expand(self, paths: Iterable[str]) -> set[str]:
        """Files to (re)index or delete: folders become the notes under them and the ids
        stored under them; paths that are gone become their id and the ids below them."""
        out: set[str] = set()
        known: list[str] | None = None
        for rel in paths:
            full = self.root / rel
            if full.is_file():
                if self.wanted(rel) or self._stored(rel):
                    out.add(rel)
                continue
            if known is None:  # stored ids, and failed files (gone, they no longer fail)
                known = [*self.collection.ids(), *self.failed]
            out.update(i for i in known if i == rel or i.startswith(rel + "/"))
            if full.is_dir() and not full.is_symlink():  # folder links are never followed
                out.update(f"{rel}/{sub}" for sub in scan_folder(full, self.include, ()))
        return {p for p in out if not self._ignored(p) or self._stored(p)}

    def _apply_one(self, rel: str, report: SyncReport) -> list[str]:
        """Upsert or delete one file in one store transaction; returns embedding errors."""
        self.failed.discard(rel)
        if not (self.root / rel).is_file() or not self.wanted(rel):
            if self._stored(rel):
                report.removed += self.collection.delete([rel])
            return []
        try:
            record = read_note(self.root, rel, report.warnings)
            result = self.collection.upsert([record])
        except FileNotFoundError:  # deleted between the event and the read
            if self._stored(rel):
                report.removed += self.collection.delete([rel])
            return []
        except (LinkOutsideFolder, FileSkipped) as exc:  # not a failure: health stays ok
            reason = exc.reason if isinstance(exc, FileSkipped) else str(exc.strerror)
            report.skip(rel, reason, by_policy=True)
            if self._stored(rel):  # its old text is no longer the file's
                report.removed += self.collection.delete([rel])
            return []
        except (UnicodeDecodeError, OSError, InvalidRecord) as exc:
            reason = "not valid UTF-8" if isinstance(exc, UnicodeDecodeError) else str(exc)
            report.skipped.append((rel, reason))
            self.failed.add(rel)
            if self._stored(rel):  # its old text is no longer the file's: as a full sync does
                report.removed += self.collection.delete([rel])
            return []
        report.add_upsert(result)
        return list(result.errors)

    def _stored(self, rel: str) -> bool:
        return bool(self.collection.store.record_hashes(self.collection.name, [rel]))

    def wanted(self, rel: str) -> bool:
        """True when the relative path ``rel`` is a note this watcher indexes (as scan_folder)."""
        name = rel.rsplit("/", 1)[-1]
        if self._ignored(rel):
            return False
        return any(
            fnmatch.fnmatchcase(name, g) or fnmatch.fnmatchcase(rel, g) for g in self.include
        )

    def _ignored(self, rel: str) -> bool:
        """Hidden, under a skipped folder, or excluded: events here are ignored."""
        parts = rel.split("/")
        if any(p.startswith(".") or p in SKIPPED_DIRS for p in parts):
            return True
        return any(path_matches(rel, g) for g in self.exclude)

    # -- watching -----------------------------------------------------------------------------

    def relative(self, path: str) -> str | None:
        """The POSIX path of ``path`` relative to the root, or None if outside it."""
        rel = os.path.relpath(os.path.abspath(path), self.root)
        return None if rel == "." or rel.startswith("..") else Path(rel).as_posix()

    def _event_filter(self, _change: object, path: str) -> bool:
        rel = self.relative(path)
        return rel is not None and not self._ignored(rel)

    def run(self, ready: threading.Event | None = None) -> None:
        """Sync, then apply events until :meth:`stop` is called (blocks).

        Args:
            ready: set once the first sync has ended and events are being followed.
        """
        from watchfiles import watch

        events = watch(
            self.root,
            watch_filter=self._event_filter,
            debounce=self.debounce_ms,
            step=min(50, self.debounce_ms),
            stop_event=self.stop_event,
            rust_timeout=1000,
            yield_on_timeout=True,
            raise_interrupt=False,
        )
        synced = False
        last_try = -1e9
        for changes in events:  # the notifier is set up before the first yield
            if (not synced and time.monotonic() - last_try >= min(self.retry_s, 5.0)) or (
                synced and not changes and self._repair_due(last_try)
            ):
                last_try = time.monotonic()
                synced = self._guarded(self.sync) or synced
                if ready is not None and synced:
                    ready.set()
                continue
            if not synced:
                continue  # the next full sync covers these changes
            rels = {r for _, p in changes if (r := self.relative(p)) is not None}
            if rels:
                self._guarded(functools.partial(self.apply, rels))

    def _repair_due(self, last_try: float) -> bool:
        if time.monotonic() - last_try < self.retry_s:
            return False
        return not read_health(self.collection.store, self.collection.name).semantic_ok

    def _guarded(self, step: Callable[[], object]) -> bool:
        """Run one sync or batch; log a failure (the index is quarantined) and keep watching."""
        try:
            step()
            return True
        except SemsearchError as exc:
            self.echo(f"sync failed: {exc.message}")
        except Exception as exc:  # a driver error: recorded as quarantine by apply/sync
            log.exception("sync failed")
            self.echo(f"sync failed: {type(exc).__name__}: {exc}")
        return False

    def start(self) -> threading.Event:
        """Run :meth:`run` in a daemon thread; returns the event set when the first sync ended."""
        ready = threading.Event()
        self._thread = threading.Thread(
            target=self.run, args=(ready,), name="semsearch-watch", daemon=True
        )
        self._thread.start()
        return ready

    def stop(self, timeout: float = 10.0) -> None:
        """Stop following events and wait (up to ``timeout`` s) for the current batch to end."""
        self.stop_event.set()
        if self._thread is not None:
            self._thread.join(timeout)
        if self._on_stop is not None and (self._thread is None or not self._thread.is_alive()):
            self._on_stop()
            self._on_stop = None


def watch_in_background(
    location: str,
    root: str | Path,
    collection: str = "notes",
    *,
    embedder: str | None = None,
    exclude: Sequence[str] = (),
    echo: Callable[[str], None] | None = None,
    new_folder: bool = False,
) -> FolderWatcher:
    """Start a watcher thread with its own connection to ``location`` (what ``--watch`` runs).

    The collection (and for SQLite the index file) is created before this returns, so a
    server that connects afterwards sees it; the first sync then runs in the thread.
    :meth:`FolderWatcher.stop` stops the thread and closes the connection. ``new_folder``:
    re-point a collection that holds another folder's notes at ``root`` (see
    :class:`FolderWatcher`).

    Raises:
        SemsearchError: ``root`` is not a folder, or the location cannot be opened.
        FolderMismatch: the collection holds another folder's notes and ``new_folder`` is
            False (nothing is written).
    """
    import semsearch
    from semsearch.sources.vault import VAULT_SCHEMA

    db = semsearch.connect(location)
    try:
        coll = db.collection(collection, schema=VAULT_SCHEMA, embedder=embedder)
        watcher = FolderWatcher(coll, root, exclude=exclude, echo=echo, new_folder=new_folder)
    except BaseException:
        db.close()
        raise
    watcher._on_stop = db.close
    watcher.start()
    return watcher
