"""Posting arrays of a collection's records and exhaustive BM25 over them, in numpy.

The keyword sidecar (bm25/sidecar.py) scores records over the record-level table's text
(stores/sqlite/record_fts.py), with the same terms (FTS5's tokenizer, stores/fts5_tokens.py) and
column weights (title :data:`TITLE_WEIGHT`, body 1.0). semsearch's BM25 (Robertson and
Zaragoza 2009, with Lucene's IDF), per query clause ``q`` with query weight ``w(q)``
(semsearch/keyword_query.py: the square root of its count in the query) and record ``d``::

    idf(q)   = log(1 + (N - n(q) + 0.5) / (n(q) + 0.5))
    f(q, d)  = sum over the columns of weight(column) * occurrences of q in that column
    score(d) = sum_q w(q) * idf(q) * f(q, d) * (k1 + 1) / (f(q, d) + k1 * (1 - b + b * L(d)))

with k1 = 1.2, b = 0.75, N the records, n(q) the records holding q, |d| the record's tokens in
all columns (unweighted), avgdl their mean, and L(d) = |d| / avgdl up to the average, 1 +
ln(|d| / avgdl) above it (:func:`semsearch.keyword_query.relative_length`). Scores are > 0, higher is better. Lucene's IDF
is positive for every term (FTS5's own, log((N - n + 0.5) / (n + 0.5)), is negative for a term
in over half of the records and FTS5 floors it at 1e-6; it scored the same on SciFact, and
:func:`semsearch.keyword_query.fts5_idf` converts FTS5's scores where FTS5 still answers). Every record holding a query
term is scored (no pruning), so a filter applied as a mask before the top k keeps the
min(k, matching records) guarantee.

Arrays (CSR by term): ``offsets`` int64[T + 1], ``docs`` int32[nnz] (record positions,
ascending within a term), ``freqs`` float32[nnz] (``f(q, d)``), ``rowids`` int64[N] (record
rowids, ascending), ``lengths`` int32[N] (``|d|``), ``chunk_df`` int64[T] (chunks holding each
term, for the chunk a hit shows: bm25/chunks.py), and the terms, in term-id order
(terms found only in chunks have no postings).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from itertools import chain

import numpy as np
from numpy.typing import NDArray

from semsearch.keyword_query import K1, LENGTH_KNEE, TITLE_WEIGHT, B, idf
from semsearch.stores.fts5_tokens import PieceTokenizer

__all__ = [
    "Clause",
    "Phrase",
    "Postings",
    "add_term",
    "build_postings",
    "length_norms",
    "query_weights",
    "top_of",
]

#: A phrase clause, scored by FTS5 (bm25/snapshot.py): the positions of the records holding
#: it, int64[m], and for each its ``f * (k1 + 1) / (f + norm)``, float64[m] (no IDF: the
#: phrase's n(q) is m).
Phrase = tuple[NDArray[np.int64], NDArray[np.float64]]
#: One ORed query clause: a term (scored from the postings) or a phrase's scores.
Clause = str | Phrase


@dataclass
class Postings:
    """One snapshot's posting arrays (see the module docstring) and derived per-record data."""

    terms: list[str]
    offsets: NDArray[np.int64]
    docs: NDArray[np.int32]
    freqs: NDArray[np.float32]
    rowids: NDArray[np.int64]
    lengths: NDArray[np.int32]
    chunk_df: NDArray[np.int64]
    term_ids: dict[str, int] = field(init=False, repr=False)
    norm: NDArray[np.float64] = field(init=False, repr=False)
    avgdl: float = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self.term_ids = {t: i for i, t in enumerate(self.terms)}
        n = max(len(self.rowids), 1)
        self.avgdl = float(self.lengths.sum()) / n or 1.0
        self.norm = length_norms(self.lengths, self.avgdl)  # once per snapshot

    def df(self, term: Clause) -> int:
        """n(q): records holding ``term`` (0 when no record does)."""
        if not isinstance(term, str):
            return len(term[0])
        tid = self.term_ids.get(term)
        return 0 if tid is None else int(self.offsets[tid + 1] - self.offsets[tid])

    def chunk_hits(self, term: str) -> int:
        """Chunks holding ``term`` (chunk-level n(q), for the best chunk of a hit)."""
        tid = self.term_ids.get(term)
        return 0 if tid is None else int(self.chunk_df[tid])

    def scores(
        self, terms: list[Clause], weights: Sequence[float] | None = None
    ) -> NDArray[np.float64]:
        """float64[N]: each record's BM25 for ``terms`` (one entry per query clause, each with
        its query weight from ``weights``, default 1.0), 0 for records holding none of them."""
        out = np.zeros(len(self.rowids), dtype=np.float64)
        n = len(self.rowids)
        for term, w in zip(terms, query_weights(terms, weights), strict=True):
            weight = w * idf(n, self.df(term))
            if not isinstance(term, str):
                out[term[0]] += weight * term[1]
            else:
                add_term(out, self, term, weight, self.norm)
        return out

    def top(
        self,
        terms: list[Clause],
        k: int,
        mask: NDArray[np.bool_] | None,
        weights: Sequence[float] | None = None,
    ) -> tuple[NDArray[np.int64], NDArray[np.float64], int]:
        """(record positions, scores, matches): the best ``k`` records with a score > 0, plus
        any tied with the k-th (the caller breaks ties by record id), and how many records
        match. ``mask``: bool[N], records that may be returned (a filter), applied before the
        top k. ``weights``: each clause's query weight (default 1.0). Order is unspecified."""
        return top_of(self.scores(terms, weights), k, mask)

    def nbytes(self) -> int:
        """Bytes held by the arrays (the sidecar's memory, without the term dictionary)."""
        arrays = (self.offsets, self.docs, self.freqs, self.rowids, self.lengths, self.norm)
        return sum(int(a.nbytes) for a in arrays)


