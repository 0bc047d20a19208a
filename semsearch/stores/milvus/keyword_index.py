"""A collection's keyword index in the process: every record's terms, as posting arrays.

Keyword search on layout 4 ranks records exactly as the SQLite store's keyword sidecar does
(bm25/sidecar.py), with the same arrays and functions: :class:`~semsearch.bm25.postings.Postings`
of every record's terms (record-level weighted term frequencies, title weight included, and
lengths), scored by :func:`~semsearch.bm25.delta.rank_clauses` (semsearch's BM25 of
semsearch/keyword_query.py, the keyword evidence with it). Milvus' own BM25 function is not
used: it keeps its own statistics (per segment on Milvus Lite), integer term counts and no
phrase or title weight, so it cannot give this ranking (docs/milvus.md).

The index holds, per record, its terms as term ids (int32; title first) and its chunks' terms
(views into them), read from the head rows' ``kw`` column
(:mod:`semsearch.stores.milvus.keyword_columns`) or given by the process's own writes:

- **records**: a *base* of posting arrays built from every record (:meth:`KeywordIndex.fold`),
  plus the records changed since as a small *delta* (:class:`~semsearch.bm25.delta.LivePostings`:
  dead base positions, the changed records' postings), scored with the statistics of the
  records as they are now (N, n(q), avgdl over the live ones). Past :data:`FOLD_AFTER` changed
  records the base is rebuilt, from the term ids in memory (no text is read).
- **chunks** (the chunk a hit shows): N, the total length and each term's chunk frequency,
  kept exact through every change (a record's old chunks are subtracted, its new ones added).
- **phrases** (``ADR-0042``): the records holding every term of the phrase, counted from their
  terms (:func:`~semsearch.stores.record_terms.phrase_frequency`, FTS5's phrase counting).

Memory: about 4 bytes per term occurrence (the term ids) plus the posting arrays (about 12
bytes per distinct term of each record): on SciFact's 5,183 records about 12 MB.
Not thread-safe on its own: callers hold :attr:`KeywordIndex.lock`.
"""

from __future__ import annotations

import itertools
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

from semsearch.bm25.delta import LivePostings, Ranked, rank_clauses
from semsearch.bm25.postings import Clause, Phrase, Postings
from semsearch.keyword_query import K1, TITLE_WEIGHT
from semsearch.keyword_query import Clause as QueryClause
from semsearch.stores.base import ScoredChunk
from semsearch.stores.milvus.keyword_columns import RecordKeyword
from semsearch.stores.record_terms import best_chunk, phrase_frequency, term_weights

__all__ = ["FOLD_AFTER", "Entry", "KeywordIndex"]

#: Changed records after which the base arrays are rebuilt (a delta that large costs more to
#: score than the rebuild: about 1 s at 100,000 records).
FOLD_AFTER = 2000
_MASKS = 16  # filter masks kept per view
_PHRASES = 256  # phrase clauses kept per view


@dataclass(frozen=True)
class Entry:
    """One record: ``terms`` (int32 term ids, its title's ``title`` first), its chunks' ids and
    terms (``chunks``: int32 arrays, views into ``terms`` when they split it), and its distinct
    terms ``uniq`` (ascending) with their weighted frequencies ``freq`` (title TITLE_WEIGHT)."""

    terms: NDArray[np.int32]
    title: int
    chunk_ids: tuple[int, ...]
    chunks: tuple[NDArray[np.int32], ...]
    uniq: NDArray[np.int32]
    freq: NDArray[np.float32]


@dataclass
class _View:
    """The records as one version of the index scores them."""

    live: LivePostings
    ids: list[str]  # position -> record id (dead positions keep their old id)
    pos: dict[str, int]  # live record id -> position, for the changed records only
    masks: OrderedDict[object, NDArray[np.bool_]] = field(default_factory=OrderedDict)
    phrases: dict[tuple[str, ...], Phrase] = field(default_factory=dict)
    chunk_phrases: dict[tuple[str, ...], int] = field(default_factory=dict)


