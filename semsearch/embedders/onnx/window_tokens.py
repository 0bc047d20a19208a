"""Which tokens belong to which sentence window, and the attention mask that keeps a window's
tokens to themselves: the inputs of a ``head="windows"`` graph
(:meth:`semsearch.embedders.onnx.runtime.OnnxRunner.encode_late`).

Spans are char offsets into a chunk's text; the tokenizer's offsets (into the cleaned text:
stripped, maybe lower-cased) map them to tokens. Every window also sees the special tokens and
the chunk's heading breadcrumb (the first ``prefix`` chars).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import NDArray

if TYPE_CHECKING:
    from tokenizers import Encoding

__all__ = ["Span", "clean_shift", "seen_by_all", "span_tokens", "window_bias"]

Span = tuple[int, int]


def clean_shift(text: str, lower: bool) -> int | None:
    """How far :meth:`~semsearch.embedders.onnx.runtime.OnnxRunner._tokenize`'s cleaning moves offsets to the left (the leading
    whitespace it strips), or None when lower-casing changes the length (e.g. "İ")."""
    if lower and len(text.lower()) != len(text):
        return None
    return len(text) - len(text.lstrip())


def span_tokens(encoding: Encoding, spans: Sequence[Span]) -> list[NDArray[np.int64]] | None:
    """Per char span, the indices of the non-special tokens that overlap it; None when some
    span overlaps no token (truncated away, or only whitespace).

    Args:
        encoding: a text's tokenizer output (offsets into the cleaned text).
        spans: ``(start, end)`` char offsets into the cleaned text, end exclusive.
    """
    offsets = np.asarray(encoding.offsets, dtype=np.int64).reshape(-1, 2)
    normal = np.asarray(encoding.special_tokens_mask, dtype=bool) == 0
    found = [
        np.flatnonzero(normal & (offsets[:, 0] < end) & (offsets[:, 1] > start))
        for start, end in spans
    ]
    return found if all(len(f) for f in found) else None


def seen_by_all(encoding: Encoding, prefix: int) -> NDArray[np.int64]:
    """The tokens every span attends to and is pooled with: the special tokens, and those
    that start within the first ``prefix`` chars of the cleaned text (a heading breadcrumb)."""
    special = np.asarray(encoding.special_tokens_mask, dtype=bool)
    starts = np.asarray(encoding.offsets, dtype=np.int64).reshape(-1, 2)[:, 0]
    return np.flatnonzero(special | (starts < prefix))


def window_bias(
    groups: Sequence[Sequence[NDArray[np.int64]] | None],
    seen: Sequence[NDArray[np.int64]],
    mask: NDArray[np.int64],
) -> NDArray[np.float32]:
    """The ``window_bias`` input of a windows graph: float32[b, 1, seq, seq], 0 where a query
    token may attend to a key token, float32's lowest value elsewhere.

    Row ``r`` of the batch: a token of one of ``groups[r]``'s spans attends to that span's
    tokens and to ``seen[r]`` (special tokens, a breadcrumb); every other token attends to
    every real token (as the attention mask says). A token in two spans keeps the first's row.
    """
    lowest = np.finfo(np.float32).min
    allowed = np.repeat(mask[:, None, None, :].astype(bool), mask.shape[1], axis=2)
    for row, found in enumerate(groups):
        for tokens in reversed(found or ()):  # the first span's row wins
            keys = np.zeros(mask.shape[1], dtype=bool)
            keys[tokens] = True
            keys[seen[row]] = True
            allowed[row, 0, tokens] = keys
    return np.where(allowed, np.float32(0.0), lowest).astype(np.float32)
