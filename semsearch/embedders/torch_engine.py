"""The torch engine: a model folder run by sentence-transformers (the ``torch`` extra).

Used for models the ONNX engine cannot build (another architecture, a Dense layer), or when a
spec asks for ``engine=torch``. sentence-transformers is imported only here, on first use.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from semsearch.errors import EmbedderUnavailable

__all__ = ["SentenceTransformerRunner"]


class SentenceTransformerRunner:
    """``SentenceTransformer(folder).encode`` behind the engine interface.

    Args:
        path: the model folder.
        model_id: for messages.
        batch_size: texts per forward pass (sentence-transformers sorts them by length).
        install_hint: what to install when sentence-transformers is missing.
    """

    def __init__(self, path: Path, model_id: str, batch_size: int, install_hint: str) -> None:
        self.path = path
        self.model_id = model_id
        self.batch_size = batch_size
        self.install_hint = install_hint
        self._model: Any = None
        self._lock = threading.Lock()

    def encode(self, texts: Sequence[str]) -> NDArray[np.float32]:
        """Pooled vectors float32[len(texts), dim] (normalisation left to the caller)."""
        out = self.model().encode(
            list(texts),
            batch_size=self.batch_size,
            convert_to_numpy=True,
            normalize_embeddings=False,
            show_progress_bar=False,
        )
        return np.asarray(out, dtype=np.float32)

    def model(self) -> Any:
        """The loaded SentenceTransformer (loaded once, thread-safe)."""
        with self._lock:
            if self._model is None:
                self._model = self._load()
        return self._model

    def _load(self) -> Any:
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
        os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")  # keep CLI output clean
        os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
        try:
            from sentence_transformers import SentenceTransformer
        except ImportError as exc:
            raise EmbedderUnavailable(
                f"model {self.model_id} needs the torch engine, and sentence-transformers "
                "is not installed",
                hint=self.install_hint,
            ) from exc
        try:
            return SentenceTransformer(str(self.path), device="cpu", local_files_only=True)
        except Exception as exc:
            raise EmbedderUnavailable(
                f"cannot load model {self.model_id}: {exc}",
                hint="check the model folder (config.json, weights, tokenizer.json)",
            ) from exc
