"""Sentence windows: a chunk matches on its best sentence as well as on its whole text.

A chunk of 250 tokens that holds one relevant sentence among unrelated ones embeds as the
average of its topics, so a short note on the query's topic outranks it. So each chunk of two or
more sentences is also split into *sentence windows* (its sentences, with fragments of fewer than
:data:`MIN_WINDOW_WORDS` words merged into a neighbour), each embedded alone with the
collection's model, under the chunk's heading breadcrumb as the chunk itself is
(:func:`semsearch.chunking.embedding_text`), and stored beside the chunk
(:class:`~semsearch.stores.base.WindowSet`). The breadcrumb tells a sentence which section it
belongs to: on the foam-docs vault it took semantic MRR@10 with windows from 0.646 (bare
sentences) to 0.753, against 0.682 with no windows (docs/retrieval.md).

How window vectors are made is the collection option :data:`VECTORS_OPTION`. ``"late"`` (new
collections): where the model can (:class:`~semsearch.embedders.base.LateChunking`: the ONNX
engine with mean pooling), a window's vector is the mean of the chunk's own token states over
the window's tokens ("late chunking", Günther et al. 2024, arXiv:2409.04701), from the chunk's
forward pass, so the model reads each word once. Otherwise, and in collections made before
this option (``"separate"``, or no option), each window is embedded as a text of its own
under the breadcrumb. One collection keeps one kind, since the two give cosines of different
spread; ``semsearch reembed`` rebuilds a collection's windows the late way.

The vector index keeps one vector per chunk. A semantic search ranks chunks by it, then rescores
the best :data:`RESCORE_DEPTH` records (or ``limit``, if more):

    score = WINDOW_WEIGHT * cos(query, chunk) + (1 - WINDOW_WEIGHT) * max_w cos(query, window w)

a convex mix of two cosines, so still in [-1, 1]. A chunk without windows (one sentence, or
written before windows existed) scores its chunk cosine, which is the mix of that cosine with
itself: old and new chunks share one scale. Measured on BEIR SciFact test (MiniLM int8, nDCG@10):
chunk cosine alone 0.6459, the mix over every record 0.6907, the mix over the top 50 0.6908
(docs/retrieval.md). The best window's span is the hit's ``highlight``.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import NDArray

from semsearch.chunking import SENTENCE_CUTS, embedding_text
from semsearch.embedders.base import LateChunking, check_rows
from semsearch.errors import BadVectors, DimensionMismatch, EmbedderUnavailable
from semsearch.progress import note
from semsearch.stores.base import ScoredChunk, SentenceWindows, Store, WindowSet, supports

if TYPE_CHECKING:
    from semsearch.embedders.base import Embedder
    from semsearch.results import Chunk

__all__ = [
    "KINDS",
    "LATE",
    "MIN_WINDOW_CHARS",
    "MIN_WINDOW_WORDS",
    "OPTION",
    "RESCORE_DEPTH",
    "SEPARATE",
    "VECTORS_OPTION",
    "WINDOW_WEIGHT",
    "LatePlan",
    "Span",
    "embed_late",
    "embed_windows",
    "late_windows",
    "rescore",
    "window_kind",
    "window_spans",
    "windows_enabled",
]

log = logging.getLogger(__name__)

Span = tuple[int, int]

#: A piece with fewer words than this (and fewer than :data:`MIN_WINDOW_CHARS` characters, so
#: that a sentence of Chinese or Japanese, which has no spaces, still counts) is merged into a
#: neighbour: "See above." or "Fig. 2" means nothing alone.
MIN_WINDOW_WORDS = 5
MIN_WINDOW_CHARS = 24
#: Weight of the chunk cosine in the mixed score (the best window's weight is 1 - this). 0.5
#: measured on BEIR SciFact test; see the module docstring.
WINDOW_WEIGHT = 0.5
#: Records a semantic search rescores with their windows (at least ``limit``). Measured on
#: SciFact: depth 10 gives nDCG@10 0.6817, 20 0.6869, 50 0.6908, 200 0.6907.
RESCORE_DEPTH = 50
#: The collection option (``CollectionInfo.options``) that turns windows off when False.
OPTION = "sentence_windows"
#: The collection option that says how window vectors are made: ``"late"`` or ``"separate"``
#: (the module docstring); a collection without it was made before late chunking: separate.
VECTORS_OPTION = "window_vectors"
LATE = "late"
SEPARATE = "separate"
KINDS = (SEPARATE, LATE)


def windows_enabled(options: Mapping[str, object]) -> bool:
    """True unless the collection's options say ``sentence_windows: false`` (default on)."""
    return options.get(OPTION, True) is not False


