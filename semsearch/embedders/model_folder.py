"""What a sentence-transformers model folder says about itself, read without torch.

A folder holds ``modules.json`` (the pipeline: Transformer, Pooling, Normalize, ...),
``1_Pooling/config.json`` (which pooling), ``sentence_bert_config.json`` (``max_seq_length``,
``do_lower_case``), ``config.json`` (the Hugging Face architecture), ``tokenizer.json`` and the
weights. Both engines read these once, here, so that they tokenise, truncate and pool alike.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

__all__ = ["ONNX_WEIGHT_LIMIT", "ModelFolder", "Pooling", "float32_weight_bytes"]

_PLAIN_MODULES = {"Transformer", "Pooling", "Normalize"}
#: Pooling modes :func:`semsearch.embedders.onnx.runtime.pool` computes.
_ONNX_POOLING = {"cls", "max", "mean", "mean_sqrt_len", "lasttoken"}


@dataclass(frozen=True)
class Pooling:
    """How token vectors become one text vector (sentence-transformers ``Pooling`` modes)."""

    mode: str  # "mean", "cls", "max", "mean_sqrt_len", "lasttoken", or several joined by "+"
    dim: int | None
    include_prompt: bool = True

    @classmethod
    def from_json(cls, config: dict[str, Any]) -> Pooling:
        """Read ``1_Pooling/config.json`` in either layout sentence-transformers writes:
        ``pooling_mode`` (a name or a list, v6) or one ``pooling_mode_*`` flag per mode (older);
        several modes concatenate in ST's order, mean when none is set."""
        named = config.get("pooling_mode")
        if named:
            names = [named] if isinstance(named, str) else list(named)
            enabled = [str(n).removesuffix("_tokens") for n in names]  # mean_sqrt_len_tokens
        else:
            enabled = [mode for mode, key in _POOLING_FLAGS if config.get(key)]
        dim = config.get("embedding_dimension") or config.get("word_embedding_dimension")
        include = bool(config.get("include_prompt", True))
        return cls("+".join(enabled) or "mean", int(dim) if dim else None, include)


#: The older per-mode flags of a pooling config, in ST's concatenation order.
_POOLING_FLAGS = [
    ("cls", "pooling_mode_cls_token"),
    ("max", "pooling_mode_max_tokens"),
    ("mean", "pooling_mode_mean_tokens"),
    ("mean_sqrt_len", "pooling_mode_mean_sqrt_len_tokens"),
    ("weightedmean", "pooling_mode_weightedmean_tokens"),
    ("lasttoken", "pooling_mode_lasttoken"),
]


