"""Progress of long commands (index, import, reindex, reembed, eval), on stderr only.

On a terminal it is Rich's live bar, removed when done. Off a terminal (``2>log``, CI, a pipe)
Rich hides its bar, so a long run would print nothing until it ends; there a plain line goes to
stderr every :data:`DEFAULT_SECONDS` seconds, as pip and tqdm print theirs:

    indexing files: 120/300 files (40%), 12.0 files/s, ETA 0:00:15

(``done/total``, rate since the start, ETA; without a known total only done and rate), and
exactly one last line when the work ends, however short it was (not repeated when the last
interval line already shows the final count). stdout is never touched, so ``--json`` output
stays one clean document. ``SEMSEARCH_PROGRESS_SECONDS`` sets the interval (0: a line at every
update the command makes, e.g. per batch of files for ``index``).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from types import TracebackType
from typing import Any

from semsearch.cli.common import err_console

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
        return f"{description}: {done} {unit}, {speed}"
    eta = _clock_text((total - done) / rate) if rate > 0 else "unknown"
    return f"{description}: {done}/{total} {unit} ({100 * done // total}%), {speed}, ETA {eta}"


class ProgressLine:
    """A context manager that shows progress: ``update(done, total)`` or ``advance(n)``.

    Args:
        description: what runs, e.g. "indexing files".
        unit: what is counted, plural, e.g. "files".
        total: how many there are, when known up front (``update`` may set it later).
        interval: seconds between plain lines off a terminal (default: the
            ``SEMSEARCH_PROGRESS_SECONDS`` environment variable, else 5).
        clock: monotonic seconds (tests pass a fake one).
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
        self.interval = interval if interval is not None else _interval_from_env()
        self._clock = clock
        self._terminal = err_console.is_terminal if terminal is None else terminal
        self._start = self._last = 0.0
        self._shown: tuple[int, int | None] | None = None  # (done, total) of the last line
        self._bar: Any = None
        self._task: Any = None

    def __enter__(self) -> ProgressLine:
        self._start = self._last = self._clock()
        if self._terminal:
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeElapsedColumn

            columns = ("{task.description}", BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
            self._bar = Progress(*columns, console=err_console, transient=True)
            self._bar.start()
            self._task = self._bar.add_task(self.description, total=self.total)
        return self

    def update(self, done: int, total: int | None = None) -> None:
        """Set the count done so far (and the total, when it becomes known)."""
        self.done = done
        if total is not None:
            self.total = total
        if self._bar is not None:
            self._bar.update(self._task, completed=done, total=self.total)
            return
        now = self._clock()
        if now - self._last >= self.interval:
            self._last = now
            self._emit(now)

    def advance(self, n: int) -> None:
        """Add ``n`` to the count done."""
        self.update(self.done + n)

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._bar is not None:
            self._bar.stop()
        elif exc is None and self._shown != (self.done, self.total):
            self._emit(self._clock())  # the last count, so a log ends with the whole run

    def _emit(self, now: float) -> None:
        line = progress_line(self.description, self.unit, self.done, self.total, now - self._start)
        err_console.print(line, markup=False, highlight=False)
        self._shown = (self.done, self.total)


def _interval_from_env() -> float:
    raw = os.environ.get(ENV_PROGRESS_SECONDS, "")
    try:
        return max(0.0, float(raw)) if raw.strip() else DEFAULT_SECONDS
    except ValueError:
        return DEFAULT_SECONDS
