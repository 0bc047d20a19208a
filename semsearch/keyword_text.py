"""Keyword queries that no word index can answer: Chinese, Japanese, Korean, and word parts.

The default keyword tokenizers (SQLite's ``porter unicode61``, PostgreSQL's ``english``
configuration, semsearch's own Milvus analyzer) split text at spaces and punctuation, so a run of
Chinese or Japanese characters is one "word" (``我在图书馆看书`` is a single token) and ``图书馆``
matches nothing; ``itgc`` glued to Chinese text (``ITGC审计``) and a word's beginning (``blaz``
for ``blazer``) miss too. Every store therefore answers such queries with a substring scan of
the chunk text (:func:`substring_pieces` says when and for which pieces): queries holding CJK
characters always, other queries when the word index finds nothing, or when their last word
matches no word of the index while others do (a word being typed: ``black blaz``; see
:func:`semsearch.stores.query_rules.keyword_or_substring`). English word queries that match
are ranked by the word index exactly as before.

A scan reads the collection's chunks (after the ``where`` filter), so it costs time linear in
the collection's size. Its score (:func:`scan_score`) ranks how each piece is held, not BM25:
per piece held, 3 as a whole word, 2 at a word's start (a word being typed: ``gobl`` in
``Goblin``), 1 inside a word (``gobl`` in ``Hobgoblin``), plus 0.5 when that best match is in
the title line; plus, under 0.45 in all, 0.25 when the record's text opens with a piece and
0.2 * n / (n + 1) for n occurrences. So a chunk holding a piece as a word or a word's beginning
always ranks above one holding it only inside words, and more pieces held rank higher.
"""

from __future__ import annotations

import re

__all__ = [
    "MIN_PIECE",
    "WORD_START",
    "has_cjk",
    "needs_unicode_fold",
    "scan_score",
    "substring_pieces",
]

#: Han (with extensions and compatibility ideographs), Hiragana, Katakana, Hangul syllables/jamo.
_CJK = re.compile(
    "[\u3040-\u30ff\u3130-\u318f\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\u1100-\u11ff"
    "\uf900-\ufaff\U00020000-\U0002fa1f]"
)
_QUOTES = "\"'()[]{}\u201c\u201d\u2018\u2019\u300c\u300d\u300e\u300f\u3001\u3002\uff0c\uff1f\uff01"
#: Punctuation around a piece that is not part of it (``blaz,`` ``gen-itgc.``).
_EDGE = ".,;:!?-\u2013\u2014"
#: What joins the parts of one piece: ``gen-itgc``, ``v1.2``, ``node.js``.
_JOINERS = re.compile(r"[-.]")
#: The least :func:`scan_score` of one piece held at a word's start (or as a whole word).
WORD_START = 2.0
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
    is one. Quotes, CJK punctuation and sentence punctuation around a piece are dropped. A
    piece joined by hyphens or dots (``gen-itgc``, ``node.js``) is kept whole and followed by
    its parts (``gen``, ``itgc``), each kept by the same rules; a piece holding other
    punctuation (``a/b``) is left out.
    """
    kept: list[str] = []
    for raw in text.split():
        piece = raw.strip(_QUOTES).strip(_EDGE).casefold()
        parts = _JOINERS.split(piece)
        forms = [piece, *parts] if len(parts) > 1 else [piece]
        kept += [f for f in forms if has_cjk(f) or (len(f) >= MIN_PIECE and _wordy(f))]
    meaningful = [p for p in kept if has_cjk(p) or p not in stopwords]
    return list(dict.fromkeys(meaningful or kept))


def _wordy(piece: str) -> bool:
    """Letters and digits, maybe joined by hyphens or dots (never two in a row)."""
    return all(part.isalnum() for part in _JOINERS.split(piece))


def scan_score(text: str, pieces: list[str], first: bool = True) -> tuple[float, int]:
    """How well one chunk's text holds the query's ``pieces`` (casefolded, as
    :func:`substring_pieces` gives them): ``(score, pieces held)``.

    ``text`` is casefolded here. ``first``: the chunk is its record's first (ordinal 0), whose
    first line is the title line (the record's name or title when its text opens with it;
    a one-line record is all title). Per piece held, its best match scores 3 as a whole word,
    2 at a word's start, 1 inside a word, + 0.5 in the title line; then 0.25 when the text
    opens with a piece (``first`` only) and 0.2 * n / (n + 1) for the pieces' n occurrences
    (``str.count``: not overlapping). A word edge is a non-alphanumeric character, the text's edge, or a CJK character beside
    (CJK text has no word edges to see). Score 0 (held 0) when no piece occurs; else in
    [1, 3.5 * len(pieces) + 0.45).
    """
    body = text.casefold()
    title_end = body.find("\n") if first else 0
    title_end = len(body) if title_end < 0 else title_end
    score, held, count = 0.0, 0, 0
    for piece in pieces:
        best = 0.0
        at = body.find(piece)
        while at >= 0:
            start = _edge(body, at - 1, at)
            end = _edge(body, at + len(piece) - 1, at + len(piece))
            kind = 3 if start and end else 2 if start else 1
            best = max(best, kind + 0.5 * (at < title_end))
            if best == 3.5 or (best == 3 and at >= title_end):  # no later match scores more
                break
            at = body.find(piece, at + 1)
        count += body.count(piece) if best else 0
        held += best > 0
        score += best
    if held and first and any(body.startswith(p) for p in pieces):
        score += 0.25
    return (score + 0.2 * count / (count + 1) if held else 0.0), held


def _edge(text: str, left: int, right: int) -> bool:
    """True when a word boundary lies between ``text[left]`` and ``text[right]`` (either may
    be off the text)."""
    if left < 0 or right >= len(text):
        return True
    a, b = text[left], text[right]
    if not (a.isalnum() and b.isalnum()):
        return True
    return not (a.isascii() and b.isascii()) and (has_cjk(a) or has_cjk(b))


def needs_unicode_fold(pieces: list[str]) -> bool:
    """True when a piece holds a non-ASCII letter that has case (``ü``, ``ß``, ``é``): a scan
    must then casefold the text in full, as an ASCII-only ``lower()`` would miss ``ÜBER``."""
    return any(not ch.isascii() and ch.upper() != ch.lower() for p in pieces for ch in p)
