"""Layout 4's keyword columns: each record's terms on its head row (``kw``), and each chunk's
casefolded text (``folded``) for the substring scan.

Keyword search ranks whole records by semsearch's BM25 (semsearch/keyword_query.py) over the
terms the SQLite store counts: FTS5's ``porter unicode61 remove_diacritics 2`` tokens of the
record's title and body (:mod:`semsearch.stores.record_terms`, tokenized by FTS5 itself through
:class:`~semsearch.stores.fts5_tokens.PieceTokenizer`). A write computes them once and stores
them on the record's head row, so that a process builds its keyword index
(:mod:`semsearch.stores.milvus.keyword_index`) by reading one column of one row per record,
without tokenizing any text.

The ``kw`` column: ``"<title terms> <chunk id>:<terms> <chunk id>:<terms> ...\\t<term> <term> ..."``,
the record's terms (title's first, then the body's) and, per chunk in order, its id and how
many of those terms are its own (a chunk's terms are the next ones: chunks are cut at
whitespace, so the record's terms are its chunks' terms in order). ``!`` (:data:`DERIVE`)
stands for a record whose chunks do not split its terms so (a chunk cut inside a word, a title
that ends inside a word, text outside every chunk) or whose terms exceed a VARCHAR: whoever
reads it derives the terms from the record's text and its chunks' texts. Rows other than head
rows hold ``""``.
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from semsearch.keyword_query import Clause
from semsearch.results import Chunk
from semsearch.stores.fts5_tokens import PORTER, PieceTokenizer
from semsearch.stores.record_terms import clause_terms, record_body, record_title

__all__ = [
    "DERIVE",
    "RecordKeyword",
    "decode",
    "encode",
    "folded",
    "query_terms",
    "record_keyword",
    "tokenized",
]

#: The ``kw`` value of a record whose terms are derived from its text when read.
DERIVE = "!"
_VARCHAR = 65535

_tokenizer: PieceTokenizer | None = None
_lock = threading.Lock()  # PieceTokenizer is not thread-safe


@dataclass(frozen=True)
class RecordKeyword:
    """One record's keyword terms.

    Attributes:
        terms: the record's FTS5 terms, its title's first (BM25's ``|d|`` is their number).
        title: how many of ``terms`` are the title's (weighted by TITLE_WEIGHT).
        chunk_ids: the record's chunk ids (the ids searches return), in order.
        chunk_terms: each chunk's FTS5 terms, in the same order.
        aligned: True when ``terms`` are ``chunk_terms`` joined in order (then ``kw`` fits
            them without repeating them).
    """

    terms: tuple[str, ...]
    title: int
    chunk_ids: tuple[int, ...]
    chunk_terms: tuple[tuple[str, ...], ...]
    aligned: bool


def _shared() -> PieceTokenizer:
    """The process's tokenizer (call with ``_lock`` held)."""
    global _tokenizer
    if _tokenizer is None:
        _tokenizer = PieceTokenizer(PORTER)
    return _tokenizer


def tokenized(texts: Sequence[str]) -> list[tuple[str, ...]]:
    """Each text's FTS5 terms (``porter unicode61 remove_diacritics 2``), in order."""
    with _lock:
        tokenizer = _shared()
        return [tuple(tokenizer.terms(t)) for t in texts]


def query_terms(clauses: Sequence[Clause]) -> list[tuple[Clause, tuple[str, ...]]]:
    """Each query clause with its FTS5 terms (:func:`~semsearch.stores.record_terms.clause_terms`)."""
    with _lock:
        return clause_terms(_shared(), clauses)


def folded(text: str) -> str:
    """A chunk's text for the substring scan: casefolded (``str.casefold``), cut to a VARCHAR."""
    out = text.casefold()
    if len(out) > _VARCHAR // 4 and len(out.encode()) > _VARCHAR:
        out = out.encode()[:_VARCHAR].decode(errors="ignore")
    return out


def _cut_at_whitespace(text: str, title: str, chunks: Sequence[Chunk]) -> bool:
    """True when the record's terms are its chunks' terms in order and its title's are the
    first of them: every chunk is its slice of ``text``, chunks are apart by whitespace, no
    other text lies outside them, and the title ends at whitespace (or the text's end)."""
    if title and len(title) < len(text) and not text[len(title)].isspace():
        return False
    at = 0
    for n, c in enumerate(chunks):
        gap = text[at : c.char_start]
        if c.char_start < at or text[c.char_start : c.char_end] != c.text or gap.strip():
            return False
        if n and not gap:  # two chunks touching: a word may be cut between them
            return False
        at = c.char_end
    return not text[at:].strip()


def record_keyword(
    fields: Mapping[str, Any], text: str, chunks: Sequence[tuple[int, Chunk]]
) -> RecordKeyword:
    """The :class:`RecordKeyword` of a record's fields and text and its ``(chunk id, Chunk)``
    pairs in order: the SQLite store's record terms (``record_title`` + ``record_body``)."""
    title = record_title(fields, text)
    found = tokenized([c.text for _, c in chunks] + [title])
    chunk_terms, title_terms = tuple(found[:-1]), found[-1]
    ids = tuple(cid for cid, _ in chunks)
    if _cut_at_whitespace(text, title, [c for _, c in chunks]):
        terms = tuple(t for ts in chunk_terms for t in ts)
        return RecordKeyword(terms, len(title_terms), ids, chunk_terms, True)
    (body,) = tokenized([record_body(fields, text)])
    return RecordKeyword((*title_terms, *body), len(title_terms), ids, chunk_terms, False)


def encode(rk: RecordKeyword) -> str:
    """The ``kw`` column of a record (see the module docstring)."""
    if not rk.aligned:
        return DERIVE
    head = " ".join(
        f"{cid}:{len(ts)}" for cid, ts in zip(rk.chunk_ids, rk.chunk_terms, strict=True)
    )
    out = f"{rk.title} {head}\t{' '.join(rk.terms)}"
    if len(out) > _VARCHAR // 4 and len(out.encode()) > _VARCHAR:
        return DERIVE
    return out


def decode(value: str) -> RecordKeyword | None:
    """The :class:`RecordKeyword` a ``kw`` value holds; None for :data:`DERIVE` (derive it
    from the record's text) or a value this version cannot read.

    Raises:
        nothing: a malformed value gives None (the reader derives the terms instead).
    """
    if value == DERIVE or "\t" not in value:
        return None
    head, _, joined = value.partition("\t")
    title, *parts = head.split(" ")
    terms = tuple(joined.split(" ")) if joined else ()
    try:
        ids, sizes = [], []
        for part in parts:
            if part:
                cid, _, count = part.partition(":")
                ids.append(int(cid))
                sizes.append(int(count))
        if sum(sizes) != len(terms):
            return None
        cuts = [0]
        for size in sizes:
            cuts.append(cuts[-1] + size)
        chunk_terms = tuple(terms[a:b] for a, b in itertools.pairwise(cuts))
        return RecordKeyword(terms, int(title), tuple(ids), chunk_terms, True)
    except ValueError:
        return None
