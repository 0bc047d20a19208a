"""A deterministic fake embedder for tests about plumbing (never for tests about meaning).

Each word is hashed (blake2b) to a fixed pseudo-random unit vector; a text's vector is the
normalised sum of its words' vectors. Texts sharing words therefore have a positive cosine
similarity, identical texts have similarity 1, and the output never depends on the machine.
Spec string: ``fake:<dim>`` (default 32).
"""

from __future__ import annotations

import hashlib
import re

import numpy as np
from numpy.typing import NDArray

from semsearch.embedders.base import BaseEmbedder, EmbedKind

__all__ = ["FakeEmbedder"]

_WORD = re.compile(r"\w+|[^\w\s]")


class FakeEmbedder(BaseEmbedder):
    """Deterministic bag-of-words hashing embedder.

    Args:
        dim: output dimension (default 32).
        max_tokens: token window reported to the chunker (default 64).
        fail: if True, every embed call raises EmbedderUnavailable (simulates an outage).
    """

    def __init__(self, dim: int = 32, max_tokens: int = 64, *, fail: bool = False) -> None:
        super().__init__(batch_size=32)
        self._dim = dim
        self._max_tokens = max_tokens
        self.fail = fail
        self.model_id = f"fake:{dim}"
        self.calls = 0
        self.texts_embedded = 0

    @classmethod
    def from_spec(cls, name: str) -> FakeEmbedder:
        """Factory for spec strings ``fake:<dim>``."""
        dim = int(name) if name else 32
        if dim < 1:
            raise ValueError(f"dimension must be >= 1, got {dim}")
        return cls(dim)

    @property
    def dim(self) -> int:
        return self._dim

    @property
    def max_tokens(self) -> int:
        return self._max_tokens

    def token_spans(self, text: str) -> list[tuple[int, int]]:
        """Words and single punctuation marks, as char offsets."""
        return [m.span() for m in _WORD.finditer(text)]

    def _embed_batch(self, texts: list[str], kind: EmbedKind) -> NDArray[np.floating]:
        from semsearch.errors import EmbedderUnavailable

        if self.fail:
            raise EmbedderUnavailable("fake embedder is switched off", hint="set fail=False")
        self.calls += 1
        self.texts_embedded += len(texts)
        out = np.zeros((len(texts), self._dim), dtype=np.float64)
        for row, text in enumerate(texts):
            for word in _WORD.findall(text.lower()):
                out[row] += self._word_vector(word)
            if not out[row].any():
                out[row] = self._word_vector("\0empty")
        return out

    def _word_vector(self, word: str) -> NDArray[np.float64]:
        seed = int.from_bytes(hashlib.blake2b(word.encode(), digest_size=8).digest(), "little")
        vec = np.random.default_rng(seed).standard_normal(self._dim)
        return vec / np.linalg.norm(vec)
