"""Index health: whether a collection's vectors can be trusted, stored in the index itself.

A collection's health is one of four states, kept in ``CollectionInfo.options["health"]`` (so
every backend stores it through ``Store.update_collection`` and every process that opens the
index reads the same value through ``Store.get_collection``):

    ok           the last sync finished; every file it saw is indexed
    syncing      a sync is running (its owner, ``host:pid``, is stored with it)
    degraded     the last sync finished but some files failed (listed by relative path);
                 the rest of the index is current and semantic search works
    quarantined  a sync failed part-way for a reason that makes the vectors untrustworthy
                 (the embedder failed mid-batch, or the store raised), or a sync was
                 interrupted (the process died while ``syncing``). Semantic and hybrid search
                 raise :class:`~semsearch.errors.IndexUnhealthy`; keyword search still works
                 and is marked degraded. The next successful sync clears it.

A persisted ``syncing`` state whose owner process is gone (same host, pid not alive) is read
back as ``quarantined`` with ``interrupted=True``: the per-file transactions left the index
consistent, but some chunks may still lack vectors until the next sync embeds them.
A ``syncing`` state that began from ``quarantined`` keeps refusing semantic search until the
sync finishes.
"""

from __future__ import annotations

import logging
import os
import socket
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, replace
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Literal

from semsearch.errors import IndexUnhealthy

if TYPE_CHECKING:
    from semsearch.stores.base import Store

__all__ = [
    "STATES",
    "Health",
    "HealthState",
    "begin_sync",
    "clear_after_reindex",
    "end_sync",
    "quarantine",
    "read_health",
    "refuse_semantic",
    "write_health",
]

log = logging.getLogger(__name__)

HealthState = Literal["ok", "syncing", "degraded", "quarantined"]
STATES: tuple[HealthState, ...] = ("ok", "syncing", "degraded", "quarantined")
#: The key in ``CollectionInfo.options`` that holds the health document.
OPTION_KEY = "health"
#: Failed paths kept in the stored document (the count is always exact).
MAX_LISTED = 200


