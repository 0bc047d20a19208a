"""Progress events of long library work (chunking, embedding), for whoever shows them.

A front end (the CLI's progress display) installs a sink with :func:`reporting`; the write path
then tells it, as the work goes, how far it is, without a callback threaded through every
call between them (a folder sync, an upsert, the embedder and its engine). Events are counts,
always increments, by name (:data:`Event`):

- ``cut``: chunks cut from record texts (the chunker, as it goes: per markdown section);
- ``queued``: chunks handed to the embedder (so the total to embed grows as records are written);
- ``embedded``: chunks embedded (per embedder batch: a forward pass or an API request);
- ``windows``: sentence windows embedded (:mod:`semsearch.windows`), per embedder batch.

Embedders say when a batch of texts is done with :func:`batch_done`; the code that called the
embedder decides what the texts were with :func:`on_batches`. Both are context-local
(:mod:`contextvars`): a background worker thread with no sink costs one lookup per batch.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from typing import Literal

__all__ = ["Event", "Sink", "batch_done", "note", "on_batches", "reporting"]

Event = Literal["cut", "queued", "embedded", "windows"]
#: Receives (event, increment >= 1).
Sink = Callable[[Event, int], None]

_sink: ContextVar[Sink | None] = ContextVar("semsearch_progress_sink", default=None)
_batches: ContextVar[Callable[[int], None] | None] = ContextVar(
    "semsearch_progress_batches", default=None
)


@contextlib.contextmanager
def reporting(sink: Sink) -> Iterator[None]:
    """Send the progress events of the work done inside the block (this thread) to ``sink``."""
    token = _sink.set(sink)
    try:
        yield
    finally:
        _sink.reset(token)


def note(event: Event, n: int) -> None:
    """Tell the installed sink (if any) that ``n`` more units of ``event`` are done."""
    sink = _sink.get()
    if sink is not None and n > 0:
        sink(event, n)


@contextlib.contextmanager
def on_batches(callback: Callable[[int], None]) -> Iterator[None]:
    """Call ``callback(texts in the batch)`` each time an embedder finishes a batch inside the
    block (see :func:`batch_done`)."""
    token = _batches.set(callback)
    try:
        yield
    finally:
        _batches.reset(token)


def batch_done(n: int) -> None:
    """Called by an embedder (or its engine) when ``n`` texts have their vectors; a no-op
    outside :func:`on_batches`. Call it from the thread that called the embedder."""
    callback = _batches.get()
    if callback is not None and n > 0:
        callback(n)
