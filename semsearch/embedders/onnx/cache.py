"""The per-user cache of ONNX graphs built from model folders.

A graph is built once per (weights, precision, head, engine version) from the folder's
``model.safetensors`` and kept as ``<cache>/onnx/<model>-<sha256[:16]>-<precision>-e<N>.onnx``
(a cross-encoder's classifier graph adds ``-ce`` before ``.onnx``).
The cache folder is ``$SEMSEARCH_CACHE_DIR``, else ``$XDG_CACHE_HOME/semsearch``, else
``~/.cache/semsearch``.

- **Keyed by content.** The weights' SHA-256 is part of the name and of the graph's metadata;
  it is computed once per weights file and remembered beside the graphs, keyed by the file's
  path, size and mtime, so a cold start does not hash 90 MB again.
- **Atomic.** A graph is written to a temporary file in the same folder and renamed over the
  final name, so a reader never sees half a file and two processes building at once both end
  with a valid graph (the build is deterministic, so the last rename wins with the same bytes).
- **Checked on use.** A graph whose metadata does not name the expected weights, precision and
  engine version (a foreign or stale file), or that ONNX Runtime cannot load (truncated), is
  rebuilt. Temporary files left by a killed builder are removed.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import re
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from semsearch.embedders.model_folder import ModelFolder
from semsearch.errors import EmbedderUnavailable
from semsearch.processes import pid_alive

__all__ = [
    "ENGINE_VERSION",
    "PRECISIONS",
    "GraphSpec",
    "build_graph",
    "cache_root",
    "weights_digest",
]

#: Bumped whenever the graph builder changes what it emits; part of every cache key.
ENGINE_VERSION = 1
PRECISIONS = ("fp32", "int8")
_META_KEYS = ("semsearch_engine", "weights_sha256", "precision")
#: Layers a ``"windows"`` graph runs again under each sentence window's own attention mask
#: (:mod:`semsearch.windows`); chosen by measurement (docs/retrieval.md).
LOCAL_LAYERS = 1
_STALE_TEMP_SECONDS = 3600.0


def cache_root() -> Path:
    """The cache folder (not created here)."""
    explicit = os.environ.get("SEMSEARCH_CACHE_DIR")
    if explicit:
        return Path(explicit).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg).expanduser() if xdg else Path.home() / ".cache"
    return base / "semsearch"


def _unwritable(folder: Path, exc: OSError) -> EmbedderUnavailable:
    return EmbedderUnavailable(
        f"cannot write the model cache in {folder}: {exc.strerror or exc}",
        hint="set SEMSEARCH_CACHE_DIR to a writable folder, or run `semsearch models prepare` "
        "once as a user who can write there",
    )


def weights_digest(weights: Path) -> str:
    """SHA-256 (hex) of a weights file, remembered per (path, size, mtime) in the cache folder."""
    stat = weights.stat()
    where = str(weights.resolve())
    stamp = {"path": where, "size": stat.st_size, "mtime_ns": stat.st_mtime_ns}
    memo = cache_root() / "digests" / (hashlib.sha1(where.encode()).hexdigest() + ".json")
    with contextlib.suppress(OSError, ValueError):
        known = json.loads(memo.read_text(encoding="utf-8"))
        if all(known.get(k) == v for k, v in stamp.items()) and known.get("sha256"):
            return str(known["sha256"])
    digest = hashlib.sha256()
    with weights.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    sha = digest.hexdigest()
    with contextlib.suppress(OSError):  # a read-only cache only costs the hash next time
        _atomic_write(memo, json.dumps({**stamp, "sha256": sha}).encode())
    return sha


class GraphSpec:
    """One cached graph: which folder, which precision, and where it lives.

    Args:
        folder: the model folder.
        precision: ``"fp32"`` or ``"int8"`` (dynamic quantisation, per-channel weights).
        label: the model's short name for the file name (default: the folder's name).
        head: ``"encoder"`` (token vectors, an embedder) or ``"classifier"`` (logits, a
            cross-encoder); see :func:`~semsearch.embedders.onnx.encoder_graph.build_encoder_graph`.
    Raises:
        EmbedderUnavailable: an unknown precision.
    """

    def __init__(
        self,
        folder: ModelFolder,
        precision: str,
        label: str | None = None,
        head: str = "encoder",
    ) -> None:
        if precision not in PRECISIONS:
            raise EmbedderUnavailable(
                f"unknown precision {precision!r}", hint=f"use one of: {', '.join(PRECISIONS)}"
            )
        self.folder = folder
        self.precision = precision
        self.label = label or folder.path.name
        self.head = head

    @property
    def digest(self) -> str:
        """The weights' SHA-256."""
        return weights_digest(self.folder.weights_file)

    @property
    def path(self) -> Path:
        """Where the graph is cached."""
        slug = re.sub(r"[^A-Za-z0-9_.-]+", "-", self.label).strip("-.") or "model"
        # encoder names stay as before
        suffix = {"classifier": "-ce", "windows": f"-win{LOCAL_LAYERS}"}.get(self.head, "")
        name = f"{slug}-{self.digest[:16]}-{self.precision}-e{ENGINE_VERSION}{suffix}.onnx"
        return cache_root() / "onnx" / name

    def metadata(self) -> dict[str, str]:
        """What a valid graph of this spec records in its ONNX metadata."""
        values = dict(
            zip(_META_KEYS, (str(ENGINE_VERSION), self.digest, self.precision), strict=True)
        )
        if self.head != "encoder":  # encoder graphs cached before heads existed stay valid
            values["head"] = self.head
        if self.head == "windows":
            values["local_layers"] = str(LOCAL_LAYERS)
        return values

    def matches(self, found: dict[str, str]) -> bool:
        """True when a loaded graph's metadata names this spec."""
        return all(found.get(k) == v for k, v in self.metadata().items())


