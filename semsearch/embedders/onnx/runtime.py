"""Run a cached BERT graph on ONNX Runtime: tokenise, batch by length, pool (or score pairs).

It reproduces what sentence-transformers does for a plain Transformer + Pooling folder: the
folder's own ``tokenizer.json``, texts stripped (and lower-cased when the folder says
``do_lower_case``), truncation at ``max_seq_length`` tokens with the special tokens, then the
pooling that ``1_Pooling/config.json`` names over the attention mask. The caller normalises.

Threads: the session runs each call on the calling thread alone (``intra_op_num_threads = 1``,
no spinning pool), and :meth:`OnnxRunner.encode` spreads batches over ``threads`` worker
threads (default: every core this process may use). A query is one small run on one core, so a
busy machine slows it by its CPU share and no more: a spinning intra-op pool keeps cores busy
between kernels and, under contention, turns milliseconds into seconds (docs/embedders.md has
the measurements). Concurrent searches in a server each get their own core.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from semsearch.embedders.model_folder import ModelFolder
from semsearch.embedders.onnx.cache import GraphSpec, build_graph
from semsearch.embedders.onnx.window_tokens import (
    Span,
    clean_shift,
    seen_by_all,
    span_tokens,
    window_bias,
)
from semsearch.errors import EmbedderUnavailable
from semsearch.progress import batch_done

if TYPE_CHECKING:
    from tokenizers import Encoding, Tokenizer

__all__ = ["OnnxRunner", "default_threads", "pool"]


#: Token budget of one forward pass: batches of short texts grow, long ones shrink.
_TOKENS_PER_BATCH = 8192


def default_threads() -> int:
    """Cores this process may run on (``os.sched_getaffinity``), at least 1."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return max(1, os.cpu_count() or 1)


