"""Which sentence of a keyword hit's chunk to highlight: the one holding most query terms.

Computed in Python on the shown hits only (a few chunks of a few hundred tokens), with the
query's word tokens as the keyword query builders make them (runs of letters and digits,
casefolded; see :func:`semsearch.stores.sqlite.sql.fts_query`). A term matches a word of the
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


def keyword_highlight(text: str, query: str) -> Span | None:
    """The span (char offsets into ``text``, end exclusive) of the sentence window of ``text``
    that matches the most distinct query terms; the first such on a tie.

    None when ``text`` has fewer than two windows (:func:`semsearch.windows.window_spans`: no
    sentence boundary marks one out) or no window matches a term.
    """
    terms = set(query_terms(query))
    begun: dict[str, set[str]] = {}  # a word that begins longer terms -> those terms
    for t in terms:
        for i in range(MIN_STEM, len(t)):
            begun.setdefault(t[:i], set()).add(t)
    seen: dict[str, frozenset[str]] = {}  # each word's matching terms, once per chunk

    def matched(word: str) -> frozenset[str]:
        found = set(begun.get(word, ())) | ({word} & terms)
        found.update(word[:i] for i in range(MIN_STEM, len(word)) if word[:i] in terms)
        return frozenset(found)

    best: tuple[int, Span] | None = None
    for start, end in window_spans(text):
        hit: set[str] = set()
        for word in _TOKEN.findall(text[start:end]):
            word = word.casefold()
            if word not in seen:
                seen[word] = matched(word)
            hit |= seen[word]
        if hit and (best is None or len(hit) > best[0]):
            best = (len(hit), (start, end))
    return None if best is None else best[1]