@dataclass(frozen=True)
class Health:
    """A collection's health as stored in the index.

    Attributes:
        state: ok | syncing | degraded | quarantined (see the module docstring).
        reason: one sentence, no absolute paths; None when ok.
        failed: relative paths of files the last sync could not index (degraded), sorted,
            at most MAX_LISTED of them.
        failed_count: how many files failed (may exceed ``len(failed)``).
        updated_at: ISO-8601 UTC time the state was written, or None if never written.
        previous: for ``syncing``, the state the sync began from; else None.
        owner: for ``syncing``, ``"host:pid"`` of the process running the sync; else None.
        interrupted: True when a stored ``syncing`` state's owner process is gone (read back as
            quarantined); computed on read, never stored.
    """

    state: HealthState = "ok"
    reason: str | None = None
    failed: tuple[str, ...] = ()
    failed_count: int = 0
    updated_at: str | None = None
    previous: HealthState | None = None
    owner: str | None = None
    interrupted: bool = False

    @property
    def semantic_ok(self) -> bool:
        """False while semantic (and hybrid) answers must be refused."""
        if self.state == "quarantined":
            return False
        return not (self.state == "syncing" and self.previous == "quarantined")

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (what ``stats``, ``/health`` and MCP ``stats`` report)."""
        doc = asdict(self)
        doc["failed"] = list(self.failed)
        return doc

    @classmethod
    def from_dict(cls, doc: Any) -> Health:
        """Parse a stored document; anything unreadable gives the default (ok)."""
        if not isinstance(doc, dict) or doc.get("state") not in STATES:
            return cls()
        failed = tuple(str(p) for p in doc.get("failed") or ())
        previous = doc.get("previous")
        return cls(
            state=doc["state"],
            reason=doc.get("reason"),
            failed=failed,
            failed_count=int(doc.get("failed_count") or len(failed)),
            updated_at=doc.get("updated_at"),
            previous=previous if previous in STATES else None,
            owner=doc.get("owner"),
        )


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def _me() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


def _owner_gone(owner: str | None) -> bool:
    """True when ``owner`` (``host:pid``) is a process on this host that no longer runs."""
    if not owner or ":" not in owner:
        return False
    host, _, pid_text = owner.rpartition(":")
    if host != socket.gethostname() or not pid_text.isdigit():
        return False  # another machine's sync: we cannot tell, trust it
    try:
        os.kill(int(pid_text), 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False
    return False


def read_health(store: Store, name: str) -> Health:
    """The collection's health, read from the store (ok when none was ever written).

    A ``syncing`` state whose owner process on this host is gone comes back as
    ``quarantined`` with ``interrupted=True`` and a reason saying when the sync began.
    """
    info = store.get_collection(name)
    health = Health.from_dict(info.options.get(OPTION_KEY) if info else None)
    if health.state == "syncing" and _owner_gone(health.owner):
        pid = (health.owner or "").rpartition(":")[2]
        return replace(
            health,
            state="quarantined",
            interrupted=True,
            reason=f"a sync begun at {health.updated_at} was interrupted (process {pid} is "
            "gone); some chunks may lack vectors until the next sync",
        )
    return health


def write_health(store: Store, name: str, health: Health) -> Health:
    """Store ``health`` in the collection's options (one store write); returns what was stored.

    Only the ``health`` key of the options is replaced; other options are re-read first.
    """
    from semsearch.stores.base import CollectionInfo

    info = store.get_collection(name)
    if info is None:
        return health
    stamped = replace(health, updated_at=_now(), interrupted=False)
    doc = stamped.to_dict()
    doc.pop("interrupted")
    options = {**info.options, OPTION_KEY: doc}
    store.update_collection(
        CollectionInfo(info.name, info.schema_json, info.model_id, info.dim, options)
    )
    return stamped


def begin_sync(store: Store, name: str, what: str = "sync") -> Health:
    """Mark a sync as running; returns the health found BEFORE it (say what it reports).

    The stored ``previous`` is the state found (quarantined when an interrupted sync was
    found), so a quarantine keeps refusing semantic search until this sync ends well.
    """
    found = read_health(store, name)
    previous: HealthState = found.state if found.state != "syncing" else "ok"
    if found.state == "syncing" and found.previous == "quarantined":
        previous = "quarantined"
    write_health(
        store,
        name,
        Health(
            "syncing",
            f"{what} running",
            found.failed,
            found.failed_count,
            previous=previous,
            owner=_me(),
        ),
    )
    return found


def end_sync(
    store: Store,
    name: str,
    *,
    errors: Sequence[str],
    failed: Sequence[str],
    reasons: Mapping[str, str] | None = None,
) -> Health:
    """Record how a sync ended and return the stored health.

    Args:
        errors: reasons the vectors are untrustworthy (the embedder failed or was down, the
            store raised); any gives ``quarantined``.
        failed: relative paths of files that could not be indexed (unreadable, or a text the
            model could not embed); any gives ``degraded``.
        reasons: ``{path: why}`` for some of ``failed``; the first one is named in the reason.
    """
    paths = tuple(sorted(set(failed)))
    if errors:
        health = Health("quarantined", errors[0], paths[:MAX_LISTED], len(paths))
    elif paths:
        health = failed_health({p: (reasons or {}).get(p, "") for p in paths})
    else:
        health = Health()
    return write_health(store, name, health)


def quarantine(store: Store, name: str, reason: str) -> Health | None:
    """Best effort: store ``quarantined`` with ``reason``; None if the store refuses too."""
    try:
        return write_health(store, name, Health("quarantined", reason))
    except Exception as exc:  # the store itself may be what failed
        log.error("could not record the quarantine of %r: %s", name, exc)
        return None


def clear_after_reindex(store: Store, name: str, failed: Mapping[str, str] | None = None) -> Health:
    """After a reindex that left no chunk without a vector, lift a quarantine.

    A quarantine says the stored vectors cannot be trusted to match the stored text. Once every
    chunk's vector has been computed from its stored text, that no longer holds; whether the
    text itself is behind a watched folder is the next sync's business. A running sync
    (``syncing``) is left alone.

    Args:
        failed: ``{record id: why}`` of texts the model could not embed (a poison text, not an
            outage): the quarantine then becomes ``degraded`` naming them.
    """
    health = read_health(store, name)
    if health.state != "quarantined":
        return health
    if failed:
        return write_health(store, name, failed_health(failed))
    return write_health(store, name, Health())


def failed_health(failed: Mapping[str, str]) -> Health:
    """``degraded``, listing the records (files) that could not be indexed and naming the first
    one with a known reason, e.g. ``1 file(s) could not be indexed (bad.md: model fake:32
    returned NaN or Inf values)``. Values may be empty (reason unknown)."""
    paths = tuple(sorted(failed))
    reason = f"{len(paths)} file(s) could not be indexed"
    named = next((p for p in paths if failed[p]), None)
    if named is not None:
        reason += f" ({named}: {failed[named]})"
    return Health("degraded", reason, paths[:MAX_LISTED], len(paths))


def refuse_semantic(store: Store, name: str, mode: str) -> str | None:
    """The check ``Collection.search`` runs before a ranked search.

    Returns:
        None when the index is healthy enough for ``mode``; else the reason to mark a keyword
        result degraded with.
    Raises:
        IndexUnhealthy: ``mode`` is semantic or hybrid and the index is quarantined.
    """
    health = read_health(store, name)
    if health.semantic_ok:
        return None
    why = health.reason or "a sync failed part-way"
    if mode in ("semantic", "hybrid"):
        raise IndexUnhealthy(
            f"semantic search is quarantined for collection {name!r}: {why}",
            hint="run `semsearch index PATH` (or `semsearch watch PATH`) to re-sync, or wait "
            "for the next sync; keyword search still works (mode=keyword)",
        )
    return f"index quarantined ({why}); keyword results may be stale"
