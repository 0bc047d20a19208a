"""A full incremental sync of a folder that records the index health (what ``semsearch index``,
the watcher's first pass and its repairs run).

:func:`sync_folder` runs :func:`~semsearch.sources.vault.index_folder`, then embeds every chunk
left pending, and stores the outcome in the index health (:mod:`semsearch.health`): ``ok``,
``degraded`` (files that failed, by relative path) or ``quarantined`` (it failed).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from pathlib import Path

from semsearch.collection import Collection
from semsearch.errors import EmbedderUnavailable, SemsearchError
from semsearch.health import Health, begin_sync, end_sync, quarantine
from semsearch.sources.folder_guard import check_folder
from semsearch.sources.vault import DEFAULT_INCLUDE, SyncReport, index_folder, scan_folder

__all__ = ["embed_pending", "failure_message", "sync_folder"]

log = logging.getLogger(__name__)


def sync_folder(
    collection: Collection,
    root: str | Path,
    *,
    include: Sequence[str] = DEFAULT_INCLUDE,
    exclude: Sequence[str] = (),
    progress: Callable[[int, int], None] | None = None,
    new_folder: bool = False,
    on_interrupted: Callable[[str], None] | None = None,
) -> tuple[SyncReport, Health]:
    """A full incremental sync that records the index health (what ``semsearch index`` runs).

    Runs :func:`~semsearch.sources.vault.index_folder`, then embeds every chunk still pending
    (so a sync after an embedder outage repairs the index), and stores ``ok``, ``degraded``
    (files unread or not embedded; not ``by_policy`` skips) or ``quarantined`` (it failed).
    ``new_folder``: see :func:`~semsearch.sources.vault.index_folder`. When the previous sync
    was interrupted, ``on_interrupted`` is called with one line saying so (default: logged as
    a warning), once.

    Returns:
        (what the sync did, the health stored at its end).
    Raises:
        SemsearchError: ``root`` is not a folder, or the store failed (the index is then
            quarantined when the store still accepts that write).
        FolderMismatch: the collection holds another folder's notes (nothing is written, not
            even the health).
    """
    base = Path(root).expanduser()
    if not base.is_dir():  # a wrong argument, not a failed sync
        raise SemsearchError(f"{root} is not a folder", hint="give the path of a folder of notes")
    check_folder(
        collection, root, lambda: scan_folder(base, include, exclude), new_folder=new_folder
    )
    name = collection.name
    found = begin_sync(collection.store, name, "full sync")
    if found.interrupted:
        said = f"the previous sync was interrupted: {found.reason}; repairing"
        (on_interrupted or log.warning)(said)
    try:
        report = index_folder(
            collection,
            root,
            include=include,
            exclude=exclude,
            progress=progress,
            new_folder=new_folder,
        )
        errors = list(dict.fromkeys(report.errors))
        if not errors:
            errors = embed_pending(collection, report)
    except BaseException as exc:
        quarantine(collection.store, name, f"the sync failed: {failure_message(exc)}")
        raise
    reasons = dict([*report.skipped, *report.failed])
    failed = [rel for rel in reasons if rel not in report.by_policy]
    health = end_sync(collection.store, name, errors=errors, failed=failed, reasons=reasons)
    return report, health


def embed_pending(collection: Collection, report: SyncReport) -> list[str]:
    """Embed chunks left pending by an earlier failure; the errors (empty when all went well).

    Texts the model cannot embed (a poison note, not an outage) are appended to
    ``report.failed`` as (record id, why), once each. When the only chunks without a vector
    are those this sync just tried and saw fail alone, nothing is retried.
    """
    stats = collection.store.stats(collection.name)
    if stats.pending == 0 and stats.failed <= report.chunks_failed:
        return []
    try:
        result = collection.reindex()
    except EmbedderUnavailable as exc:
        return [f"embedding failed, chunks left pending: {exc.message}"]
    known = {rel for rel, _ in report.failed}
    report.failed += [(rel, why) for rel, why in result.failed.items() if rel not in known]
    return []


def failure_message(exc: BaseException) -> str:
    """Why a sync failed, in one line for the index health."""
    if isinstance(exc, KeyboardInterrupt):  # its text is empty: "KeyboardInterrupt: " said nothing
        return "it was interrupted (Ctrl-C); the next sync repairs the index"
    return exc.message if isinstance(exc, SemsearchError) else f"{type(exc).__name__}: {exc}"
