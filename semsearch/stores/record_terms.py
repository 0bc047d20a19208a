"""A record's keyword terms as every store counts them: title and body, weighted frequencies,
lengths and positions.

Keyword search ranks whole records by BM25 (semsearch/keyword_query.py) over two columns: the
record's title (its ``title`` field, else its ``name`` field, when its text opens with it; a
title kept only in a field is not text) and the rest of its text, the title's occurrences
weighted by :data:`~semsearch.keyword_query.TITLE_WEIGHT`. Words are FTS5's ``porter unicode61
remove_diacritics 2`` terms (:class:`~semsearch.stores.fts5_tokens.PieceTokenizer`), so the
SQLite store (its FTS5 table and sidecar), PostgreSQL and Milvus all see the same terms. This
module states that once: :func:`record_title` (the SQLite store's ``TITLE_SQL`` in Python) and
:func:`record_terms`; :func:`phrase_frequency` counts a phrase clause as FTS5 does (consecutive
terms inside one column). For the query side, :func:`clause_terms` gives each query clause its
terms, :func:`term_weights` the terms of a ranking whose statistics stay inside a filter, and
:func:`chunk_score` the chunk-level BM25 that picks the chunk a record-level hit shows.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from semsearch.keyword_query import FTS5_IDF_FLOOR, K1, TITLE_WEIGHT, B, Clause, fts5_idf
from semsearch.stores.fts5_tokens import PieceTokenizer

__all__ = [
    "RecordTerms",
    "best_chunk",
    "chunk_score",
    "clause_terms",
    "phrase_count",
    "phrase_frequency",
    "record_body",
    "record_terms",
    "record_title",
    "term_weights",
]

#: A term, or an id that stands for one (a store's int term ids).
Token = TypeVar("Token", bound=Hashable)

#: Characters stripped between the title and the body (SQLite's ``ltrim(..., char(32, 9, 10, 13))``).
_SPACE = " \t\n\r"


def record_title(fields: Mapping[str, Any], text: str) -> str:
    """The title column of a record: its ``title`` field when it is a string (else its ``name``
    field when that is), if non-empty and the text opens with it; else ''."""
    value = next((fields[k] for k in ("title", "name") if isinstance(fields.get(k), str)), "")
    return value if value and text.startswith(value) else ""


def record_body(fields: Mapping[str, Any], text: str) -> str:
    """The body column: the text without its leading title (and the whitespace after it)."""
    title = record_title(fields, text)
    return text[len(title) :].lstrip(_SPACE) if title else text


@dataclass(frozen=True)
class RecordTerms:
    """One record's keyword terms.

    Attributes:
        tf: term -> weighted frequency: TITLE_WEIGHT per title occurrence + 1 per body one.
        length: tokens in title and body, unweighted (BM25's |d|).
        title_length: tokens in the title (positions below it are the title's).
        positions: term -> its positions, title tokens first (0 ..), then body tokens.
    """

    tf: dict[str, float]
    length: int
    title_length: int
    positions: dict[str, list[int]] = field(default_factory=dict)


def record_terms(tokenizer: PieceTokenizer, title: str, body: str) -> RecordTerms:
    """The :class:`RecordTerms` of a record's title and body columns."""
    head = tokenizer.terms(title)
    rest = tokenizer.terms(body)
    tf: dict[str, float] = {}
    positions: dict[str, list[int]] = {}
    for at, term in enumerate([*head, *rest]):
        tf[term] = tf.get(term, 0.0) + (TITLE_WEIGHT if at < len(head) else 1.0)
        positions.setdefault(term, []).append(at)
    return RecordTerms(tf, len(head) + len(rest), len(head), positions)


def phrase_frequency(
    positions: Mapping[str, Sequence[int]], phrase: Sequence[str], title_length: int
) -> float:
    """A phrase's weighted frequency in one record: occurrences of its terms at consecutive
    positions inside one column, TITLE_WEIGHT each in the title and 1 each in the body (FTS5's
    phrase counting with the column weights). 0 when a term is missing."""
    if not phrase or any(t not in positions for t in phrase):
        return 0.0
    later = [set(positions[t]) for t in phrase[1:]]
    total = 0.0
    for start in positions[phrase[0]]:
        end = start + len(phrase) - 1
        in_one_column = (end < title_length) or (start >= title_length)
        if in_one_column and all(start + i + 1 in held for i, held in enumerate(later)):
            total += TITLE_WEIGHT if start < title_length else 1.0
    return total


def phrase_count(tokens: Sequence[Token], phrase: Sequence[Token]) -> int:
    """Start positions where ``phrase`` occurs in ``tokens`` (FTS5 counts each, overlapping
    ones too); 0 for an empty phrase. Tokens are terms, or any other hashable ids of them."""
    m = len(phrase)
    if not m:
        return 0
    first, rest = phrase[0], tuple(phrase[1:])
    return sum(
        1
        for i in range(len(tokens) - m + 1)
        if tokens[i] == first and tuple(tokens[i + 1 : i + m]) == rest
    )


def best_chunk(
    chunks: Sequence[tuple[int, Sequence[Token]]],
    clauses: Sequence[Sequence[Token]],
    hits: Sequence[int],
    n_chunks: int,
    avgdl: float,
    counts: Sequence[Mapping[Token, int]] | None = None,
) -> int | None:
    """The chunk of one record that FTS5's ``bm25()`` over a chunk table ranks first for the
    ORed ``clauses`` (one weight-1 column, FTS5's IDF ``log((N - n + 0.5) / (n + 0.5))``
    floored at FTS5_IDF_FLOOR), ties to the earlier chunk; None when no chunk holds a clause.

    Args:
        chunks: the record's ``(chunk id, terms)`` in order.
        clauses: each clause's terms (one term, or a phrase of several).
        hits: chunks of the collection holding each clause (its n).
    Tokens are terms, or any other hashable ids of them (the same ids in both).
        n_chunks: chunks in the collection (N); avgdl: their mean length in terms.
        counts: each chunk's term frequencies, in the order of ``chunks``, when the caller
            keeps them (:meth:`PieceTokenizer.shown_counts_of`); the same scores, sooner.
    Clauses in half of the chunks or more are left out (they add at most 2.2e-6 to a score),
    unless every clause is, as the SQLite store's ``best_chunks`` does.
    """
    kept = list(range(len(clauses)))
    if len(kept) > 1:
        kept = [i for i in kept if 2 * hits[i] < n_chunks] or kept
    phrases = [clauses[i] for i in kept]
    idfs = [fts5_idf(n_chunks, hits[i]) if n_chunks else FTS5_IDF_FLOOR for i in kept]
    best: tuple[float, int] | None = None
    for i, (chunk_id, tokens) in enumerate(chunks):
        score = chunk_score(tokens, phrases, idfs, avgdl, counts[i] if counts else None)
        if score > 0 and (best is None or score > best[0]):
            best = (score, chunk_id)
    return None if best is None else best[1]


def clause_terms(
    tokenizer: PieceTokenizer, clauses: Sequence[Clause]
) -> list[tuple[Clause, tuple[str, ...]]]:
    """Each query clause with its terms (FTS5's tokens of its words, stemmed), as the keyword
    sidecar reads them (``KeywordSidecar.clause_terms``); clauses that give no term are
    dropped, as they match nothing. A clause of one term is scored from postings, one of
    several as a phrase."""
    found = tokenizer.pieces(t for c in clauses for t in c.tokens)
    out = []
    for clause in clauses:
        terms = tuple(t for token in clause.tokens for t in found[token])
        if terms:
            out.append((clause, terms))
    return out


def term_weights(
    pairs: Sequence[tuple[Clause, tuple[str, ...]]],
) -> tuple[dict[str, float], dict[str, bool]]:
    """The terms of :func:`clause_terms` pairs for a ranking whose statistics stay inside a
    filter (no phrase scores): each term once, with the largest query weight of the clauses
    it comes from, and whether every one of them is a stop word (kept by a query of stop
    words only)."""
    weights: dict[str, float] = {}
    stops: dict[str, bool] = {}
    for clause, terms in pairs:
        for term in terms:
            weights[term] = max(weights.get(term, 0.0), clause.weight)
            stops[term] = stops.get(term, True) and clause.stop
    return weights, stops


def chunk_score(
    tokens: Sequence[Token],
    phrases: Sequence[Sequence[Token]],
    idfs: Sequence[float],
    avgdl: float,
    counts: Mapping[Token, int] | None = None,
) -> float:
    """A chunk's BM25 for the query's clauses, as FTS5's ``bm25()`` scores the chunk-level
    table (one column, weight 1, no query weights, plain length normalisation ``|chunk| /
    avgdl``): ``sum idf(c) * f * (k1 + 1) / (f + k1 * (1 - b + b * |chunk| / avgdl))``, ``f``
    a term's occurrences or a phrase's consecutive ones in ``tokens`` (the chunk's terms, or
    ids of them, in order). ``idfs``: one per phrase (FTS5's IDF of its chunk frequency).
    ``counts``: the chunk's term frequencies, if kept (a term is looked up, not counted).
    Returns a score >= 0; 0 when no phrase occurs."""
    norm = K1 * (1 - B + B * len(tokens) / (avgdl or 1.0))
    score = 0.0
    for phrase, weight in zip(phrases, idfs, strict=True):
        if len(phrase) != 1:
            f = phrase_count(tokens, phrase)
        elif counts is not None:
            f = counts.get(phrase[0], 0)
        else:
            # a query has a few clauses and a chunk ~100 terms: a count per clause (in C)
            # beats counting every term of the chunk
            f = tokens.count(phrase[0])
        if f:  # an absent clause adds 0.0: the same sum
            score += weight * f * (K1 + 1) / (f + norm)
    return score
