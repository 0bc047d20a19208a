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

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from semsearch.keyword_query import TITLE_WEIGHT, Clause, term_part
from semsearch.stores.fts5_tokens import PieceTokenizer

__all__ = [
    "RecordTerms",
    "chunk_score",
    "clause_terms",
    "phrase_frequency",
    "record_body",
    "record_terms",
    "record_title",
    "term_weights",
]

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


def clause_terms(
    tokenizer: PieceTokenizer, clauses: Sequence[Clause]
) -> list[tuple[Clause, tuple[str, ...]]]:
    """Each query clause with its terms, in order (the tokenizer's terms of its tokens); a
    clause that gives no term is dropped, as it matches nothing. A clause of one term is a
    term, one of several a phrase."""
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
    tokens: Sequence[str], phrases: Sequence[tuple[str, ...]], idfs: Sequence[float], avgdl: float
) -> float:
    """A chunk's BM25 for the query's clauses, as FTS5's ``bm25()`` scores the chunk-level
    table (one column, weight 1, no query weights): ``sum idf(c) * term_part(f(c), |chunk|,
    avgdl)``, ``f`` a term's occurrences or a phrase's consecutive ones in ``tokens`` (the
    chunk's terms in order). ``idfs``: one per phrase (FTS5's IDF of its chunk frequency)."""
    counts = Counter(tokens)
    score = 0.0
    for phrase, weight in zip(phrases, idfs, strict=True):
        if len(phrase) == 1:
            f = counts.get(phrase[0], 0)
        else:
            m = len(phrase)
            f = sum(1 for i in range(len(tokens) - m + 1) if tuple(tokens[i : i + m]) == phrase)
        score += weight * term_part(f, len(tokens), avgdl)
    return score