def window_kind(options: Mapping[str, object]) -> str:
    """How this collection's window vectors are made: :data:`LATE` or :data:`SEPARATE`."""
    return LATE if options.get(VECTORS_OPTION) == LATE else SEPARATE


def late_windows(options: Mapping[str, object]) -> bool:
    """True when this collection's windows come from their chunk's forward pass (where its
    model can, :func:`~semsearch.embedders.base.late_chunking`): windows on and option
    :data:`VECTORS_OPTION` ``"late"``."""
    return windows_enabled(options) and options.get(VECTORS_OPTION) == LATE


def _short(text: str) -> bool:
    return len(text.split()) < MIN_WINDOW_WORDS and len(text) < MIN_WINDOW_CHARS


def window_spans(text: str) -> list[Span]:
    """The sentence windows of a chunk's text: ``(start, end)`` char offsets, end exclusive.

    Cuts where the chunkers prefer to (paragraphs, list items, sentence ends: see
    :data:`semsearch.chunking.SENTENCE_CUTS`), trims whitespace, drops a short first piece
    on a line of its own (a title or heading: "Cure Wounds", "# Shed"; it is a label, not a
    sentence, and a window holding it would match the label's words wherever the sentence
    goes), and merges each other short piece (:func:`_short`) into the piece before it (the
    first into the one after). Returns [] when fewer than two windows remain: a one-sentence
    chunk is its own window.
    """
    cuts = sorted({i for sep in SENTENCE_CUTS for m in sep.finditer(text) for i in m.span()})
    bounds = [0, *cuts, len(text)]
    pieces: list[Span] = []
    for start, end in zip(bounds[::2], bounds[1::2], strict=False):
        while start < end and text[start].isspace():
            start += 1
        while end > start and text[end - 1].isspace():
            end -= 1
        if start < end:
            pieces.append((start, end))
    if (
        len(pieces) > 1
        and _short(text[slice(*pieces[0])])
        and "\n" in text[slice(pieces[0][1], pieces[1][0])]
    ):
        pieces = pieces[1:]  # a title or heading line: a label, which the chunk vector holds
    merged: list[Span] = []
    for start, end in pieces:
        if merged and (_short(text[start:end]) or _short(text[slice(*merged[-1])])):
            merged[-1] = (merged[-1][0], end)
        else:
            merged.append((start, end))
    return merged if len(merged) >= 2 else []


