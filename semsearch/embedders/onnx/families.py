"""The encoder families the ONNX engine builds, and what sets each apart from BERT.

All three are the same post-LayerNorm Transformer encoder (Vaswani et al. 2017) with a GELU
feed-forward block; they differ in where positions come from and in tensor names:

| family | model_type (config.json) | positions | token types | attention bias |
|---|---|---|---|---|
| BERT (Devlin et al. 2019) | ``bert`` | 0, 1, 2, ... | yes | none |
| RoBERTa (Liu et al. 2019), XLM-RoBERTa (Conneau et al. 2020) | ``roberta``, ``xlm-roberta`` | ``padding_idx`` + 1 + index among real tokens | one type | none |
| MPNet (Song et al. 2020) | ``mpnet`` | as RoBERTa, ``padding_idx`` = 1 | none | relative-position bias, bucketed as in T5 |

The layouts follow Hugging Face ``BertModel``, ``XLMRobertaModel`` and ``MPNetModel``; the
MPNet bucket function is ``MPNetEncoder.relative_position_bucket`` (32 buckets, half per
direction, exact below 8, log-spaced up to a distance of 128; Raffel et al. 2020, T5).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

__all__ = ["FAMILIES", "Family", "relative_bias_table"]


@dataclass(frozen=True)
class Family:
    """How one encoder family differs from the BERT layout.

    Attributes:
        name: ``"bert"``, ``"roberta"`` or ``"mpnet"``.
        prefixes: tensor-name prefixes of task checkpoints (e.g. ``"roberta."``), dropped on load.
        attention: per projection (``query``, ``key``, ``value``, ``output``, ``norm``) its tensor
            path under ``encoder.layer.<i>.``.
        token_types: True when the embeddings add a token-type vector.
        positions_from_mask: True for RoBERTa-style position ids (``padding_idx`` + 1 + the
            token's index among the real tokens); False for 0, 1, 2, ...
        relative_bias: True when every layer adds MPNet's relative-position attention bias.
    """

    name: str
    prefixes: tuple[str, ...]
    attention: dict[str, str]
    token_types: bool = True
    positions_from_mask: bool = False
    relative_bias: bool = False


_BERT_ATTENTION = {
    "query": "attention.self.query",
    "key": "attention.self.key",
    "value": "attention.self.value",
    "output": "attention.output.dense",
    "norm": "attention.output.LayerNorm",
}
_MPNET_ATTENTION = {
    "query": "attention.attn.q",
    "key": "attention.attn.k",
    "value": "attention.attn.v",
    "output": "attention.attn.o",
    "norm": "attention.LayerNorm",
}
_BERT = Family("bert", ("bert.",), _BERT_ATTENTION)
_ROBERTA = Family("roberta", ("roberta.",), _BERT_ATTENTION, positions_from_mask=True)
_MPNET = Family(
    "mpnet",
    ("mpnet.",),
    _MPNET_ATTENTION,
    token_types=False,
    positions_from_mask=True,
    relative_bias=True,
)

#: ``model_type`` of config.json -> its family.
FAMILIES: dict[str, Family] = {
    "bert": _BERT,
    "roberta": _ROBERTA,
    "xlm-roberta": _ROBERTA,
    "mpnet": _MPNET,
}


def relative_bias_table(weight: NDArray[np.float32], max_positions: int) -> NDArray[np.float32]:
    """MPNet's attention bias per relative position: float32[2 * max_positions - 1, heads].

    Row ``r + max_positions - 1`` is the bias for key position minus query position ``r``
    (in ``-(max_positions - 1) .. max_positions - 1``): ``weight[bucket(r)]``.

    Args:
        weight: ``encoder.relative_attention_bias.weight``, float32[buckets, heads] (32 buckets).
        max_positions: the longest sequence the graph will see (``max_position_embeddings``).
    """
    relative = np.arange(-(max_positions - 1), max_positions, dtype=np.int64)
    return weight[_mpnet_buckets(relative, buckets=int(weight.shape[0]))].astype(np.float32)


def _mpnet_buckets(
    relative: NDArray[np.int64], buckets: int, max_distance: int = 128
) -> NDArray[np.int64]:
    """``MPNetEncoder.relative_position_bucket`` in numpy, float32 logs as torch takes them."""
    half = buckets // 2
    n = -relative
    bucket = (n < 0).astype(np.int64) * half
    n = np.abs(n)
    max_exact = half // 2
    # log(0) -> -inf on the small side, which np.where below drops
    with np.errstate(divide="ignore", invalid="ignore"):
        scaled = np.log(n.astype(np.float32) / np.float32(max_exact)) / np.float32(
            math.log(max_distance / max_exact)
        )
        large = max_exact + (scaled * np.float32(half - max_exact)).astype(np.int64)
    large = np.minimum(large, half - 1)
    return bucket + np.where(n < max_exact, n, large)
