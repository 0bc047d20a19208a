"""What a chunker takes and returns: the :class:`Tokenizer` protocol, :class:`ChunkSpan`, and
:func:`embedding_text` (the exact text a chunk is embedded as).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

__all__ = ["ChunkSpan", "Tokenizer", "embedding_text"]


class Tokenizer(Protocol):
    """Anything that can split text into tokens and tell where each token lies."""

    def token_spans(self, text: str) -> list[tuple[int, int]]:
        """Char offsets ``(start, end)`` of each token of ``text``, special tokens excluded."""
        ...


@dataclass(frozen=True)
class ChunkSpan:
    """One chunk of a text.

    Attributes:
        text: the chunk's text as stored and shown.
        ordinal: 0-based position of the chunk within its record.
        char_start, char_end: offsets of the chunk's source span in the input text (end exclusive).
        heading_path: markdown headings above the chunk, outermost first; () for plain text.
        line_start, line_end: 1-based inclusive line range in the original file (markdown only).
    """

    text: str
    ordinal: int
    char_start: int
    char_end: int
    heading_path: tuple[str, ...] = ()
    line_start: int | None = None
    line_end: int | None = None


def embedding_text(text: str, heading_path: tuple[str, ...]) -> str:
    """The text that is embedded for a chunk: its heading breadcrumb, a blank line, its text."""
    if not heading_path:
        return text
    return " > ".join(heading_path) + "\n\n" + text
