"""A background embedding worker: writes return at once, vectors follow.

Records are stored first with ``Collection.upsert(records, embed=False)``: they are committed,
keyword-searchable and counted as pending. :meth:`EmbeddingWorker.submit` then hands the
collection to one background thread, which embeds its pending chunks in small batches
(``Collection.embed_pending``) until none are left. When the embedder fails, the worker retries
with exponential backoff (tenacity), then gives up and leaves the chunks marked failed: they stay
stored and keyword-searchable, ``stats`` counts them, and ``reindex`` (or the next submit) embeds
them once the embedder works again. Nothing a caller wrote is ever lost or rolled back.

The worker is generic: anything with a ``name`` and ``embed_pending(limit) -> int`` can be
submitted (a Collection, or a wrapper such as conversation memory).

    worker = EmbeddingWorker()
    worker.start()
    coll.upsert(records, embed=False)
    worker.submit(coll)          # returns at once
    ...
    worker.stop()
"""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from types import TracebackType
from typing import Protocol

from tenacity import (
    RetryError,
    Retrying,
    retry_if_exception_type,
    stop_after_attempt,
    stop_when_event_set,
    wait_exponential,
)

from semsearch.errors import EmbedderUnavailable, SemsearchError

__all__ = ["EmbeddingWorker", "PendingWork", "WorkerStatus"]

log = logging.getLogger(__name__)


class PendingWork(Protocol):
    """Something with chunks waiting for vectors: a Collection, or a wrapper around one."""

    @property
    def name(self) -> str:
        """A stable key; submits with the same name are merged."""
        ...

    def embed_pending(self, limit: int) -> int:
        """Embed up to ``limit`` pending chunks; return how many (0 when done).

        Raises EmbedderUnavailable when the embedder fails."""
        ...


@dataclass(frozen=True)
class WorkerStatus:
    """What the worker is doing for one name (or overall, when no name is given).

    Attributes:
        queued: work is waiting in the queue.
        running: work is being embedded right now.
        embedded: chunks embedded by the worker since it started.
        failures: batches given up on after every retry failed.
        last_error: the last embedder error message (None after a later success).
    """

    queued: bool
    running: bool
    embedded: int
    failures: int
    last_error: str | None


