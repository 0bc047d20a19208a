"""Plain text into chunks: paragraphs packed while they fit the token window."""

from __future__ import annotations

from semsearch.chunking.cutting import (
    LEAD_ANY,
    LINE,
    PARA,
    SENT,
    Doc,
    Levels,
    check_window,
    fit,
    strip_span,
)
from semsearch.chunking.spans import ChunkSpan, Tokenizer
from semsearch.progress import note

__all__ = ["chunk_text"]

_PLAIN: Levels = (PARA, SENT, LINE)


def chunk_text(text: str, tokenizer: Tokenizer, max_tokens: int) -> list[ChunkSpan]:
    """Cut plain text into chunks of at most ``max_tokens`` tokens each.

    Paragraphs (split on blank lines) are packed while they fit; a paragraph too long alone is
    cut between sentences, then lines, and a sentence too long alone on token boundaries. Every
    chunk is an exact slice ``text[char_start:char_end]`` (char offsets, end exclusive) stripped
    of surrounding whitespace; no non-whitespace char is dropped. Whitespace-only text gives [].

    Args:
        text: the text to cut.
        tokenizer: the embedding model's tokenizer; tokens are counted with its ``token_spans``.
        max_tokens: the model's window in tokens, special tokens excluded.

    Raises:
        ValueError: if ``max_tokens`` < 1, or one char alone needs more than ``max_tokens``.
    """
    check_window(max_tokens)
    start, end = strip_span(text, 0, len(text), LEAD_ANY)
    if start >= end:
        return []
    doc = Doc(text, tokenizer, max_tokens, LEAD_ANY)
    spans = tokenizer.token_spans(text[start:end])
    pieces = fit(doc, start, end, ("", ""), _PLAIN, spans)
    note("cut", len(pieces))
    return [ChunkSpan(text[a:b], i, a, b) for i, (a, b, _) in enumerate(pieces)]