class ModelFolder:
    """The config files of one local model folder, each read at most once.

    Args:
        path: the folder (must exist; callers check and raise EmbedderUnavailable).
    """

    def __init__(self, path: Path) -> None:
        self.path = path

    @cached_property
    def module_kinds(self) -> list[str]:
        """Class names of the pipeline modules, e.g. ``["Transformer", "Pooling", "Normalize"]``."""
        modules = read_json(self.path / "modules.json")
        if not isinstance(modules, list):
            return ["Transformer", "Pooling"]  # a bare Hugging Face folder: ST's own default
        return [str(m.get("type", "")).rsplit(".", 1)[-1] for m in modules]

    @cached_property
    def pooling(self) -> Pooling:
        """The pooling module's config (mean pooling when the folder has none)."""
        folder = self._module_path("Pooling") or "1_Pooling"
        config = read_json(self.path / folder / "config.json")
        return Pooling.from_json(config if isinstance(config, dict) else {})

    @cached_property
    def sbert_config(self) -> dict[str, Any]:
        """``sentence_bert_config.json`` (``max_seq_length``, ``do_lower_case``), or {}."""
        config = read_json(self.path / "sentence_bert_config.json")
        return config if isinstance(config, dict) else {}

    @cached_property
    def hf_config(self) -> dict[str, Any]:
        """The Hugging Face ``config.json`` (architecture, sizes), or {}."""
        config = read_json(self.path / "config.json")
        return config if isinstance(config, dict) else {}

    @property
    def is_plain(self) -> bool:
        """True when the pipeline is Transformer + Pooling (+ Normalize): no Dense or custom layer."""
        return not set(self.module_kinds) - _PLAIN_MODULES

    @property
    def normalizes(self) -> bool:
        """True when the pipeline ends in a Normalize module (semsearch normalises regardless)."""
        return "Normalize" in self.module_kinds

    @property
    def max_seq_length(self) -> int | None:
        """Tokens per text the model reads, special tokens included (e.g. 256), if declared."""
        value = self.sbert_config.get("max_seq_length")
        return int(value) if value else None

    @property
    def do_lower_case(self) -> bool:
        """True when texts are lower-cased before tokenising (sentence-transformers' flag)."""
        return bool(self.sbert_config.get("do_lower_case", False))

    @property
    def weights_file(self) -> Path:
        """The safetensors weights of the transformer."""
        return self.path / "model.safetensors"

    def onnx_obstacle(self) -> str | None:
        """Why the ONNX engine cannot build this model, or None when it can (read once, as
        the configs are: a collection asks for its embedder's model id on every search)."""
        return self._onnx_obstacle

    @cached_property
    def _onnx_obstacle(self) -> str | None:
        if not self.is_plain:
            extra = sorted(set(self.module_kinds) - _PLAIN_MODULES)
            return f"its pipeline has {', '.join(extra)} modules"
        from semsearch.embedders.onnx.families import FAMILIES

        kind = self.hf_config.get("model_type")
        if kind not in FAMILIES:
            return f"its architecture is {kind or 'unknown'}, not one of {', '.join(FAMILIES)}"
        if not self.weights_file.is_file():
            return "it has no model.safetensors"
        weight_bytes = float32_weight_bytes(self.weights_file)
        if weight_bytes is not None and weight_bytes > ONNX_WEIGHT_LIMIT:
            return (
                f"its weights take {weight_bytes / 2**30:.1f} GiB as float32, more than one "
                "ONNX file holds (2 GiB)"
            )
        if not (self.path / "tokenizer.json").is_file():
            return "it has no tokenizer.json"
        if not set(self.pooling.mode.split("+")) <= _ONNX_POOLING:
            return f"its pooling mode is {self.pooling.mode}"
        if not self.pooling.include_prompt:
            return "its pooling leaves out the prompt tokens"
        return None

    def _module_path(self, kind: str) -> str | None:
        modules = read_json(self.path / "modules.json")
        if not isinstance(modules, list):
            return None
        for module in modules:
            if str(module.get("type", "")).endswith(f".{kind}") and module.get("path"):
                return str(module["path"])
        return None


#: The most float32 weight bytes the ONNX engine puts in one graph file: protobuf's 2 GiB limit
#: on a serialised message, less 16 MiB for the graph itself (multilingual-e5-large, 560M
#: parameters, is over it; multilingual-e5-base, 278M, is under).
ONNX_WEIGHT_LIMIT = 2**31 - 2**24


def float32_weight_bytes(path: Path) -> int | None:
    """Bytes a safetensors file's tensors take as float32 (4 per value, whatever their stored
    dtype), read from its header alone; None when the header is unreadable.

    The layout: an 8-byte little-endian header length, then a JSON object of
    ``{name: {"dtype", "shape", "data_offsets"}}`` (huggingface/safetensors, format spec).
    """
    try:
        with path.open("rb") as handle:
            size = int.from_bytes(handle.read(8), "little")
            if not 0 < size <= 100_000_000:
                return None
            header = json.loads(handle.read(size))
        return sum(
            4 * math.prod(int(d) for d in info.get("shape", []))
            for name, info in header.items()
            if name != "__metadata__" and isinstance(info, dict)
        )
    except (OSError, ValueError, TypeError, AttributeError):
        return None


def read_json(path: Path) -> Any:
    """Parsed JSON, or None when the file is missing or not JSON."""
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
