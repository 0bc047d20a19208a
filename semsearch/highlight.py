"""Which sentence of a keyword hit's chunk to highlight: the one holding most query terms.

Computed in Python on the shown hits only (a few chunks of a few hundred tokens), with the
query's word tokens as the keyword query builders make them (runs of letters and digits,
casefolded; see :func:`semsearch.stores.sqlite.sql.fts_query`). A term matches a word of the
sentence when one starts with the other and the shorter has at least :data:`MIN_STEM` letters,
a cheap stand-in for the stemmers of the stores (``key`` matches ``keys``); shorter terms (``a``,
``of``) must match whole words.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator

from semsearch.windows import Span, window_spans

__all__ = ["MIN_STEM", "keyword_highlight", "query_terms"]

_TOKEN = re.compile(r"[^\W_]+", re.UNICODE)
MIN_STEM = 3


def query_terms(query: str) -> list[str]:
    """The query's word tokens, casefolded, unique, in query order."""
    return list(dict.fromkeys(t.casefold() for t in _TOKEN.findall(query)))


class _Matcher:
    """The query terms' matching rule (module docstring), with each word's answer kept: one per
    query, shared by the hits of a search and by repeated searches (:func:`_matcher`)."""

    def __init__(self, query: str) -> None:
        self.terms = frozenset(query_terms(query))
        # a word of MIN_STEM letters or more can only match a term that starts as it does
        self.heads = frozenset(t[:MIN_STEM] for t in self.terms if len(t) >= MIN_STEM)
        self.begun: dict[str, set[str]] = {}  # a word that begins longer terms -> those terms
        for t in self.terms:
            for i in range(MIN_STEM, len(t)):
                self.begun.setdefault(t[:i], set()).add(t)
        self.seen: dict[str, frozenset[str]] = {}
        # ASCII text: the regex engine finds the candidate words (a head, or a short term, at a
        # word's start), so Python looks at a few words per chunk, not all of them
        alternatives = sorted(self.heads | {t for t in self.terms if len(t) < MIN_STEM})
        self.candidates = re.compile(
            r"(?<![^\W_])(?:" + "|".join(map(re.escape, alternatives)) + r")[^\W_]*",
            re.IGNORECASE,
        )

    def words(self, text: str) -> Iterator[re.Match[str]]:
        """The words of ``text`` that may match a term (all of them unless ``text`` is ASCII,
        whose case folds letter by letter)."""
        return (self.candidates if text.isascii() else _TOKEN).finditer(text)

    def matched(self, word: str) -> frozenset[str]:
        """The terms ``word`` (casefolded) matches; empty for most words, found cheaply."""
        if word not in self.terms and word[:MIN_STEM] not in self.heads:
            return frozenset()
        found = self.seen.get(word)
        if found is None:
            hit = set(self.begun.get(word, ())) | ({word} & self.terms)
            hit.update(word[:i] for i in range(MIN_STEM, len(word)) if word[:i] in self.terms)
            found = frozenset(hit)
            if len(self.seen) > _SEEN_CAP:  # a long-lived server's vocabulary stays bounded
                self.seen.clear()
            self.seen[word] = found
        return found


_SEEN_CAP = 4096


@functools.lru_cache(maxsize=256)
def _matcher(query: str) -> _Matcher:
    return _Matcher(query)


@functools.lru_cache(maxsize=2048)
def _windows(text: str) -> tuple[Span, ...]:
    """:func:`~semsearch.windows.window_spans` of a chunk, kept for the chunks shown last: a
    server shows the same chunks again and again (paging, search as you type, popular
    records), and cutting a chunk into sentences cost more than matching its words."""
    return tuple(window_spans(text))


def keyword_highlight(text: str, query: str) -> Span | None:
    """The span (char offsets into ``text``, end exclusive) of the sentence window of ``text``
    that matches the most distinct query terms; the first such on a tie.

    None when ``text`` has fewer than two windows (:func:`semsearch.windows.window_spans`: no
    sentence boundary marks one out) or no window matches a term. The text is tokenized once
    and its windows cut only when some word matches (a server highlights every hit it returns).
    """
    matcher = _matcher(query)
    found: list[tuple[int, frozenset[str]]] = []
    if not matcher.terms:
        return None
    for m in matcher.words(text):
        terms = matcher.matched(m.group().casefold())
        if terms:
            found.append((m.start(), terms))
    if not found:
        return None
    best: tuple[int, Span] | None = None
    i = 0
    for start, end in _windows(text):
        while i < len(found) and found[i][0] < start:
            i += 1
        hit: set[str] = set()
        while i < len(found) and found[i][0] < end:
            hit |= found[i][1]
            i += 1
        if hit and (best is None or len(hit) > best[0]):
            best = (len(hit), (start, end))
    return None if best is None else best[1]
