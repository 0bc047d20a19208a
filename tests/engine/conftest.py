"""Fixtures for the ONNX engine: a private cache folder, and tiny BERT folders made in the test.

A tiny folder has random weights (seeded), the packaged model's tokenizer.json and the config
files sentence-transformers writes, so both engines can load it in well under a second.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest


@pytest.fixture
def cache_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fresh SEMSEARCH_CACHE_DIR for this test."""
    folder = tmp_path / "cache"
    monkeypatch.setenv("SEMSEARCH_CACHE_DIR", str(folder))
    return folder


def _packaged_tokenizer() -> Path:
    from semsearch.embedders.local import _packaged_model_path

    return _packaged_model_path() / "tokenizer.json"


VOCAB = 30522  # the packaged tokenizer's


def _bert_tensors(
    rng: np.random.Generator, hidden: int, layers: int, positions: int = 64
) -> dict[str, np.ndarray]:
    """Random BERT encoder tensors (std 0.2, so outputs vary from text to text), no prefix."""

    def normal(*shape: int) -> np.ndarray:
        return (rng.standard_normal(shape) * 0.2).astype(np.float32)

    tensors = {
        "embeddings.word_embeddings.weight": normal(VOCAB, hidden),
        "embeddings.position_embeddings.weight": normal(positions, hidden),
        "embeddings.token_type_embeddings.weight": normal(2, hidden),
        "embeddings.LayerNorm.weight": 1 + normal(hidden),
        "embeddings.LayerNorm.bias": normal(hidden),
    }
    for i in range(layers):
        p = f"encoder.layer.{i}"
        for name, shape in [
            ("attention.self.query", (hidden, hidden)),
            ("attention.self.key", (hidden, hidden)),
            ("attention.self.value", (hidden, hidden)),
            ("attention.output.dense", (hidden, hidden)),
            ("intermediate.dense", (4 * hidden, hidden)),
            ("output.dense", (hidden, 4 * hidden)),
        ]:
            tensors[f"{p}.{name}.weight"] = normal(*shape)
            tensors[f"{p}.{name}.bias"] = normal(shape[0])
        for norm in ("attention.output.LayerNorm", "output.LayerNorm"):
            tensors[f"{p}.{norm}.weight"] = 1 + normal(hidden)
            tensors[f"{p}.{norm}.bias"] = normal(hidden)
    return tensors


def _bert_config(
    architecture: str, hidden: int, layers: int, heads: int, positions: int
) -> dict[str, object]:
    """A Hugging Face BERT config.json for the tensors of :func:`_bert_tensors`."""
    return {
        "architectures": [architecture],
        "model_type": "bert",
        "hidden_size": hidden,
        "num_hidden_layers": layers,
        "num_attention_heads": heads,
        "intermediate_size": 4 * hidden,
        "hidden_act": "gelu",
        "max_position_embeddings": positions,
        "type_vocab_size": 2,
        "vocab_size": VOCAB,
        "layer_norm_eps": 1e-12,
        "pad_token_id": 0,
    }


def make_tiny_cross_encoder(
    folder: Path,
    hidden: int = 32,
    layers: int = 2,
    heads: int = 4,
    max_length: int = 40,
    num_labels: int = 1,
    seed: int = 0,
    positions: int = 64,
) -> Path:
    """Write a random-weight cross-encoder folder (Hugging Face BertForSequenceClassification
    with the pooler and classifier head, as sentence-transformers' CrossEncoder saves one);
    ``max_length`` goes to tokenizer_config.json's model_max_length. Returns the folder.

    ``hidden=384, layers=6, heads=12, positions=512`` is the shape of
    cross-encoder/ms-marco-MiniLM-L6-v2 (what benchmarks/rerank.py times)."""
    from safetensors.numpy import save_file
    from transformers import BertTokenizerFast

    rng = np.random.default_rng(seed)
    folder.mkdir(parents=True, exist_ok=True)
    tensors = {f"bert.{k}": v for k, v in _bert_tensors(rng, hidden, layers, positions).items()}
    tensors["bert.pooler.dense.weight"] = (rng.standard_normal((hidden, hidden)) * 0.3).astype(
        np.float32
    )
    tensors["bert.pooler.dense.bias"] = (rng.standard_normal(hidden) * 0.1).astype(np.float32)
    # a classifier weight of std 1 spreads the logits over a few units: sigmoid varies
    tensors["classifier.weight"] = rng.standard_normal((num_labels, hidden)).astype(np.float32)
    tensors["classifier.bias"] = np.zeros(num_labels, dtype=np.float32)
    save_file(tensors, str(folder / "model.safetensors"), metadata={"format": "pt"})
    config = _bert_config("BertForSequenceClassification", hidden, layers, heads, positions)
    config["id2label"] = {str(i): f"LABEL_{i}" for i in range(num_labels)}
    config["label2id"] = {f"LABEL_{i}": i for i in range(num_labels)}
    (folder / "config.json").write_text(json.dumps(config))
    tokenizer = BertTokenizerFast(tokenizer_file=str(_packaged_tokenizer()))
    tokenizer.model_max_length = max_length
    tokenizer.save_pretrained(str(folder))
    return folder


def make_tiny_bert(
    folder: Path,
    pooling: str = "mean",
    hidden: int = 32,
    layers: int = 2,
    heads: int = 4,
    max_seq_length: int = 24,
    seed: int = 0,
    prefix: str = "",
) -> Path:
    """Write a random-weight BERT sentence-transformers folder; returns it.

    Args:
        pooling: "mean", "cls", "max" or "mean_sqrt_len".
        prefix: tensor-name prefix ("bert." like a BertForX checkpoint, or "").
    """
    from safetensors.numpy import save_file

    folder.mkdir(parents=True, exist_ok=True)
    tensors = _bert_tensors(np.random.default_rng(seed), hidden, layers)
    save_file({prefix + k: v for k, v in tensors.items()}, str(folder / "model.safetensors"))
    config = _bert_config("BertModel", hidden, layers, heads, 64)
    (folder / "config.json").write_text(json.dumps(config))
    shutil.copy(_packaged_tokenizer(), folder / "tokenizer.json")
    modules = [
        {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
        {
            "idx": 1,
            "name": "1",
            "path": "1_Pooling",
            "type": "sentence_transformers.models.Pooling",
        },
        {
            "idx": 2,
            "name": "2",
            "path": "2_Normalize",
            "type": "sentence_transformers.models.Normalize",
        },
    ]
    (folder / "modules.json").write_text(json.dumps(modules))
    (folder / "1_Pooling").mkdir(exist_ok=True)
    keys = {"mean": "mean_tokens", "cls": "cls_token", "max": "max_tokens"}
    keys["mean_sqrt_len"] = "mean_sqrt_len_tokens"
    pooling_config = {"word_embedding_dimension": hidden}
    for mode, key in keys.items():
        pooling_config[f"pooling_mode_{key}"] = mode == pooling
    (folder / "1_Pooling" / "config.json").write_text(json.dumps(pooling_config))
    sbert = {"max_seq_length": max_seq_length, "do_lower_case": False}
    (folder / "sentence_bert_config.json").write_text(json.dumps(sbert))
    return folder


@pytest.fixture
def tiny_bert(tmp_path: Path) -> Path:
    """A tiny mean-pooling BERT folder (hidden 32, 2 layers, window 24 tokens)."""
    return make_tiny_bert(tmp_path / "tiny-bert")
