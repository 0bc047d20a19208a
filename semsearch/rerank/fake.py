"""A deterministic fake reranker for plumbing tests (never for tests about meaning).

Score = the fraction of the query's distinct words (lower-cased ``\\w+``) found in the text,
in [0, 1]. Spec ``fake:`` (or ``fake:fail``, which raises on every call: an outage).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np

from semsearch.errors import RerankerUnavailable
from semsearch.rerank.base import Scores

__all__ = ["FakeReranker"]

_WORD = re.compile(r"\w+")


class FakeReranker:
    """Word-overlap scores; counts its calls.

    Args:
        fail: raise RerankerUnavailable on every call (simulates an outage).
    """

    max_tokens = 512

    def __init__(self, *, fail: bool = False) -> None:
        self.fail = fail
        self.calls = 0

    @classmethod
    def from_spec(cls, name: str) -> FakeReranker:
        """Factory for ``fake:`` and ``fake:fail``."""
        if name not in ("", "fail"):
            raise RerankerUnavailable(
                f"unknown fake reranker {name!r}", hint="'fake:' or 'fake:fail'"
            )
        return cls(fail=name == "fail")

    @property
    def model_id(self) -> str:
        """``fake:`` (or ``fake:fail``)."""
        return "fake:fail" if self.fail else "fake:"

    def rerank(self, query: str, texts: Sequence[str]) -> Scores:
        """Share of the query's words in each text: float32[len(texts)] in [0, 1]."""
        self.calls += 1
        if self.fail:
            raise RerankerUnavailable("fake reranker is switched off", hint="use 'fake:'")
        words = set(_WORD.findall(query.lower()))
        found = [len(words & set(_WORD.findall(t.lower()))) for t in texts]
        return np.asarray([f / max(1, len(words)) for f in found], dtype=np.float32)
