"""The keyword terms layouts 1 to 3 wrote to Milvus' BM25 function: snowball Porter stems.

Layout 4 no longer uses them (its terms are FTS5's, the SQLite store's:
:mod:`semsearch.stores.milvus.keyword_columns`); a collection of an earlier layout is searched
with them until a write migrates it (:mod:`semsearch.stores.milvus.keyword`). Snowball's Porter
and FTS5's porter differ in places, so these stems are not SQLite's.

Milvus Lite's analyzer only lowercases and splits on non-word characters (no stemmer), and a
Milvus server's analyzers differ by version. So semsearch analyses text itself, the same way on
every Milvus and close to the SQLite store's FTS5 ``porter unicode61 remove_diacritics 2``
tokenizer: fold accents (NFKD, combining marks dropped), lowercase, split into words, and stem
each word with the Porter algorithm (M. F. Porter, "An algorithm for suffix stripping", 1980,
via the ``snowballstemmer`` package). The stems, joined by spaces, are the input of Milvus' BM25
function; queries go through the same function, so "healing" finds "heals".
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache
from typing import Any

__all__ = ["keyword_terms"]

_WORD = re.compile(r"[^\W_]+", re.UNICODE)
_MAX_BYTES = 65535


@lru_cache(maxsize=1)
def _stemmer() -> Any:
    try:
        import snowballstemmer
    except ImportError as exc:
        from semsearch.errors import BackendUnavailable

        raise BackendUnavailable(
            "snowballstemmer is not installed", hint="pip install 'semsearch[milvus]'"
        ) from exc
    return snowballstemmer.stemmer("porter")


@lru_cache(maxsize=1 << 16)
def _stem(word: str) -> str:
    """The Porter stem of one lowercase word (cached: words repeat across chunks, and the
    stemmer is pure Python)."""
    return str(_stemmer().stemWord(word))


def keyword_terms(text: str) -> str:
    """The space-separated Porter stems of ``text``'s words ('' when it has no words).

    Args:
        text: any text (a chunk, or a user's keyword query).
    Returns:
        Lowercase, accent-folded stems, e.g. ``"Healing Café-spells"`` -> ``"heal cafe spell"``;
        cut to at most 65,535 UTF-8 bytes (Milvus' VARCHAR limit).
    """
    if text.isascii():  # NFKD leaves ASCII as it is and it has no combining marks
        folded = text.lower()
    else:
        folded = unicodedata.normalize("NFKD", text)
        folded = "".join(ch for ch in folded if not unicodedata.combining(ch)).lower()
    words = _WORD.findall(folded)
    if not words:
        return ""
    # digits: no Porter rule applies to a word without letters, and unique numbers (ids,
    # years) would only push real words out of the stem cache
    terms = " ".join(w if w.isdigit() else _stem(w) for w in words)
    if len(terms) > _MAX_BYTES // 4 and len(terms.encode()) > _MAX_BYTES:
        terms = terms.encode()[:_MAX_BYTES].decode(errors="ignore").rsplit(" ", 1)[0]
    return terms
