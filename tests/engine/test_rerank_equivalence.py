"""The ONNX engine's cross-encoder scores equal sentence-transformers' CrossEncoder.predict.

A tiny random-weight cross-encoder is built in the test (no weights ship in any package we can
install); its sigmoid scores from the ONNX graph must match ``CrossEncoder.predict`` with a
Sigmoid activation to 1e-4 on pairs that are short, long enough to be truncated longest side
first, and batched together.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from semsearch.errors import RerankerUnavailable
from semsearch.rerank import resolve_reranker
from semsearch.rerank.local import LocalReranker
from tests.engine.conftest import make_tiny_cross_encoder

QUERY = "where is the lighthouse key"
TEXTS = [
    "The lighthouse key is under the blue pot.",
    "Compost needs greens and browns in equal parts.",
    "  leading and trailing spaces are kept as CrossEncoder keeps them  ",
    "key",
    # longer than the 40-token pair window: truncated longest side first
    "Kitchen notes: " + "the onions go in first, then garlic, then the tomatoes; " * 6,
    "",
]


def _sentence_transformers_scores(folder: Path, query: str, texts: list[str]) -> np.ndarray:
    import torch
    from sentence_transformers import CrossEncoder

    model = CrossEncoder(str(folder), local_files_only=True, device="cpu")
    pairs = [(query, text) for text in texts]
    return np.asarray(model.predict(pairs, activation_fn=torch.nn.Sigmoid(), batch_size=4))


def test_onnx_cross_encoder_scores_match_sentence_transformers(
    tmp_path: Path, cache_dir: Path
) -> None:
    folder = make_tiny_cross_encoder(tmp_path / "tiny-ce")
    expected = _sentence_transformers_scores(folder, QUERY, TEXTS)
    got = LocalReranker(folder, threads=1).rerank(QUERY, TEXTS)
    assert got.dtype == np.float32 and got.shape == (len(TEXTS),)
    assert np.abs(got - expected).max() < 1e-4
    assert expected.max() - expected.min() > 0.05, "random weights must spread the scores"


def test_long_query_is_truncated_like_cross_encoder(tmp_path: Path, cache_dir: Path) -> None:
    folder = make_tiny_cross_encoder(tmp_path / "tiny-ce", seed=3)
    query = "a very long question " * 12  # longer than the text: the query loses tokens first
    texts = ["short answer", "another short answer with more words in it"]
    expected = _sentence_transformers_scores(folder, query, texts)
    got = LocalReranker(folder, threads=1).rerank(query, texts)
    assert np.abs(got - expected).max() < 1e-4


def test_scores_do_not_depend_on_batch_mates(tmp_path: Path, cache_dir: Path) -> None:
    folder = make_tiny_cross_encoder(tmp_path / "tiny-ce")
    reranker = LocalReranker(folder, threads=1)
    together = reranker.rerank(QUERY, TEXTS)
    alone = np.array([reranker.rerank(QUERY, [t])[0] for t in TEXTS])
    assert np.abs(together - alone).max() < 1e-5


def test_graph_is_cached_beside_embedder_graphs(tmp_path: Path, cache_dir: Path) -> None:
    folder = make_tiny_cross_encoder(tmp_path / "tiny-ce")
    resolve_reranker(f"local:{folder}").rerank(QUERY, TEXTS[:2])
    graphs = sorted(p.name for p in (cache_dir / "onnx").glob("*.onnx"))
    assert len(graphs) == 1 and graphs[0].startswith("tiny-ce-") and graphs[0].endswith("-ce.onnx")
    stamp = (cache_dir / "onnx" / graphs[0]).stat().st_mtime_ns
    again = resolve_reranker(f"local:{folder}").rerank(QUERY, TEXTS[:2])  # a new process, say
    assert (cache_dir / "onnx" / graphs[0]).stat().st_mtime_ns == stamp  # reused, not rebuilt
    assert again.shape == (2,)


def test_max_tokens_is_the_tokenizer_model_max_length(tmp_path: Path) -> None:
    folder = make_tiny_cross_encoder(tmp_path / "tiny-ce", max_length=40)
    assert LocalReranker(folder).max_tokens == 40


def test_two_label_model_is_refused(tmp_path: Path, cache_dir: Path) -> None:
    folder = make_tiny_cross_encoder(tmp_path / "nli", num_labels=2)
    with pytest.raises(RerankerUnavailable, match="2 output labels"):
        LocalReranker(folder)  # refused when named, as a misconfiguration


def test_missing_folder_says_what_is_missing(tmp_path: Path) -> None:
    # no folder at all: refused when the reranker is named (a misconfiguration, not an outage)
    with pytest.raises(RerankerUnavailable, match=r"no cross-encoder folder at .*nowhere"):
        LocalReranker(tmp_path / "nowhere")
    # a folder without the model's files: refused when it is named too (issue 46, item 11)
    (tmp_path / "empty").mkdir()
    with pytest.raises(RerankerUnavailable, match=r"missing config\.json"):
        LocalReranker(tmp_path / "empty")