def length_norms(
    lengths: NDArray[np.integer] | NDArray[np.floating], avgdl: float
) -> NDArray[np.float64]:
    """float64[N]: each record's :func:`semsearch.keyword_query.length_norm` for its length in
    tokens (``avgdl`` > 0), vectorised."""
    r = np.asarray(lengths, dtype=np.float64) / (avgdl or 1.0)
    knee = LENGTH_KNEE
    rel = np.where(r <= knee, r, knee * (1.0 + np.log(np.maximum(r, knee) / knee)))
    return np.asarray(K1 * (1.0 - B + B * rel), dtype=np.float64)


def query_weights(terms: Sequence[object], weights: Sequence[float] | None) -> list[float]:
    """``weights`` as a list, or 1.0 per term when None.

    Raises:
        ValueError: a length other than ``len(terms)``.
    """
    if weights is None:
        return [1.0] * len(terms)
    if len(weights) != len(terms):
        raise ValueError(f"got {len(weights)} query weights for {len(terms)} terms")
    return [float(w) for w in weights]


def add_term(
    out: NDArray[np.float64], p: Postings, term: str, weight: float, norm: NDArray[np.float64]
) -> None:
    """Add ``term``'s BM25 part to ``out[position]`` for every record of ``p`` holding it:
    ``weight * f * (k1 + 1) / (f + norm)``, ``weight`` the term's IDF over the whole
    collection, ``norm`` float64[N] each record's ``k1 * (1 - b + b * |d| / avgdl)``."""
    tid = p.term_ids.get(term)
    if tid is None:
        return
    lo, hi = int(p.offsets[tid]), int(p.offsets[tid + 1])
    docs, f = p.docs[lo:hi], p.freqs[lo:hi].astype(np.float64)
    out[docs] += weight * (f * (K1 + 1.0)) / (f + norm[docs])


def top_of(
    scores: NDArray[np.float64], k: int, mask: NDArray[np.bool_] | None
) -> tuple[NDArray[np.int64], NDArray[np.float64], int]:
    """(positions, scores, matches) of the best ``k`` scores > 0 and any tied with the k-th,
    over positions ``mask`` allows (None: all); order unspecified."""
    cand = np.flatnonzero(scores)
    if mask is not None:
        cand = cand[mask[cand]]
    matched = len(cand)
    if len(cand) > k:
        kth = np.partition(scores[cand], len(cand) - k)[len(cand) - k]
        cand = cand[scores[cand] >= kth]
    return cand.astype(np.int64), scores[cand], matched


def build_postings(
    records: Iterable[tuple[int, str, str]],
    tokenizer: PieceTokenizer,
    chunks: Iterable[str] = (),
) -> Postings:
    """Posting arrays of ``(rowid, title, body)`` rows, given in ascending rowid order (the
    values the record-level FTS5 table indexes: TITLE_SQL and BODY_SQL), and the chunk-level
    document frequency of every term of ``chunks`` (the chunk texts the chunk table indexes)."""
    builder = PostingsBuilder(tokenizer)
    builder.add_records(list(records))
    builder.add_chunks(list(chunks))
    return builder.finish()