@dataclass(frozen=True)
class LatePlan:
    """The windows of a group of chunks about to be embedded late.

    Attributes:
        chunk_ids: one per embedding text.
        spans: per chunk, its window spans in the chunk's text (``Chunk.text``); [] for a
            chunk without windows.
        shifts: per chunk, where its text starts in its embedding text (the breadcrumb's
            length, :func:`~semsearch.chunking.embedding_text`).
    """

    chunk_ids: Sequence[int]
    spans: list[list[Span]]
    shifts: list[int]

    @classmethod
    def of(
        cls, chunks: Mapping[int, Chunk], chunk_ids: Sequence[int], texts: Sequence[str]
    ) -> LatePlan:
        """The plan for chunks (``Store.get_chunks``) embedded as ``texts`` (one per id; each
        ends with its chunk's text, else that chunk gets no windows here)."""
        spans: list[list[Span]] = []
        shifts: list[int] = []
        for cid, text in zip(chunk_ids, texts, strict=True):
            chunk = chunks.get(cid)
            ok = chunk is not None and text.endswith(chunk.text)
            spans.append(window_spans(chunk.text) if chunk is not None and ok else [])
            shifts.append(len(text) - len(chunk.text) if chunk is not None and ok else 0)
        return cls(chunk_ids, spans, shifts)

    def text_spans(self) -> list[list[Span]]:
        """Per chunk, its window spans as offsets into its embedding text."""
        return [
            [(a + k, b + k) for a, b in s] for s, k in zip(self.spans, self.shifts, strict=True)
        ]

    def store(
        self, store: Store, collection: str, vectors: Sequence[NDArray[np.float32] | None]
    ) -> list[int]:
        """Store the windows whose vectors were pooled (per chunk, float32[len(spans), dim]
        unit-normalised, or None).

        Returns:
            The chunks with windows but no pooled vectors: the caller embeds those the
            separate way (:func:`embed_windows`).
        """
        out: dict[int, WindowSet] = {}
        missing: list[int] = []
        for cid, spans, rows in zip(self.chunk_ids, self.spans, vectors, strict=True):
            if not spans:
                continue
            if rows is None:
                missing.append(cid)
            else:
                out[cid] = WindowSet(np.asarray(spans, dtype=np.int32), rows.astype(np.float16))
        if out and supports(store, SentenceWindows):
            store.set_windows(collection, out)
        return missing


def embed_late(
    store: Store,
    collection: str,
    embedder: LateChunking,
    chunk_ids: Sequence[int],
    texts: Sequence[str],
) -> tuple[NDArray[np.float32], set[int]]:
    """Embed chunks and store their windows from the same forward passes.

    Args:
        chunk_ids: the chunks, stored (their windows are cut from ``Store.get_chunks``).
        texts: what each chunk is embedded as (:func:`~semsearch.chunking.embedding_text`).
    Returns:
        (the chunks' vectors, float32[n, dim] unit-normalised, not stored here; the chunks
        with windows that could not be pooled, for :func:`embed_windows`).
    Raises:
        what ``embed_documents`` raises (BadVectors: no window was stored).
    """
    plan = LatePlan.of(store.get_chunks(collection, chunk_ids), chunk_ids, texts)
    vectors, pooled = embedder.embed_documents_late(texts, plan.text_spans(), plan.shifts)
    missing = plan.store(store, collection, pooled)
    note("windows", sum(len(s) for s, p in zip(plan.spans, pooled, strict=True) if p is not None))
    return vectors, set(missing)


def embed_windows(
    store: Store, collection: str, embedder: Embedder, chunk_ids: Sequence[int]
) -> int:
    """Split the chunks ``chunk_ids`` into windows, embed them and store them.

    A no-op for a store without :class:`~semsearch.stores.base.SentenceWindows`. If the
    embedder fails, the chunks keep no windows (they score by their chunk vector, as before
    windows existed) and a warning is logged: windows never fail a write. A window whose
    vector is unusable (NaN, Inf, zero) drops its chunk's windows.

    Returns:
        How many windows were stored.
    """
    if not chunk_ids or not supports(store, SentenceWindows):
        return 0
    chunks = store.get_chunks(collection, chunk_ids)
    spans = {cid: window_spans(chunk.text) for cid, chunk in chunks.items()}
    spans = {cid: s for cid, s in spans.items() if s}
    texts = [  # as a chunk is embedded: under its heading breadcrumb (chunking.embedding_text)
        embedding_text(chunks[cid].text[a:b], chunks[cid].heading_path)
        for cid, s in spans.items()
        for a, b in s
    ]
    if not texts:
        return 0
    try:
        raw = np.asarray(embedder.embed_documents(texts))
        vectors, bad = check_rows(raw, len(texts), int(raw.shape[1]), embedder.model_id)
    except (EmbedderUnavailable, DimensionMismatch, BadVectors) as exc:
        log.warning("sentence windows not embedded (chunks score by their vector): %s", exc)
        return 0
    out: dict[int, WindowSet] = {}
    row = 0
    for cid, s in spans.items():
        rows = range(row, row + len(s))
        row += len(s)
        if not any(r in bad for r in rows):
            out[cid] = WindowSet(np.asarray(s, dtype=np.int32), vectors[rows].astype(np.float16))
    store.set_windows(collection, out)
    return sum(len(w.spans) for w in out.values())


