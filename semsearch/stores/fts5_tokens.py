"""FTS5's own tokenization, called from Python, for the keyword sidecar (bm25/sidecar.py).

The sidecar must see the same terms as the collection's FTS5 table, or its BM25 would differ
from FTS5's ``bm25()``. So words are tokenized by SQLite itself: an in-memory FTS5 table with
the same ``tokenize=`` argument, read back through ``fts5vocab`` (``instance``: term, row,
column, offset). Text is first split at whitespace, which every FTS5 tokenizer semsearch
offers for the sidecar (``porter unicode61 ...``) treats as a separator, and each distinct
piece is tokenized once and cached: a corpus of millions of words has a vocabulary of pieces
thousands of times smaller. A piece may give several terms (``ADR-0042`` -> ``adr``, ``0042``)
or none (``--``).
"""

from __future__ import annotations

import sqlite3
from collections import Counter, OrderedDict
from collections.abc import Iterable, Sequence
from itertools import groupby
from typing import Any

__all__ = ["PORTER", "PieceTokenizer"]

#: The default keyword tokenizer of every store: FTS5's ``tokenize=`` argument for English words,
#: Porter-stemmed, lowercased, accents removed (``café`` = ``cafe``).
PORTER = "porter unicode61 remove_diacritics 2"

#: Pieces cached at most; past this the cache starts over (bounded memory in long processes).
MAX_CACHED = 2_000_000
_BATCH = 5000
#: Texts whose terms :meth:`PieceTokenizer.shown_terms` keeps.
SHOWN_CACHED = 4096


class PieceTokenizer:
    """Terms of whitespace-separated text, as an FTS5 table with ``tokenize`` would index it.

    Args:
        tokenize: an FTS5 ``tokenize=`` argument whose tokenizer splits at whitespace, e.g.
            ``porter unicode61 remove_diacritics 2`` (trigram does not: it is not offered here).
    Not thread-safe: give each thread its own.
    """

    def __init__(self, tokenize: str) -> None:
        self.tokenize = tokenize
        self._conn = sqlite3.connect(":memory:", check_same_thread=False)
        # FTS5 cuts a very long token (e.g. 21,000 CJK characters without a space) inside a
        # character; the same bytes give the same term here for texts and for queries
        self._conn.text_factory = _decode_term
        quoted = tokenize.replace("'", "''")
        # contentless: only the index is kept, and 'delete-all' empties it at once (a table
        # with content re-tokenized each row to delete it, and read its vocabulary 3x slower:
        # 2,000 pieces 18 -> 6 ms, the first search of a query and the sidecar build wait on it)
        self._conn.execute(f"CREATE VIRTUAL TABLE t USING fts5(x, tokenize='{quoted}', content='')")
        self._conn.execute("CREATE VIRTUAL TABLE v USING fts5vocab(t, instance)")
        self._cache: dict[str, tuple[str, ...]] = {}
        self._shown: OrderedDict[str, tuple[list[str], dict[str, int]]] = OrderedDict()

    def close(self) -> None:
        """Close the in-memory database."""
        self._conn.close()

    def pieces(self, pieces: Iterable[str]) -> dict[str, tuple[str, ...]]:
        """``{piece: its terms in order}`` for each piece (text without whitespace)."""
        wanted = list(dict.fromkeys(pieces))
        missing = [p for p in wanted if p not in self._cache]
        if len(self._cache) + len(missing) > MAX_CACHED:
            self._cache.clear()
            missing = wanted
        for start in range(0, len(missing), _BATCH):
            self._tokenize(missing[start : start + _BATCH])
        return {p: self._cache[p] for p in wanted}

    def terms(self, text: str) -> list[str]:
        """The terms of ``text`` in order (what FTS5 indexes for it)."""
        split = text.split()
        cache = self._cache
        try:  # the common case: every piece seen before
            return [term for piece in split for term in cache[piece]]
        except KeyError:
            found = self.pieces(split)
            return [term for piece in split for term in found[piece]]

    def shown_terms(self, text: str) -> list[str]:
        """:meth:`terms` of a chunk a search shows, kept for the last :data:`SHOWN_CACHED`
        texts: the best chunk of a hit is chosen from its record's chunks' terms, and a server
        shows the same records again and again (a note of 50 chunks cost 50 tokenizations
        per search). The list must not be changed."""
        return self._shown_entry(text)[0]

    def shown_terms_of(self, texts: Sequence[str]) -> list[list[str]]:
        """:meth:`shown_terms` of each text, the pieces of the texts not kept yet tokenized
        together: one FTS5 round trip for a search's new chunks instead of one per chunk (a
        server's first search of a query read ~130 chunks, 9-89 ms, most of it these trips)."""
        return [terms for terms, _ in self.shown_counts_of(texts)]

    def shown_counts_of(self, texts: Sequence[str]) -> list[tuple[list[str], dict[str, int]]]:
        """Each text's :meth:`shown_terms` and how often each term occurs in them (kept with
        them: a chunk's best-chunk score looks a term's frequency up instead of counting it
        in the list, once per query term and chunk). Neither may be changed."""
        shown = self._shown
        new = [text for text in dict.fromkeys(texts) if text not in shown]
        if new:
            self.pieces(piece for text in new for piece in text.split())
        return [self._shown_entry(text) for text in texts]

    def _shown_entry(self, text: str) -> tuple[list[str], dict[str, int]]:
        found = self._shown.get(text)
        if found is None:
            terms = self.terms(text)
            found = self._shown[text] = (terms, dict(Counter(terms)))
            if len(self._shown) > SHOWN_CACHED:
                self._shown.popitem(last=False)
        else:
            self._shown.move_to_end(text)
        return found

    def _tokenize(self, batch: list[str]) -> None:
        conn = self._conn
        conn.execute("INSERT INTO t (t) VALUES ('delete-all')")
        conn.executemany("INSERT INTO t (rowid, x) VALUES (?, ?)", enumerate(batch, 1))
        found = conn.execute("SELECT doc, term FROM v ORDER BY doc, offset")
        terms = {int(doc): tuple(str(t) for _, t in group) for doc, group in groupby(found, _doc)}
        for i, piece in enumerate(batch, 1):
            self._cache[piece] = terms.get(i, ())


def _doc(row: tuple[Any, ...]) -> Any:
    return row[0]


def _decode_term(raw: bytes) -> str:
    """A term's bytes as text: invalid UTF-8 (a token FTS5 cut short) becomes U+FFFD."""
    return raw.decode("utf-8", "replace")