class OnnxRunner:
    """A model folder's encoder on ONNX Runtime, built and loaded on first use.

    Args:
        folder: the model folder (checked with :meth:`ModelFolder.onnx_obstacle` by the caller).
        tokenizer_file: the folder's ``tokenizer.json``.
        precision: ``"fp32"`` or ``"int8"``.
        threads: intra-op threads (default :func:`default_threads`).
        batch_size: most texts per forward pass (also bounded by a token budget).
        announce: where the one-time build line goes (default stderr).
        label: the model's short name, for the cache file and messages.
        head: ``"encoder"`` for :meth:`encode` (an embedder), ``"classifier"`` for
            :meth:`score_pairs` (a cross-encoder).
        max_length: tokens per input, special tokens included (default: the folder's
            ``max_seq_length``, else 512).
    """

    def __init__(
        self,
        folder: ModelFolder,
        tokenizer_file: Path,
        precision: str,
        threads: int | None = None,
        batch_size: int = 32,
        announce: Callable[[str], None] | None = None,
        label: str | None = None,
        head: str = "encoder",
        max_length: int | None = None,
    ) -> None:
        self.folder = folder
        self._tokenizer_file = tokenizer_file
        self._tokenizer: Tokenizer | None = None
        self.spec = GraphSpec(folder, precision, label=label, head=head)
        self.threads = threads or default_threads()
        self.batch_size = batch_size
        self.max_length = max_length or folder.max_seq_length or 512
        self._announce = announce
        self._session: Any = None
        self._lock = threading.Lock()

    def session(self) -> Any:
        """The ONNX Runtime session, building the cached graph if it is missing or invalid."""
        with self._lock:
            if self._session is None:
                self._session = self._open()
        return self._session

    def encode(self, texts: Sequence[str]) -> NDArray[np.float32]:
        """Pooled (not normalised) vectors: float32[len(texts), hidden * pooling modes].

        Batches run on up to ``threads`` worker threads at once, each single-threaded inside
        ONNX Runtime (one session; its ``run`` is thread-safe and releases the GIL).

        Raises:
            EmbedderUnavailable: the graph cannot be built or run.
        """
        encodings = self._tokenize(texts)
        width = self.folder.pooling.dim or 0
        mode = self.folder.pooling.mode
        return self._run(
            encodings, ["last_hidden_state"], width, lambda outs, m, _: pool(outs[0], m, mode)
        )

    def encode_late(
        self,
        texts: Sequence[str],
        spans: Sequence[Sequence[Span]],
        shared: Sequence[int] | None = None,
    ) -> tuple[NDArray[np.float32], list[NDArray[np.float32] | None]]:
        """Pooled text vectors and, from the same forward pass, a vector per char span.

        Needs a ``head="windows"`` runner
        (:func:`~semsearch.embedders.onnx.encoder_graph.build_encoder_graph`). The text vector is
        :meth:`encode`'s (mean pooling), bit for bit. For the spans, the graph runs its last
        ``local_layers`` layers a second time on the same input, with each span's tokens
        attending only to themselves, the special tokens and the shared prefix; a span's
        vector is the mean of those tokens' states, as a span embedded alone under its
        breadcrumb is pooled. So the spans cost one layer more, not a pass of their own.

        Why not plain late chunking (Günther et al. 2024, arXiv:2409.04701, every layer
        global): a sentence about another topic than its chunk's then takes the chunk's
        meaning, and the buried facts of benchmarks/buried_facts.py fell from 11 to 7 of 11
        at top 1; with the last layer local, 11 of 11 (docs/retrieval.md).

        Args:
            texts: rows come back in this order.
            spans: per text, ``(start, end)`` char offsets into that text, end exclusive.
            shared: per text, how many of its first chars every span sees as well (a heading
                breadcrumb before the text); default none.
        Returns:
            (float32[len(texts), hidden], as :meth:`encode` gives them; per text
            float32[len(spans[i]), hidden], not normalised, or None when a span holds no token
            (cut off by truncation) or cleaning changed the text's length.)
        Raises:
            EmbedderUnavailable: the graph cannot be built or run.
        """
        encodings = self._tokenize(texts)
        shifts = [clean_shift(t, self.folder.do_lower_case) for t in texts]
        groups = [
            None if k is None else span_tokens(e, [(a - k, b - k) for a, b in s])
            for e, s, k in zip(encodings, spans, shifts, strict=True)
        ]
        pooled: list[NDArray[np.float32] | None] = [None] * len(texts)
        seen = [
            seen_by_all(e, (shared[i] if shared else 0) - (k or 0))
            for i, (e, k) in enumerate(zip(encodings, shifts, strict=True))
        ]

        def feed(batch: list[int], mask: NDArray[np.int64]) -> dict[str, NDArray[np.float32]]:
            found = [groups[i] for i in batch]
            return {"window_bias": window_bias(found, [seen[i] for i in batch], mask)}

        def post(
            outs: list[NDArray[np.float32]], mask: NDArray[np.int64], batch: list[int]
        ) -> NDArray[np.float32]:
            for row, i in enumerate(batch):
                found = groups[i]
                if found:
                    states = outs[1][row]
                    pooled[i] = np.stack([states[np.union1d(t, seen[i])].mean(0) for t in found])
            return pool(outs[0], mask, "mean")

        outputs = ["last_hidden_state", "window_hidden_state"]
        vectors = self._run(encodings, outputs, self.folder.pooling.dim or 0, post, feed)
        return vectors, pooled

    def score_pairs(self, query: str, texts: Sequence[str]) -> NDArray[np.float32]:
        """A cross-encoder's first logit per (query, text) pair: float32[len(texts)].

        Each pair is tokenised as ``[CLS] query [SEP] text [SEP]`` with token type 0 for the
        query and 1 for the text, truncated longest-first to ``max_length`` tokens, as
        sentence-transformers' ``CrossEncoder`` does (texts are not stripped, as there).

        Raises:
            EmbedderUnavailable: the graph cannot be built or run.
        """
        tokenizer = self._loaded_tokenizer()
        lower = self.folder.do_lower_case
        pairs = [(query.lower(), t.lower()) if lower else (query, t) for t in texts]
        encodings: list[Encoding] = tokenizer.encode_batch(pairs)
        logits = self._run(encodings, ["logits"], 1, lambda outs, _m, _b: outs[0][:, :1])
        return logits[:, 0]

    def _run(
        self,
        encodings: list[Encoding],
        outputs: list[str],
        width: int,
        post: Callable[
            [list[NDArray[np.float32]], NDArray[np.int64], list[int]], NDArray[np.float32]
        ],
        feed_more: Callable[[list[int], NDArray[np.int64]], dict[str, NDArray[np.float32]]]
        | None = None,
    ) -> NDArray[np.float32]:
        """``post(graph outputs, mask, the batch's indices into encodings)`` per batch, rows
        back in input order: float32[n, w]. ``feed_more(batch, mask)`` adds graph inputs.

        Batches run on up to ``threads`` worker threads at once, each single-threaded inside
        ONNX Runtime (one session; its ``run`` is thread-safe and releases the GIL).
        """
        session = self.session()
        batches = self._batches(encodings)

        def run(batch: list[int]) -> NDArray[np.float32]:
            ids, mask, types = _padded([encodings[i] for i in batch])
            feed: dict[str, Any] = {
                "input_ids": ids,
                "attention_mask": mask,
                "token_type_ids": types,
            }
            if feed_more is not None:
                feed.update(feed_more(batch, mask))
            try:
                outs = session.run(outputs, feed)
            except Exception as exc:  # onnxruntime raises its own error types
                raise EmbedderUnavailable(
                    f"ONNX Runtime failed on {self.spec.label}: {exc}",
                    hint="rebuild the model cache with `semsearch models prepare --force`",
                ) from exc
            return post(outs, mask, batch)

        if len(batches) == 1 or self.threads == 1:
            results = [_ticked(batch, run(batch)) for batch in batches]
        else:
            with ThreadPoolExecutor(max_workers=self.threads) as pool_:
                done = zip(batches, pool_.map(run, batches), strict=True)
                results = [_ticked(batch, rows) for batch, rows in done]
        out = np.zeros((len(encodings), results[0].shape[1] if results else width), np.float32)
        for batch, rows in zip(batches, results, strict=True):
            out[batch] = rows
        return out

    def _loaded_tokenizer(self) -> Tokenizer:
        if self._tokenizer is None:
            from tokenizers import Tokenizer

            tokenizer = Tokenizer.from_file(str(self._tokenizer_file))
            tokenizer.no_padding()
            # ST truncates at max_seq_length tokens, special tokens included; pairs lose
            # tokens from the longer side first (longest_first, as CrossEncoder).
            tokenizer.enable_truncation(self.max_length, strategy="longest_first")
            self._tokenizer = tokenizer
        return self._tokenizer

    def _tokenize(self, texts: Sequence[str]) -> list[Encoding]:
        lower = self.folder.do_lower_case
        cleaned = [t.strip().lower() if lower else t.strip() for t in texts]
        encodings: list[Encoding] = self._loaded_tokenizer().encode_batch(cleaned)
        return encodings

    def _batches(self, encodings: list[Encoding]) -> list[list[int]]:
        """Indices grouped longest first, so each batch pads to about its own length.

        int8 graphs take one text per run: their activations are quantised with one scale per
        tensor, so batch mates (and their padding) would change a text's vector (cosine moved
        by up to 0.014 here). One text per run makes every vector independent of its batch.
        """
        limit = 1 if self.spec.precision == "int8" else self.batch_size
        order = sorted(range(len(encodings)), key=lambda i: -len(encodings[i].ids))
        batches: list[list[int]] = []
        current: list[int] = []
        for i in order:
            longest = len(encodings[current[0]].ids) if current else len(encodings[i].ids)
            if current and (
                len(current) >= limit or longest * (len(current) + 1) > _TOKENS_PER_BATCH
            ):
                batches.append(current)
                current = []
            current.append(i)
        if current:
            batches.append(current)
        return batches

    def _open(self) -> Any:
        path = self.spec.path
        if path.is_file():
            session = self._load(path)
            if session is not None:
                return session
        path = build_graph(self.spec, self._announce)
        session = self._load(path)
        if session is None:
            raise EmbedderUnavailable(
                f"the ONNX graph just built for {self.folder.path.name} does not load",
                hint="check the folder's model.safetensors, or use '?engine=torch'",
            )
        return session

    def _load(self, path: Path) -> Any:
        """A session over ``path``, or None when the file is damaged or foreign."""
        import onnxruntime as ort

        options = ort.SessionOptions()
        options.intra_op_num_threads = 1  # parallel across batches instead (see encode)
        options.inter_op_num_threads = 1
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        options.log_severity_level = 3  # errors only: shape-merge notes are not for users
        try:
            session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
        except Exception:  # truncated or not an ONNX file: rebuild
            return None
        found = dict(session.get_modelmeta().custom_metadata_map)
        return session if self.spec.matches(found) else None


