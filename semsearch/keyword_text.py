"""Keyword queries that no word index can answer: Chinese, Japanese, Korean, and word parts.

The default keyword tokenizers (SQLite's ``porter unicode61``, PostgreSQL's ``english``
configuration, semsearch's own Milvus analyzer) split text at spaces and punctuation, so a run of
Chinese or Japanese characters is one "word" (``我在图书馆看书`` is a single token) and ``图书馆``
matches nothing; ``itgc`` glued to Chinese text (``ITGC审计``) and a word's beginning (``blaz``
for ``blazer``) miss too. Every store therefore answers such queries with a substring scan of
the chunk text (:func:`substring_pieces` says when and for which pieces): queries holding CJK
characters always, other queries only when the word index finds nothing. English word queries
that match are ranked by the word index exactly as before.

A scan reads the collection's chunks (after the ``where`` filter), so it costs time linear in
the collection's size; scores are the number of occurrences of the pieces (>= 1), not BM25.
"""

from __future__ import annotations

import re

__all__ = ["MIN_PIECE", "has_cjk", "needs_unicode_fold", "substring_pieces"]

#: Han (with extensions and compatibility ideographs), Hiragana, Katakana, Hangul syllables/jamo.
_CJK = re.compile(
    "[\u3040-\u30ff\u3130-\u318f\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\u1100-\u11ff"
    "\uf900-\ufaff\U00020000-\U0002fa1f]"
)
_QUOTES = "\"'()[]{}\u201c\u201d\u2018\u2019\u300c\u300d\u300e\u300f\u3001\u3002\uff0c\uff1f\uff01"
#: Non-CJK pieces shorter than this are not scanned for (``a`` or ``of`` would match anything).
MIN_PIECE = 3


def has_cjk(text: str) -> bool:
    """True when ``text`` holds a Chinese, Japanese or Korean character."""
    return _CJK.search(text) is not None


def substring_pieces(text: str, stopwords: frozenset[str] = frozenset()) -> list[str]:
    """The whitespace-separated pieces of a query to find as substrings, casefolded, unique.

    Pieces holding a CJK character are kept at any length; others need :data:`MIN_PIECE`
    characters and are left out when they are ``stopwords`` (``the`` is inside most texts;
    "who painted the Sistine Chapel ceiling" found every note through it), unless every piece
    is one. Quotes and CJK punctuation around a piece are dropped.
    """
    pieces = (p.strip(_QUOTES).casefold() for p in text.split())
    kept = [p for p in pieces if p and (has_cjk(p) or (len(p) >= MIN_PIECE and p.isalnum()))]
    meaningful = [p for p in kept if has_cjk(p) or p not in stopwords]
    return list(dict.fromkeys(meaningful or kept))


def needs_unicode_fold(pieces: list[str]) -> bool:
    """True when a piece holds a non-ASCII letter that has case (``ü``, ``ß``, ``é``): a scan
    must then casefold the text in full, as an ASCII-only ``lower()`` would miss ``ÜBER``."""
    return any(not ch.isascii() and ch.upper() != ch.lower() for p in pieces for ch in p)