class KeywordIndex:
    """The keyword index of one collection (see the module docstring).

    Attributes:
        version: bumped by every change; a view, its filter masks and phrases hold for one.
        stamps: on a Milvus server, the writers' stamps this index reflects
            (:mod:`semsearch.stores.milvus.keyword`); unused on Milvus Lite.
    """

    def __init__(self) -> None:
        self.lock = threading.RLock()
        self.version = 0
        self.stamps: dict[str, str] = {}
        self.vocab: dict[str, int] = {}
        self.words: list[str] = []
        self.entries: dict[str, Entry] = {}
        self.chunk_df = np.zeros(0, np.int64)
        self.chunks = 0
        self.chunk_tokens = 0
        self._changed: dict[str, None] = {}
        self._base = _postings([], [], 0)
        self._base_ids: list[str] = []
        self._base_pos: dict[str, int] = {}
        self._view: _View | None = None

    # -- changes ------------------------------------------------------------------------
    def put(self, changed: Mapping[str, RecordKeyword | None]) -> None:
        """Store records' terms (None: the record was deleted), as one batch."""
        old = [e for r in changed if (e := self.entries.pop(r, None)) is not None]
        self._count_chunks(old, -1)
        live = [(r, k) for r, k in changed.items() if k is not None]
        new = self._entries([k for _, k in live])
        self.entries.update((r, e) for (r, _), e in zip(live, new, strict=True))
        self._count_chunks(new, 1)
        self._changed.update(dict.fromkeys(changed))
        self.version += 1
        self._view = None

    def load(self, records: Sequence[tuple[str, RecordKeyword]]) -> None:
        """Add many records at once (a build), then rebuild the base."""
        added = self._entries([k for _, k in records])
        self.entries.update((r, e) for (r, _), e in zip(records, added, strict=True))
        self._count_chunks(added, 1)
        self.fold()

    def fold(self) -> None:
        """Rebuild the base arrays from every record's terms (no delta left)."""
        ids = list(self.entries)
        self._base = _postings([self.entries[r] for r in ids], self.words, 0, local=False)
        self._base_ids = ids
        self._base_pos = {r: i for i, r in enumerate(ids)}
        self._changed.clear()
        self.version += 1
        self._view = None

    def _ids(self, terms: Sequence[str]) -> NDArray[np.int32]:
        """int32 term ids of ``terms``, new terms added to the vocabulary."""
        vocab, words = self.vocab, self.words
        for t in set(terms).difference(vocab):
            vocab[t] = len(words)
            words.append(t)
        return np.fromiter(map(vocab.__getitem__, terms), np.int32, len(terms))

    def _entries(self, keywords: Sequence[RecordKeyword]) -> list[Entry]:
        """The :class:`Entry` of each record, computed for all of them at once (one sort of
        (record, term) pairs gives every record's distinct terms and weighted counts)."""
        if not keywords:
            return []
        lengths = np.fromiter((len(k.terms) for k in keywords), np.int64, len(keywords))
        terms = self._ids([t for k in keywords for t in k.terms])
        doc = np.repeat(np.arange(len(keywords), dtype=np.int64), lengths)
        starts = np.cumsum(lengths) - lengths
        titles = np.fromiter((k.title for k in keywords), np.int64, len(keywords))
        weight = np.where(np.arange(len(terms)) - starts[doc] < titles[doc], TITLE_WEIGHT, 1.0)
        size = max(len(self.words), 1)
        keys = doc * size + terms
        order = np.argsort(keys, kind="stable")
        keys, weight = keys[order], weight[order]
        first = np.ones(len(keys), np.bool_)
        first[1:] = keys[1:] != keys[:-1]
        pairs = keys[first]
        freqs = np.add.reduceat(weight, np.flatnonzero(first)) if len(keys) else weight
        cuts = np.searchsorted(pairs // size, np.arange(1, len(keywords))).tolist()
        uniq = _cut((pairs % size).astype(np.int32), cuts)
        freq = _cut(freqs.astype(np.float32), cuts)
        records = _cut(terms, np.cumsum(lengths)[:-1].tolist())
        return [
            Entry(t, k.title, k.chunk_ids, self._chunk_views(k, t), u, f)
            for k, t, u, f in zip(keywords, records, uniq, freq, strict=True)
        ]

    def _chunk_views(
        self, keyword: RecordKeyword, terms: NDArray[np.int32]
    ) -> tuple[NDArray[np.int32], ...]:
        """A record's chunks' term ids: views into ``terms`` when they split it."""
        if not keyword.chunk_terms:
            return ()
        if keyword.aligned:
            cuts = list(itertools.accumulate(len(ts) for ts in keyword.chunk_terms))[:-1]
            return tuple(_cut(terms, cuts))
        return tuple(self._ids(ts) for ts in keyword.chunk_terms)

    def _count_chunks(self, entries: Sequence[Entry], sign: int) -> None:
        """Add (``sign`` 1) or take away (-1) records' chunks from the chunk statistics: each
        term counts once per chunk holding it."""
        size = len(self.words)
        if len(self.chunk_df) < size:
            grown = np.zeros(max(size, 2 * len(self.chunk_df)), np.int64)
            grown[: len(self.chunk_df)] = self.chunk_df
            self.chunk_df = grown
        chunks = [c for e in entries for c in e.chunks]
        if not chunks:
            return
        lengths = np.fromiter(map(len, chunks), np.int64, len(chunks))
        owner = np.repeat(np.arange(len(chunks), dtype=np.int64), lengths)
        pairs = _distinct(owner * size + np.concatenate(chunks).astype(np.int64))
        self.chunk_df[:size] += sign * np.bincount(pairs % size, minlength=size)
        self.chunk_tokens += sign * int(lengths.sum())
        self.chunks += sign * len(chunks)

    # -- reads --------------------------------------------------------------------------
    def view(self) -> _View:
        """The records as they are now: the base, its dead positions and the delta (past
        :data:`FOLD_AFTER` changed records, the base is rebuilt first)."""
        if self._view is not None:
            return self._view
        if len(self._changed) > FOLD_AFTER:
            self.fold()
        n_base = len(self._base_ids)
        dead = sorted(self._base_pos[r] for r in self._changed if r in self._base_pos)
        fresh = [r for r in self._changed if r in self.entries]
        delta = None
        if fresh:
            delta = _postings([self.entries[r] for r in fresh], self.words, n_base)
        live = LivePostings(self._base, np.array(dead, np.int64) if dead else None, delta)
        pos = {r: n_base + i for i, r in enumerate(fresh)}
        self._view = _View(live, self._base_ids + fresh, pos)
        return self._view

    def position(self, view: _View, record_id: str) -> int | None:
        """A live record's position in ``view`` (None: not in the collection)."""
        found = view.pos.get(record_id)
        if found is None and record_id not in self._changed:
            found = self._base_pos.get(record_id)
        return found

    def mask(
        self, view: _View, key: object, allowed: Callable[[], Iterable[str]]
    ) -> NDArray[np.bool_]:
        """bool[view size]: the live records among ``allowed()`` (cached by ``key``: asked
        once per view)."""
        found = view.masks.get(key)
        if found is None:
            found = np.zeros(view.live.size, np.bool_)
            at = [p for r in allowed() if (p := self.position(view, r)) is not None]
            found[np.array(at, np.int64)] = True
            view.masks[key] = found
            if len(view.masks) > _MASKS:
                view.masks.popitem(last=False)
        return found

    def phrase(self, view: _View, terms: tuple[str, ...]) -> Phrase:
        """A phrase clause's (positions, ``f * (k1 + 1) / (f + norm)``) over the live records
        holding it, ``f`` its weighted count (FTS5's phrase counting with the title weight)."""
        if terms in view.phrases:
            return view.phrases[terms]
        positions, parts = [], []
        for at, entry in self._holding(view, terms):
            f = phrase_frequency(self._positions(entry, terms), terms, entry.title)
            if f > 0:
                positions.append(at)
                parts.append(f * (K1 + 1.0) / (f + float(view.live.norm[at])))
        if len(view.phrases) >= _PHRASES:
            view.phrases.clear()
        found = (np.array(positions, np.int64), np.array(parts, np.float64))
        view.phrases[terms] = found
        return found

    def _holding(self, view: _View, terms: Sequence[str]) -> list[tuple[int, Entry]]:
        """(position, entry) of the live records holding every one of ``terms``."""
        if any(t not in self.vocab for t in terms):
            return []
        held = view.live.holders(terms[0])
        for t in terms[1:]:
            held = np.intersect1d(held, view.live.holders(t))
        return [(int(p), self.entries[view.ids[int(p)]]) for p in held]

    def _positions(self, entry: Entry, terms: Sequence[str]) -> dict[str, list[int]]:
        return {t: np.flatnonzero(entry.terms == self.vocab[t]).tolist() for t in set(terms)}

    def rank(
        self,
        parts: Sequence[tuple[QueryClause, tuple[str, ...]]],
        k: int,
        allowed: tuple[object, Callable[[], Iterable[str]]] | None,
        scoped: bool = False,
    ) -> list[ScoredChunk]:
        """The top ``k`` records for the ORed clauses ``parts`` (each with its terms), best
        first, ties by record id: BM25 > 0 with keyword evidence and coverage, each record's
        first chunk, ``provisional``. ``allowed`` (a key, and a function giving the record ids a
        filter lets through, asked once per key and version) applies before the top k. ``scoped``: N, n(q) and avgdl over the allowed
        records only, each term once with its clauses' largest weight, no phrase scores (as
        ``KeywordSidecar.rank``). Stop-word clauses (kept by a query of stop words only) never
        count as evidence."""
        view = self.view()
        mask = None if allowed is None else self.mask(view, *allowed)
        if scoped:
            weights, stops = term_weights(parts)
            scope = view.live if mask is None else view.live.within(mask)
            found = rank_clauses(
                scope, list(weights), list(weights.values()), k, None, list(stops.values())
            )
        else:
            terms: list[Clause] = [
                ts[0] if len(ts) == 1 else self.phrase(view, ts) for _, ts in parts
            ]
            weight = [c.weight for c, _ in parts]
            found = rank_clauses(view.live, terms, weight, k, mask, [c.stop for c, _ in parts])
        return self._hits(view, found, k)

    def _hits(self, view: _View, found: Ranked, k: int) -> list[ScoredChunk]:
        positions, scores, _, evidence, coverage = found
        ranked = sorted(
            (-float(s), view.ids[int(p)], float(e), float(v))
            for p, s, e, v in zip(positions, scores, evidence, coverage, strict=True)
        )
        out = []
        for s, rid, e, v in ranked:
            entry = self.entries.get(rid)
            if entry is not None and entry.chunk_ids:
                out.append(ScoredChunk(entry.chunk_ids[0], rid, -s, True, e, v))
        return out[:k]

    def best_chunks(
        self, clauses: Sequence[tuple[str, ...]], record_ids: Sequence[str]
    ) -> dict[str, int]:
        """``{record id: chunk id}`` of each record's chunk that the chunk-level BM25 ranks
        first for ``clauses`` (each one's terms), as the SQLite store picks it
        (:func:`~semsearch.stores.record_terms.best_chunk` with the chunk statistics here, over
        term ids); records none of whose chunks holds a clause are left out."""
        if not clauses or not self.chunks:
            return {}
        view = self.view()
        ids = [tuple(self.vocab.get(t, -1) for t in c) for c in clauses]
        hits = [self._chunk_hits(view, c, i) for c, i in zip(clauses, ids, strict=True)]
        avgdl = self.chunk_tokens / self.chunks
        out = {}
        for rid in dict.fromkeys(record_ids):
            entry = self.entries.get(rid)
            if entry is None:
                continue
            chunks = [(c, a.tolist()) for c, a in zip(entry.chunk_ids, entry.chunks, strict=True)]
            best = best_chunk(chunks, ids, hits, self.chunks, avgdl)
            if best is not None:
                out[rid] = best
        return out

    def _chunk_hits(self, view: _View, terms: tuple[str, ...], ids: tuple[int, ...]) -> int:
        """Chunks holding a clause: a term's from the counts, a phrase's counted (cached)."""
        if len(ids) == 1:
            return 0 if ids[0] < 0 else int(self.chunk_df[ids[0]])
        if terms not in view.chunk_phrases:
            if len(view.chunk_phrases) >= _PHRASES:
                view.chunk_phrases.clear()
            view.chunk_phrases[terms] = sum(
                1
                for _, entry in self._holding(view, terms)
                for chunk in entry.chunks
                if len(_starts(chunk, ids))
            )
        return view.chunk_phrases[terms]


def _postings(
    entries: Sequence[Entry], words: list[str], first_rowid: int, local: bool = True
) -> Postings:
    """Posting arrays of ``entries`` (their positions 0 .., rowids from ``first_rowid``): over
    the whole vocabulary ``words``, or (``local``) over the terms they hold only, so that a
    small delta does not index every word."""
    counts = np.fromiter((len(e.uniq) for e in entries), np.int64, len(entries))
    terms = np.concatenate([e.uniq for e in entries]) if entries else np.zeros(0, np.int32)
    freqs = np.concatenate([e.freq for e in entries]) if entries else np.zeros(0, np.float32)
    docs = np.repeat(np.arange(len(entries), dtype=np.int32), counts)
    if local:
        uniq = _distinct(terms)
        terms = np.searchsorted(uniq, terms)
        names = [words[i] for i in uniq.tolist()]
    else:
        names = list(words)
    order = np.argsort(terms, kind="stable")  # records stay ascending within a term
    terms = terms[order]
    lengths = np.fromiter((len(e.terms) for e in entries), np.int32, len(entries))
    return Postings(
        names,
        np.searchsorted(terms, np.arange(len(names) + 1)).astype(np.int64),
        docs[order],
        freqs[order],
        np.arange(first_rowid, first_rowid + len(entries), dtype=np.int64),
        lengths,
        np.zeros(len(names), np.int64),
    )


def _distinct(values: NDArray[np.integer]) -> NDArray[np.integer]:
    """The distinct values, ascending (a sort: numpy 2.4's hashing ``np.unique`` took 3.1 s
    for 1.2 million int64 where this takes 0.06 s, measured)."""
    ordered = np.sort(values)
    keep = np.ones(len(ordered), np.bool_)
    keep[1:] = ordered[1:] != ordered[:-1]
    return ordered[keep]


def _cut(values: NDArray[Any], cuts: list[int]) -> list[NDArray[Any]]:
    """``values`` cut at the positions ``cuts`` (views; ``np.split`` costs 0.2 ms a call)."""
    bounds = [0, *cuts, len(values)]
    return [values[a:b] for a, b in itertools.pairwise(bounds)]


def _starts(values: NDArray[np.int32], ids: Sequence[int]) -> NDArray[np.intp]:
    """Positions in ``values`` where the term ids ``ids`` follow one another."""
    m = len(ids)
    if len(values) < m:
        return np.zeros(0, np.intp)
    hit = values[: len(values) - m + 1] == ids[0]
    for i in range(1, m):
        hit &= values[i : len(values) - m + 1 + i] == ids[i]
    return np.flatnonzero(hit)