class PostingsBuilder:
    """Builds :class:`Postings` from batches of records and chunk texts, so that memory holds
    one batch of text at a time (call :meth:`add_records` in ascending rowid order)."""

    def __init__(self, tokenizer: PieceTokenizer) -> None:
        self.tokenizer = tokenizer
        self.term_ids: dict[str, int] = {}
        self._parts: list[tuple[NDArray[np.int64], NDArray[np.int64], NDArray[np.float32]]] = []
        self._rowids: list[NDArray[np.int64]] = []
        self._lengths: list[NDArray[np.int32]] = []
        self._docs = 0
        self._record_terms = 0
        self._chunk_df = np.zeros(0, np.int64)

    def add_records(self, batch: list[tuple[int, str, str]]) -> None:
        """Add records (rowid, title, body); each batch's rowids follow the previous one's."""
        columns: list[list[str]] = []  # title, body, title, body, ... split at whitespace
        for _, title, body in batch:
            columns += (title.split(), body.split())
        terms, col = _expand(columns, self.tokenizer, self.term_ids)
        self._record_terms = len(self.term_ids)
        weights = np.where(col % 2 == 0, TITLE_WEIGHT, 1.0).astype(np.float32)
        docs = col // 2
        self._lengths.append(np.bincount(docs, minlength=len(batch)).astype(np.int32))
        # one (term, record) pair per record holding the term, its weighted frequency summed
        key = terms * (len(batch) + 1) + docs
        pairs, inverse = np.unique(key, return_inverse=True)
        freqs = np.bincount(inverse, weights=weights).astype(np.float32)
        self._parts.append(
            (pairs // (len(batch) + 1), pairs % (len(batch) + 1) + self._docs, freqs)
        )
        self._rowids.append(np.array([r[0] for r in batch], np.int64))
        self._docs += len(batch)

    def add_chunks(self, texts: list[str]) -> None:
        """Count each term once per chunk text (chunk-level document frequency)."""
        terms, chunk = _expand([t.split() for t in texts], self.tokenizer, self.term_ids)
        pairs = np.unique(terms * (len(texts) + 1) + chunk)
        found = np.bincount(pairs // (len(texts) + 1), minlength=len(self.term_ids))
        grown = np.zeros(len(self.term_ids), np.int64)
        grown[: len(self._chunk_df)] = self._chunk_df
        self._chunk_df = grown + found

    def finish(self) -> Postings:
        """The postings of everything added (terms found only in chunks have none)."""
        names = [""] * len(self.term_ids)
        for t, i in self.term_ids.items():
            names[i] = t
        empty = (np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.float32))
        terms, docs, freqs = (
            np.concatenate(c) for c in zip(*(self._parts or [empty]), strict=True)
        )
        # a stable sort by term keeps records ascending within each term (batches come in
        # rowid order, pairs within a batch sorted): two 16-bit radix passes, linear time
        order = np.argsort((terms & 0xFFFF).astype(np.uint16), kind="stable")
        order = order[np.argsort((terms[order] >> 16).astype(np.uint16), kind="stable")]
        chunk_df = np.zeros(len(names), np.int64)
        chunk_df[: len(self._chunk_df)] = self._chunk_df
        rowids = np.concatenate(self._rowids) if self._rowids else np.zeros(0, np.int64)
        lengths = np.concatenate(self._lengths) if self._lengths else np.zeros(0, np.int32)
        return Postings(
            names,
            np.searchsorted(terms[order], np.arange(len(names) + 1)).astype(np.int64),
            docs[order].astype(np.int32),
            freqs[order],
            rowids,
            lengths,
            chunk_df,
        )


def _expand(
    columns: list[list[str]], tokenizer: PieceTokenizer, term_ids: dict[str, int]
) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    """(term id, column number) of every token of ``columns`` (whitespace-split texts), in
    order; new terms are added to ``term_ids``. Each distinct piece is tokenized once."""
    piece_ids: dict[str, int] = {}
    for col in columns:
        for piece in col:
            piece_ids.setdefault(piece, len(piece_ids))
    found = tokenizer.pieces(piece_ids)
    per_piece = [[term_ids.setdefault(t, len(term_ids)) for t in found[p]] for p in piece_ids]
    # pieces -> terms as CSR, so that every token is expanded in numpy
    p_len = np.fromiter(map(len, per_piece), np.int64, len(per_piece))
    p_terms = np.fromiter(chain.from_iterable(per_piece), np.int64, int(p_len.sum()))
    p_start = np.cumsum(p_len) - p_len
    flat = np.fromiter(
        map(piece_ids.__getitem__, chain.from_iterable(columns)), np.int64, sum(map(len, columns))
    )
    col_of = np.repeat(np.arange(len(columns), dtype=np.int64), list(map(len, columns)))
    n_terms = p_len[flat]
    # token i of piece j is term p_terms[p_start[j] + i]
    first = np.repeat(p_start[flat], n_terms)
    within = np.arange(int(n_terms.sum()), dtype=np.int64) - np.repeat(
        np.cumsum(n_terms) - n_terms, n_terms
    )
    return p_terms[first + within], np.repeat(col_of, n_terms)
