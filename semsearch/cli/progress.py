"""Progress of long commands (index, import, reindex, reembed, eval), on stderr only.

On a terminal it is Rich's live bar, redrawn ten times a second and removed when done. Off a
terminal (``2>log``, CI, a pipe) Rich hides its bar, so a long run would print nothing until it
ends; there a plain line goes to stderr every :data:`DEFAULT_SECONDS` seconds, as pip and tqdm
print theirs, even while nothing is counted (one huge note being parsed or stored):

    indexing files: 0/1 files (0%), 0.0 files/s, ETA unknown; chunks: 9,840 cut, 2,304/9,840 embedded, 20,112 sentence windows

(``done/total``, rate since the start, ETA; without a known total only done and rate; then the
library's chunk counts, :mod:`semsearch.progress`, which move per embedder batch), and
exactly one last line when the work ends, however short it was (not repeated when the last
interval line already shows the final count). stdout is never touched, so ``--json`` output
stays one clean document. ``SEMSEARCH_PROGRESS_SECONDS`` sets the interval (0: a line at every
update, e.g. per batch of files for ``index`` and per embedder batch of chunks).
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections.abc import Callable
from types import TracebackType
from typing import Any

from semsearch.cli.common import err_console
from semsearch.progress import Event, reporting

__all__ = ["DEFAULT_SECONDS", "ENV_PROGRESS_SECONDS", "ProgressLine", "progress_line"]

#: Seconds between two plain progress lines off a terminal.
DEFAULT_SECONDS = 5.0
ENV_PROGRESS_SECONDS = "SEMSEARCH_PROGRESS_SECONDS"


def _clock_text(seconds: float) -> str:
    """``H:MM:SS``, as tqdm shows times."""
    whole = round(seconds)
    return f"{whole // 3600}:{whole % 3600 // 60:02d}:{whole % 60:02d}"


def progress_line(description: str, unit: str, done: int, total: int | None, elapsed: float) -> str:
    """One plain progress line; the rate is ``done / elapsed`` (units per second).

    >>> progress_line("importing records", "records", 50, 200, 10.0)
    'importing records: 50/200 records (25%), 5.0 records/s, ETA 0:00:30'
    """
    rate = done / elapsed if elapsed > 0 else 0.0
    speed = f"{rate:.1f} {unit}/s"
    if not total:
        return f"{description}: {done:,} {unit}, {speed}"
    eta = _clock_text((total - done) / rate) if rate > 0 else "unknown"
    return f"{description}: {done:,}/{total:,} {unit} ({100 * done // total}%), {speed}, ETA {eta}"


class ProgressLine:
    """A context manager that shows progress: ``update(done, total)`` or ``advance(n)``.

    Inside it, the library's chunk events (:mod:`semsearch.progress`: chunks cut, queued,
    embedded, sentence windows embedded) are counted too and shown after the main count, so a
    single large file moves the display batch by batch. When ``unit`` is "chunks" the main
    count already says how many are embedded, and only the sentence windows are added.
    Off a terminal a heartbeat thread prints the line every ``interval`` seconds even when
    nothing was updated (a long chunking or store write), so a log never goes quiet longer.

    Args:
        description: what runs, e.g. "indexing files".
        unit: what is counted, plural, e.g. "files".
        total: how many there are, when known up front (``update`` may set it later).
        interval: seconds between plain lines off a terminal (default: the
            ``SEMSEARCH_PROGRESS_SECONDS`` environment variable, else 5).
        clock: monotonic seconds (tests pass a fake one; the heartbeat runs on the real one
            only).
        terminal: force the Rich bar (True) or the plain lines (False); default: whether
            stderr is a terminal.
    """

    def __init__(
        self,
        description: str,
        unit: str,
        *,
        total: int | None = None,
        interval: float | None = None,
        clock: Callable[[], float] = time.monotonic,
        terminal: bool | None = None,
    ) -> None:
        self.description, self.unit, self.total = description, unit, total
        self.done = 0
        self.counts: dict[Event, int] = dict.fromkeys(("cut", "queued", "embedded", "windows"), 0)
        self.interval = interval if interval is not None else _interval_from_env()
        self._clock = clock
        self._terminal = err_console.is_terminal if terminal is None else terminal
        self._start = self._last = 0.0
        self._shown: tuple[int, int | None, str] | None = None  # what the last line showed
        self._bar: Any = None
        self._task: Any = None
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._beat: threading.Thread | None = None
        self._events: contextlib.ExitStack | None = None

    def __enter__(self) -> ProgressLine:
        self._start = self._last = self._clock()
        if self._terminal:
            from rich.progress import (
                BarColumn,
                MofNCompleteColumn,
                Progress,
                TextColumn,
                TimeElapsedColumn,
            )

            columns = (
                "{task.description}",
                BarColumn(),
                MofNCompleteColumn(),
                TextColumn("{task.fields[detail]}"),
                TimeElapsedColumn(),
            )
            self._bar = Progress(*columns, console=err_console, transient=True)
            self._bar.start()  # redraws 10 times a second: the elapsed time always moves
            self._task = self._bar.add_task(self.description, total=self.total, detail="")
        elif self.interval > 0 and self._clock is time.monotonic:
            self._beat = threading.Thread(target=self._heartbeat, name="progress", daemon=True)
            self._beat.start()
        self._events = contextlib.ExitStack()
        self._events.enter_context(reporting(self.count))
        return self

    def update(self, done: int, total: int | None = None) -> None:
        """Set the count done so far (and the total, when it becomes known)."""
        with self._lock:
            self.done = done
            if total is not None:
                self.total = total
        self._refresh()

    def advance(self, n: int) -> None:
        """Add ``n`` to the count done."""
        self.update(self.done + n)

    def count(self, event: Event, n: int) -> None:
        """A :data:`semsearch.progress.Sink`: ``n`` more of ``event`` (chunks cut, ...)."""
        with self._lock:
            self.counts[event] += n
        self._refresh()

    def detail(self) -> str:
        """The chunk counts shown after the main count, e.g. ``chunks: 1,234/5,000 embedded,
        40,210 sentence windows`` ("" before any)."""
        c = self.counts
        parts = []
        if c["cut"] and self.unit != "chunks":
            parts.append(f"{c['cut']:,} cut")
        if c["queued"] and self.unit != "chunks":
            parts.append(f"{c['embedded']:,}/{c['queued']:,} embedded")
        text = f"chunks: {', '.join(parts)}" if parts else ""
        if c["windows"]:
            text += f"{', ' if text else ''}{c['windows']:,} sentence windows"
        return text

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._events is not None:
            self._events.close()
        self._stop.set()
        if self._beat is not None:
            self._beat.join()
        if self._bar is not None:
            self._bar.stop()
        elif exc is None and self._shown != self._state():
            self._emit(self._clock())  # the last count, so a log ends with the whole run

    def _state(self) -> tuple[int, int | None, str]:
        return (self.done, self.total, self.detail())

    def _refresh(self) -> None:
        if self._bar is not None:
            self._bar.update(
                self._task, completed=self.done, total=self.total, detail=self.detail()
            )
            return
        with self._lock:
            now = self._clock()
            if now - self._last >= self.interval:
                self._emit(now)

    def _heartbeat(self) -> None:
        """Off a terminal: a line whenever ``interval`` seconds passed without one."""
        while not self._stop.wait(max(0.05, self._last + self.interval - self._clock())):
            with self._lock:
                now = self._clock()
                if now - self._last >= self.interval:
                    self._emit(now)

    def _emit(self, now: float) -> None:
        self._last = now
        line = progress_line(self.description, self.unit, self.done, self.total, now - self._start)
        detail = self.detail()
        err_console.print(f"{line}; {detail}" if detail else line, markup=False, highlight=False)
        self._shown = self._state()


def _interval_from_env() -> float:
    raw = os.environ.get(ENV_PROGRESS_SECONDS, "")
    try:
        return max(0.0, float(raw)) if raw.strip() else DEFAULT_SECONDS
    except ValueError:
        return DEFAULT_SECONDS