class EmbeddingWorker:
    """One daemon thread with a bounded queue that embeds pending chunks in the background.

    Args:
        queue_size: at most this many distinct names wait at once; :meth:`submit` never blocks
            and returns False when the queue is full (the chunks stay pending).
        batch_size: chunks per ``embed_pending`` call (>= 1).
        attempts: tries per batch before giving up (>= 1).
        backoff: first wait between tries, in seconds; doubles each try (exponential backoff).
        max_backoff: longest wait between tries, in seconds.
    """

    def __init__(
        self,
        *,
        queue_size: int = 1024,
        batch_size: int = 64,
        attempts: int = 4,
        backoff: float = 0.5,
        max_backoff: float = 30.0,
    ) -> None:
        self.batch_size = max(1, batch_size)
        self.attempts = max(1, attempts)
        self.backoff = backoff
        self.max_backoff = max_backoff
        self._queue: queue.Queue[PendingWork | None] = queue.Queue(maxsize=queue_size)
        self._queued: set[str] = set()
        self._running: str | None = None
        self._cond = threading.Condition()
        self._stop = threading.Event()
        self._locks: dict[str, threading.Lock] = {}
        self._embedded: dict[str, int] = {}
        self._failures: dict[str, int] = {}
        self._errors: dict[str, str | None] = {}
        self._thread: threading.Thread | None = None

    # -- lifecycle ----------------------------------------------------------------------------

    def start(self) -> None:
        """Start the thread (idempotent)."""
        if self._thread is None or not self._thread.is_alive():
            self._stop.clear()
            self._thread = threading.Thread(
                target=self._run, name="semsearch-embedding-worker", daemon=True
            )
            self._thread.start()

    def stop(self, timeout: float = 10.0) -> None:
        """Stop after the current batch; queued work stays pending in the store."""
        self._stop.set()
        with suppress(queue.Full):
            self._queue.put_nowait(None)
        if self._thread is not None:
            self._thread.join(timeout)

    def __enter__(self) -> EmbeddingWorker:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    # -- work ---------------------------------------------------------------------------------

    def submit(self, work: PendingWork) -> bool:
        """Queue ``work`` for embedding; never blocks.

        Returns:
            True when queued (or already queued); False when the queue is full or the worker
            is stopped. Either way the chunks are safely stored as pending.
        """
        if self._stop.is_set():
            return False
        with self._cond:
            if work.name in self._queued:
                return True
            try:
                self._queue.put_nowait(work)
            except queue.Full:
                log.warning("embedding queue full; %r stays pending until reindex", work.name)
                return False
            self._queued.add(work.name)
            return True

    @contextmanager
    def exclusive(self, name: str) -> Iterator[None]:
        """Hold ``name``'s embedding lock, so a foreground reindex and the worker do not embed
        the same chunks twice."""
        with self._cond:
            lock = self._locks.setdefault(name, threading.Lock())
        with lock:
            yield

    def wait_idle(self, timeout: float = 30.0) -> bool:
        """Block until nothing is queued or running; False on timeout."""
        with self._cond:
            return self._cond.wait_for(
                lambda: not self._queued and self._running is None, timeout=timeout
            )

    def status(self, name: str | None = None) -> WorkerStatus:
        """The worker's state for ``name``, or summed over every name."""
        with self._cond:
            if name is not None:
                return WorkerStatus(
                    name in self._queued,
                    self._running == name,
                    self._embedded.get(name, 0),
                    self._failures.get(name, 0),
                    self._errors.get(name),
                )
            errors = [e for e in self._errors.values() if e]
            return WorkerStatus(
                bool(self._queued),
                self._running is not None,
                sum(self._embedded.values()),
                sum(self._failures.values()),
                errors[-1] if errors else None,
            )

    def _run(self) -> None:
        while not self._stop.is_set():
            work = self._queue.get()
            if work is None:
                break
            with self._cond:
                self._queued.discard(work.name)
                self._running = work.name
            try:
                with self.exclusive(work.name):
                    self._drain(work)
            except Exception:  # the worker must survive anything one collection does
                log.exception("embedding worker: unexpected error for %r", work.name)
            finally:
                with self._cond:
                    self._running = None
                    self._cond.notify_all()

    def _drain(self, work: PendingWork) -> None:
        """Embed batches until nothing is pending, retrying each batch with backoff."""
        retrying = Retrying(
            stop=stop_after_attempt(self.attempts) | stop_when_event_set(self._stop),
            wait=wait_exponential(multiplier=self.backoff, max=self.max_backoff),
            retry=retry_if_exception_type(EmbedderUnavailable),
            sleep=self._sleep,
            reraise=False,
        )
        while not self._stop.is_set():
            try:
                done = retrying(work.embed_pending, self.batch_size)
            except (RetryError, SemsearchError) as exc:
                self._record_failure(work.name, exc)
                return
            with self._cond:
                self._embedded[work.name] = self._embedded.get(work.name, 0) + done
                self._errors[work.name] = None
            if done == 0:
                return

    def _sleep(self, seconds: float) -> None:
        """Backoff sleep that ends early when the worker stops."""
        self._stop.wait(seconds)

    def _record_failure(self, name: str, exc: Exception) -> None:
        if isinstance(exc, RetryError):
            inner = exc.last_attempt.exception()
            message = getattr(inner, "message", None) or str(inner)
        else:
            message = getattr(exc, "message", str(exc))
        log.warning("embedding %r failed after retries; chunks stay pending: %s", name, message)
        with self._cond:
            self._failures[name] = self._failures.get(name, 0) + 1
            self._errors[name] = message
