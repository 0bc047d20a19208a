"""Which sentence of a keyword hit's chunk to highlight: the one holding most query terms.

Computed in Python on the shown hits only (a few chunks of a few hundred tokens), with the
query's word tokens as the keyword query builders make them (runs of letters and digits,
casefolded; see :func:`semsearch.stores.sqlite_sql.fts_query`). A term matches a word of the
sentence when one starts with the other and the shorter has at least :data:`MIN_STEM` letters,
a cheap stand-in for the stemmers of the stores (``key`` matches ``keys``); shorter terms (``a``,
``of``) must match whole words.
"""

from __future__ import annotations

import re

from semsearch.windows import Span, window_spans

__all__ = ["MIN_STEM", "keyword_highlight", "query_terms"]

_TOKEN = re.compile(r"[^\W_]+", re.UNICODE)
MIN_STEM = 3


def query_terms(query: str) -> list[str]:
    """The query's word tokens, casefolded, unique, in query order."""
    return list(dict.fromkeys(t.casefold() for t in _TOKEN.findall(query)))


def _matches(term: str, word: str) -> bool:
    if term == word:
        return True
    short, long = sorted((term, word), key=len)
    return len(short) >= MIN_STEM and long.startswith(short)


def keyword_highlight(text: str, query: str) -> Span | None:
    """The span (char offsets into ``text``, end exclusive) of the sentence window of ``text``
    that matches the most distinct query terms; the first such on a tie.

    None when ``text`` has fewer than two windows (:func:`semsearch.windows.window_spans`: no
    sentence boundary marks one out) or no window matches a term.
    """
    terms = query_terms(query)
    best: tuple[int, Span] | None = None
    for start, end in window_spans(text):
        words = {w.casefold() for w in _TOKEN.findall(text[start:end])}
        hits = sum(any(_matches(t, w) for w in words) for t in terms)
        if hits and (best is None or hits > best[0]):
            best = (hits, (start, end))
    return None if best is None else best[1]
