"""The ONNX engine against sentence-transformers: same tokens, same truncation, same vectors.

sentence-transformers (the torch extra) is the reference here; it is a test dependency.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from semsearch.embedders.local import LocalEmbedder
from tests.engine.conftest import make_tiny_bert

pytest.importorskip("sentence_transformers")

LONG = "The lighthouse keeper logged the tide, the wind and every passing ship. " * 40
TEXTS = [
    "how do I keep private notes out of results?",
    LONG,  # far over the 256-token window: truncated
    " ",  # empty after stripping: only [CLS] [SEP]
    ".",
    "Zürich, crêpe, naïve café; 東京の図書館; 회의 일정; Ελληνικά; emoji 🙂🚀",
    "Short.",
    "A mid-length sentence about vectors, cosine similarity and BM25 in one line of text.",
]


def _reference(folder: str | Path, texts: list[str]) -> np.ndarray:
    from sentence_transformers import SentenceTransformer

    model = SentenceTransformer(str(folder), device="cpu", local_files_only=True)
    vectors = model.encode(texts, batch_size=32, convert_to_numpy=True, normalize_embeddings=True)
    return np.asarray(vectors, dtype=np.float32)


@pytest.mark.slow
def test_fp32_engine_matches_sentence_transformers_on_fixed_texts(cache_dir: Path) -> None:
    onnx = LocalEmbedder(precision="fp32")
    assert onnx.engine == "onnx"
    got = onnx.embed_documents(TEXTS)
    want = _reference(onnx.path, TEXTS)
    cosine = (got * want).sum(axis=1)
    assert cosine.min() >= 0.9999, dict(zip(TEXTS, cosine.round(6), strict=True))


@pytest.mark.slow
def test_int8_engine_stays_close_to_sentence_transformers(cache_dir: Path) -> None:
    onnx = LocalEmbedder(precision="int8")
    got = onnx.embed_documents(TEXTS)
    want = _reference(onnx.path, TEXTS)
    cosine = (got * want).sum(axis=1)
    # The bar for int8 (worst 0.98) is over 1,000 SciFact texts (benchmarks/engine.py);
    # one-word texts move more under quantisation, so this fixed set allows 0.95.
    assert cosine.min() >= 0.95 and cosine.mean() >= 0.98, cosine.round(4)


@pytest.mark.slow
def test_token_ids_and_truncation_match_sentence_transformers() -> None:
    from sentence_transformers import SentenceTransformer

    onnx = LocalEmbedder(precision="fp32")
    runner = onnx.runner()
    model = SentenceTransformer(str(onnx.path), device="cpu", local_files_only=True)
    features = model.tokenize(TEXTS)
    for row, enc in enumerate(runner._tokenize(TEXTS)):  # type: ignore[attr-defined]
        length = int(features["attention_mask"][row].sum())
        assert enc.ids == features["input_ids"][row][:length].tolist(), TEXTS[row][:40]
    assert max(len(e.ids) for e in runner._tokenize([LONG])) == 256  # type: ignore[attr-defined]


@pytest.mark.parametrize("pooling", ["mean", "cls", "max", "mean_sqrt_len"])
def test_tiny_bert_matches_sentence_transformers_for_each_pooling_mode(
    tmp_path: Path, cache_dir: Path, pooling: str
) -> None:
    folder = make_tiny_bert(tmp_path / f"tiny-{pooling}", pooling=pooling, seed=3)
    onnx = LocalEmbedder(str(folder), precision="fp32")
    got = onnx.embed_documents(TEXTS)
    want = _reference(folder, TEXTS)
    assert ((got * want).sum(axis=1)).min() >= 0.9999


def test_bert_prefixed_tensor_names_build_the_same_graph(tmp_path: Path, cache_dir: Path) -> None:
    plain = make_tiny_bert(tmp_path / "plain", seed=5)
    prefixed = make_tiny_bert(tmp_path / "prefixed", seed=5, prefix="bert.")
    a = LocalEmbedder(str(plain), precision="fp32").embed_documents(TEXTS)
    b = LocalEmbedder(str(prefixed), precision="fp32").embed_documents(TEXTS)
    np.testing.assert_allclose(a, b, atol=1e-6)


def test_a_mixed_length_batch_gives_each_text_its_own_vector(
    tiny_bert: Path, cache_dir: Path
) -> None:
    emb = LocalEmbedder(str(tiny_bert), precision="fp32")
    together = emb.embed_documents(TEXTS)
    alone = np.stack([emb.embed_documents([t])[0] for t in TEXTS])
    np.testing.assert_allclose(together, alone, atol=1e-5)  # padding never leaks into a vector