def _ticked(batch: list[int], rows: NDArray[np.float32]) -> NDArray[np.float32]:
    """``rows``, after telling a progress display that ``batch`` is embedded (in the caller's
    thread, batch by batch: :func:`semsearch.progress.batch_done`)."""
    batch_done(len(batch))
    return rows


def _padded(
    encodings: list[Encoding],
) -> tuple[NDArray[np.int64], NDArray[np.int64], NDArray[np.int64]]:
    """input_ids, attention_mask and token_type_ids, right-padded with 0 to the longest."""
    length = max(len(e.ids) for e in encodings)
    ids = np.zeros((len(encodings), length), dtype=np.int64)
    mask = np.zeros_like(ids)
    types = np.zeros_like(ids)
    for row, enc in enumerate(encodings):
        ids[row, : len(enc.ids)] = enc.ids
        mask[row, : len(enc.ids)] = 1
        types[row, : len(enc.ids)] = enc.type_ids
    return ids, mask, types


def pool(hidden: NDArray[np.float32], mask: NDArray[np.int64], mode: str) -> NDArray[np.float32]:
    """Token vectors float32[b, s, h] -> text vectors float32[b, h * modes] over the mask.

    Modes as in sentence-transformers' ``Pooling``: ``cls`` (first token), ``max`` (padding
    excluded), ``mean``, ``mean_sqrt_len`` (sum divided by sqrt of the token count) and
    ``lasttoken`` (the last real token; rows are right-padded); several modes joined by ``+``
    are concatenated in ST's order (cls, max, mean, mean_sqrt_len, lasttoken).
    """
    weights = mask[..., None].astype(np.float32)
    counts = np.clip(weights.sum(axis=1), 1e-9, None)
    parts: list[NDArray[np.float32]] = []
    for part in mode.split("+"):
        if part == "cls":
            parts.append(hidden[:, 0])
        elif part == "max":
            parts.append(np.where(weights > 0, hidden, -1e9).max(axis=1))
        elif part == "mean":
            parts.append((hidden * weights).sum(axis=1) / counts)
        elif part == "mean_sqrt_len":
            parts.append((hidden * weights).sum(axis=1) / np.sqrt(counts))
        elif part == "lasttoken":
            last = np.maximum(mask.sum(axis=1) - 1, 0)
            parts.append(hidden[np.arange(hidden.shape[0]), last])
        else:
            raise EmbedderUnavailable(
                f"unknown pooling mode {part!r}", hint="use '?engine=torch' for this model"
            )
    return np.concatenate(parts, axis=1).astype(np.float32, copy=False)
