"""Local cross-encoders on the ONNX engine (spec ``local:<folder>``): no torch at run time.

A folder is any sentence-transformers ``CrossEncoder`` or Hugging Face
``BertForSequenceClassification`` folder with one output label: ``config.json``,
``model.safetensors`` and ``tokenizer.json`` (e.g. ``cross-encoder/ms-marco-MiniLM-L6-v2``,
downloaded by you; nothing is downloaded here). The graph is the engine's BERT encoder with
the pooler and classifier head (:mod:`semsearch.embedders.onnx.encoder_graph`), built once and
cached like an embedder's (:mod:`semsearch.embedders.onnx.cache`, file suffix ``-ce``).

Pairs are tokenised ``[CLS] query [SEP] text [SEP]`` (token types 0 then 1) and truncated
longest side first to ``max_length`` tokens: ``sentence_bert_config.json``'s
``max_seq_length``, else ``tokenizer_config.json``'s ``model_max_length``, else the model's
``max_position_embeddings``; this is the length ``CrossEncoder`` uses. The score is
sigmoid(logit) in [0, 1], as ``CrossEncoder.predict`` gives for one label. A softmax over one
label would always be 1.0, so models with more than one label are refused.
Options: ``?precision=fp32|int8`` (default fp32), ``threads=N``, ``max_length=N``.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from semsearch.embedders.model_folder import ModelFolder, read_json
from semsearch.embedders.remote import int_option, parse_options
from semsearch.errors import EmbedderUnavailable, RerankerUnavailable
from semsearch.rerank.base import Scores, check_scores, sigmoid

if TYPE_CHECKING:
    from semsearch.embedders.onnx.runtime import OnnxRunner

__all__ = ["LocalReranker", "cross_encoder_max_length"]

_OPTIONS = ("precision", "threads", "max_length")


def cross_encoder_max_length(folder: ModelFolder) -> int:
    """Tokens per (query, text) pair, special tokens included, as ``CrossEncoder`` reads it.

    ``max_seq_length`` from ``sentence_bert_config.json``, else ``model_max_length`` from
    ``tokenizer_config.json``, else ``max_position_embeddings``, else 512; never more than
    ``max_position_embeddings`` (the position table's size).
    """
    positions = int(folder.hf_config.get("max_position_embeddings") or 512)
    tokenizer_config = read_json(folder.path / "tokenizer_config.json")
    declared = (
        tokenizer_config.get("model_max_length") if isinstance(tokenizer_config, dict) else None
    )
    length = folder.max_seq_length or (int(declared) if isinstance(declared, int | float) else 0)
    return min(length, positions) if length > 0 else positions


class LocalReranker:
    """A cross-encoder folder on ONNX Runtime; loads on the first :meth:`rerank`.

    Args:
        folder: the model folder.
        precision: ``"fp32"`` (default) or ``"int8"`` (dynamic quantisation, as for embedders).
        threads: worker threads (default: every core this process may use).
        max_length: override the pair length in tokens (see :func:`cross_encoder_max_length`).
        batch_size: most pairs per forward pass (default 32).
    Raises:
        RerankerUnavailable: an unknown precision; ``folder`` is not a folder, lacks a
            cross-encoder's files (``config.json``, ``model.safetensors``, ``tokenizer.json``)
            or holds another kind of model (not BERT, or not one label). These are
            misconfigurations, refused when the reranker is named (reading only small files:
            nothing is loaded); a failure at rerank time degrades the search instead.
    """

    def __init__(
        self,
        folder: str | Path,
        precision: str = "fp32",
        threads: int | None = None,
        max_length: int | None = None,
        batch_size: int = 32,
    ) -> None:
        if precision not in ("fp32", "int8"):
            raise RerankerUnavailable(
                f"unknown precision {precision!r}", hint="use 'fp32' or 'int8'"
            )
        self.path = Path(folder).expanduser()
        if not self.path.is_dir():  # a misconfiguration, not an outage: refuse it up front
            raise RerankerUnavailable(
                f"no cross-encoder folder at {str(folder)!r}",
                hint="give the folder of a sentence-transformers CrossEncoder "
                "(config.json, model.safetensors, tokenizer.json), e.g. "
                "'local:~/models/ms-marco-MiniLM-L6-v2'",
            )
        _check_architecture(self._folder())  # so is a folder without a one-label cross-encoder
        self.precision = precision
        self.threads = threads
        self.batch_size = batch_size
        self._max_length = max_length
        self._runner: OnnxRunner | None = None
        self._lock = threading.Lock()

    @classmethod
    def from_spec(cls, name: str) -> LocalReranker:
        """Factory for ``local:<folder>[?precision=fp32|int8&threads=N&max_length=N]``."""
        try:
            model, options = parse_options(name, _OPTIONS, "local")
            return cls(
                model,
                precision=options.get("precision", "fp32"),
                threads=int_option(options, "threads"),
                max_length=int_option(options, "max_length"),
            )
        except EmbedderUnavailable as exc:  # the option parser is shared with embedders
            raise RerankerUnavailable(exc.message, hint=exc.hint) from None

    @property
    def model_id(self) -> str:
        """``local:<absolute folder>``, with ``?precision=int8`` for int8 graphs."""
        base = f"local:{self.path.resolve()}"
        return f"{base}?precision=int8" if self.precision == "int8" else base

    @property
    def max_tokens(self) -> int:
        """Tokens per (query, text) pair, special tokens included."""
        return self._max_length or cross_encoder_max_length(self._folder())

    def rerank(self, query: str, texts: Sequence[str]) -> Scores:
        """sigmoid(logit) per (query, text) pair: float32[len(texts)] in [0, 1].

        Raises:
            RerankerUnavailable: the folder's files went missing since it was named.
            EmbedderUnavailable: ONNX Runtime cannot build or run the graph.
        """
        if not texts:
            return np.empty(0, dtype=np.float32)
        logits = self._runner_once().score_pairs(query, texts)
        return check_scores(sigmoid(logits), len(texts), self.model_id)

    def _folder(self) -> ModelFolder:
        folder = ModelFolder(self.path)
        missing = [
            f for f in ("config.json", "model.safetensors", "tokenizer.json")
            if not (self.path / f).is_file()
        ]  # fmt: skip
        if missing:
            raise RerankerUnavailable(
                f"no cross-encoder at {self.path.name!r}: missing {', '.join(missing)}",
                hint="point local:<folder> at a sentence-transformers CrossEncoder folder "
                "(config.json, model.safetensors, tokenizer.json)",
            )
        return folder

    def _runner_once(self) -> OnnxRunner:
        with self._lock:
            if self._runner is None:
                from semsearch.embedders.onnx.runtime import OnnxRunner

                folder = self._folder()
                _check_architecture(folder)
                self._runner = OnnxRunner(
                    folder,
                    self.path / "tokenizer.json",
                    self.precision,
                    threads=self.threads,
                    batch_size=self.batch_size,
                    label=self.path.resolve().name,
                    head="classifier",
                    max_length=self.max_tokens,
                )
        return self._runner


def _check_architecture(folder: ModelFolder) -> None:
    """Raise RerankerUnavailable unless the folder is a one-label BERT classifier."""
    config = folder.hf_config
    labels = int(config.get("num_labels") or len(config.get("id2label") or {"0": ""}))
    kind = config.get("model_type")
    if kind != "bert":
        raise RerankerUnavailable(
            f"the ONNX engine runs BERT cross-encoders; {folder.path.name!r} is {kind or '?'}",
            hint="use a BERT cross-encoder (e.g. cross-encoder/ms-marco-MiniLM-L6-v2) or a "
            "rerank API (cohere:, jina:, voyage:)",
        )
    if labels != 1:
        raise RerankerUnavailable(
            f"{folder.path.name!r} has {labels} output labels; a reranker needs one "
            "(a relevance logit)",
            hint="use a cross-encoder trained for relevance with num_labels=1",
        )