def rescore(
    store: Store,
    collection: str,
    query: NDArray[np.float32],
    ranked: Sequence[ScoredChunk],
    depth: int,
    also: Sequence[ScoredChunk] = (),
) -> tuple[list[ScoredChunk], dict[int, Span]]:
    """The first ``depth`` records of ``ranked`` rescored with their windows and sorted again
    (ties by record id), then the rest as they came.

    A record's score is the best mixed score over its chunks among ``ranked`` and ``also``
    (the other chunks the vector search returned), so a record whose best window lies in a
    chunk that is not its best by chunk cosine is found by that window.

    Args:
        store: the collection's store (without windows, ``ranked`` comes back as is).
        collection: the collection's name.
        query: the unit query vector, float32[dim].
        ranked: a record's best chunk each, by chunk cosine in [-1, 1], best first.
        depth: how many records to rescore.
        also: more candidate chunks (any records; those outside the first ``depth`` ignored).
    Returns:
        (the rescored records' best chunks (mixed score in [-1, 1]) best first, then the
        others (chunk cosine); ``{chunk id: best window's span}`` for the chunks with windows).
    """
    top, rest = list(ranked[:depth]), list(ranked[depth:])
    if not top or not supports(store, SentenceWindows):
        return top + rest, {}
    records = {c.record_id for c in top}
    pool = {c.chunk_id: c for c in [*top, *also] if c.record_id in records}
    sets = store.window_vectors(collection, list(pool))
    window_best = _best_windows(sets, query)
    spans: dict[int, Span] = {}
    best: dict[str, ScoredChunk] = {}
    for cand in pool.values():
        found = window_best.get(cand.chunk_id)
        if found is not None:
            spans[cand.chunk_id], sim = found
            mixed = WINDOW_WEIGHT * cand.score + (1.0 - WINDOW_WEIGHT) * sim
            cand = ScoredChunk(cand.chunk_id, cand.record_id, mixed, cand.provisional)
        held = best.get(cand.record_id)
        if held is None or (cand.score, -cand.chunk_id) > (held.score, -held.chunk_id):
            best[cand.record_id] = cand
    scored = sorted(best.values(), key=lambda c: (-c.score, c.record_id))
    return scored + rest, spans


def _best_windows(
    sets: Mapping[int, WindowSet], query: NDArray[np.float32]
) -> dict[int, tuple[Span, float]]:
    """``{chunk id: (best window's span, its cosine in [-1, 1])}``: one product over every
    window (a product per chunk cost more in numpy calls than in arithmetic). Row by row
    (multiply, then sum each row), not a BLAS matrix product, whose summation order depends
    on the matrix: a window's cosine must not depend on which other chunks were rescored."""
    if not sets:
        return {}
    ids = list(sets)
    windows = np.concatenate([sets[c].vectors for c in ids]).astype(np.float32, copy=False)
    spans = np.concatenate([sets[c].spans for c in ids])
    sims = (windows * query).sum(axis=1)
    counts = np.fromiter((len(sets[c].vectors) for c in ids), np.int64, len(ids))
    starts = np.concatenate(([0], np.cumsum(counts)[:-1]))
    # each chunk's best window: the first position of its segment's maximum
    tops = np.maximum.reduceat(sims, starts)
    owner = np.repeat(np.arange(len(ids)), counts)
    hit = np.flatnonzero(sims == tops[owner])
    first = hit[np.unique(owner[hit], return_index=True)[1]]
    return {
        c: ((start, end), sim)
        for c, (start, end), sim in zip(ids, spans[first].tolist(), tops.tolist(), strict=True)
    }