def build_graph(spec: GraphSpec, announce: Callable[[str], None] | None = None) -> Path:
    """Build the graph of ``spec`` from the folder's weights and write it atomically.

    Prints one line to stderr (or to ``announce``) and the time it took.

    Returns:
        The cached graph's path.
    Raises:
        EmbedderUnavailable: the cache folder is not writable, the weights are unreadable, or
            the architecture is not one the engine builds.
    """
    from semsearch.embedders.onnx.encoder_graph import (
        EncoderConfig,
        build_encoder_graph,
        load_encoder_weights,
    )

    say = announce or (lambda line: print(line, file=sys.stderr, flush=True))
    target = spec.path
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise _unwritable(target.parent, exc) from exc
    remove_stale_temps(target.parent)
    say(f"preparing the model {spec.label} for ONNX Runtime ({spec.precision}), once")
    started = time.perf_counter()
    config = EncoderConfig.from_json(spec.folder.hf_config)
    model = build_encoder_graph(
        load_encoder_weights(spec.folder.weights_file),
        config,
        head=spec.head,
        local_layers=LOCAL_LAYERS,
    )
    if spec.precision == "int8":
        model = _quantized(model, target.parent)
    _set_metadata(model, spec.metadata())
    try:
        _atomic_write(target, model.SerializeToString())
    except OSError as exc:
        raise _unwritable(target.parent, exc) from exc
    say(f"model ready in {time.perf_counter() - started:.1f} s: {target}")
    return target


def _quantized(model: Any, folder: Path) -> Any:
    """Dynamic int8 quantisation of the MatMul weights, one scale per output channel.

    Per-channel scales keep the worst cosine to fp32 near 0.99 on SciFact abstracts, where one
    scale per tensor (the quantiser's default) gave 0.877 (docs/benchmarks.md). Embedding
    tables stay fp32: quantising their Gather lost quality and saved no time.
    """
    import onnx
    from onnxruntime.quantization import QuantType, quantize_dynamic

    token = f"{os.getpid()}-{time.monotonic_ns()}"
    source = folder / f".quant-in.tmp-{token}"
    output = folder / f".quant-out.tmp-{token}"
    quiet = _DropRootAdvice()
    logging.getLogger().addFilter(quiet)
    try:
        source.write_bytes(model.SerializeToString())
        quantize_dynamic(
            source,
            output,
            weight_type=QuantType.QInt8,
            per_channel=True,
            op_types_to_quantize=["MatMul"],
        )
        return onnx.load(str(output))
    except OSError as exc:
        raise _unwritable(folder, exc) from exc
    finally:
        logging.getLogger().removeFilter(quiet)
        for leftover in (source, output):
            with contextlib.suppress(OSError):
                leftover.unlink()


class _DropRootAdvice(logging.Filter):
    """Hides the quantiser's "consider pre-processing" advice, meant for image models."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "pre-processing before quantization" not in record.getMessage()


def _set_metadata(model: Any, values: dict[str, str]) -> None:
    from onnx import helper

    del model.metadata_props[:]
    helper.set_model_props(model, values)


def _atomic_write(target: Path, data: bytes) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    temp = target.with_name(f".{target.name}.tmp-{os.getpid()}-{time.monotonic_ns()}")
    try:
        with temp.open("wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temp, target)
    finally:
        with contextlib.suppress(OSError):
            temp.unlink()


def remove_stale_temps(folder: Path) -> list[Path]:
    """Delete temporary files of builders that are gone (their pid is dead, or older than 1 h)."""
    removed: list[Path] = []
    for temp in folder.glob(".*.tmp-*"):
        pid_text = temp.name.rsplit(".tmp-", 1)[-1].split("-", 1)[0]
        with contextlib.suppress(OSError, ValueError):
            age = time.time() - temp.stat().st_mtime
            if age > _STALE_TEMP_SECONDS or not pid_alive(int(pid_text)):
                temp.unlink()
                removed.append(temp)
    return removed
