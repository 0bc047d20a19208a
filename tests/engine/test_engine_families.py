"""The ONNX engine on XLM-RoBERTa, MPNet and BERT with a SentencePiece tokenizer against
sentence-transformers (issue 47).

Tiny random models of each family are built here with transformers (tests/engine/
tiny_families.py); sentence-transformers (the torch extra) loads the same folder and is the
reference. Texts in English, German, Chinese and Arabic, and one far over the window.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from semsearch.embedders.local import LocalEmbedder
from semsearch.embedders.model_folder import Pooling
from semsearch.embedders.onnx.families import relative_bias_table
from tests.engine.tiny_families import make_tiny_family

pytest.importorskip("sentence_transformers")

TEXTS = [
    "The lighthouse keeper logged the tide and every passing ship.",
    "Der Leuchtturmwärter notierte die Flut und jedes vorbeifahrende Schiff.",
    "灯塔看守人记录了潮汐和每一艘经过的船。",
    "سجل حارس المنارة المد وكل سفينة عابرة.",
    "Short.",
    "tide " * 80,  # far over the 48-token window: truncated
]
FAMILIES = ["xlm-roberta", "mpnet", "bert-unigram"]


def _st(folder: Path):  # type: ignore[no-untyped-def]
    from sentence_transformers import SentenceTransformer

    return SentenceTransformer(str(folder), device="cpu", local_files_only=True)


def _reference(folder: Path, texts: list[str], **kwargs: object) -> np.ndarray:
    vectors = _st(folder).encode(texts, convert_to_numpy=True, normalize_embeddings=True, **kwargs)
    return np.asarray(vectors, dtype=np.float32)


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize("pooling", ["mean", "cls", "max", "lasttoken"])
def test_fp32_engine_matches_sentence_transformers_per_family_and_pooling(
    tmp_path: Path, cache_dir: Path, family: str, pooling: str
) -> None:
    folder = make_tiny_family(tmp_path / family, family, pooling=pooling, seed=3)
    onnx = LocalEmbedder(str(folder), precision="fp32")
    assert onnx.engine == "onnx"
    cosine = (onnx.embed_documents(TEXTS) * _reference(folder, TEXTS)).sum(axis=1)
    assert cosine.min() >= 0.9999, dict(zip(TEXTS, cosine.round(6), strict=True))


@pytest.mark.parametrize("family", FAMILIES)
def test_int8_engine_stays_close_to_sentence_transformers_per_family(
    tmp_path: Path, cache_dir: Path, family: str
) -> None:
    folder = make_tiny_family(tmp_path / family, family, seed=4)
    got = LocalEmbedder(str(folder), precision="int8").embed_documents(TEXTS)
    cosine = (got * _reference(folder, TEXTS)).sum(axis=1)
    assert cosine.mean() >= 0.98, cosine.round(4)


@pytest.mark.parametrize("family", FAMILIES)
def test_token_ids_and_truncation_match_sentence_transformers_per_family(
    tmp_path: Path, family: str
) -> None:
    folder = make_tiny_family(tmp_path / family, family)
    runner = LocalEmbedder(str(folder), precision="fp32").runner()
    features = _st(folder).tokenize(TEXTS)
    for row, enc in enumerate(runner._tokenize(TEXTS)):  # type: ignore[attr-defined]
        length = int(features["attention_mask"][row].sum())
        assert enc.ids == features["input_ids"][row][:length].tolist(), TEXTS[row][:30]
        assert enc.ids[0] == 0 and enc.ids[-1] == 2  # <s> ... </s>
    assert len(runner._tokenize([TEXTS[-1]])[0].ids) == 48  # type: ignore[attr-defined]


def test_mpnet_relative_buckets_equal_transformers_own_function() -> None:
    torch = pytest.importorskip("torch")
    from transformers.models.mpnet.modeling_mpnet import MPNetEncoder

    positions = 514  # paraphrase-multilingual-mpnet / all-mpnet-base-v2's table
    weight = np.arange(32 * 2, dtype=np.float32).reshape(32, 2)  # row i holds (2i, 2i + 1)
    table = relative_bias_table(weight, positions)
    relative = torch.arange(-(positions - 1), positions)
    want = MPNetEncoder.relative_position_bucket(relative, num_buckets=32).numpy()
    np.testing.assert_array_equal(table[:, 0] / 2, want)
    # every bucket is reached in 514 positions but 16 (distance 0 on the "after" side)
    assert set(want.tolist()) == set(range(32)) - {16}


@pytest.mark.parametrize("family", FAMILIES)
def test_folder_prompts_are_put_before_queries_and_documents_as_sentence_transformers_does(
    tmp_path: Path, cache_dir: Path, family: str
) -> None:
    prompts = {"query": "query: ", "document": "passage: "}
    folder = make_tiny_family(tmp_path / family, family, seed=5, prompts=prompts)
    onnx = LocalEmbedder(str(folder), precision="fp32")
    query = onnx.embed_query(TEXTS[0])
    assert float(query @ _reference(folder, [TEXTS[0]], prompt_name="query")[0]) >= 0.9999
    plain = _reference(folder, [TEXTS[0]])[0]
    assert float(query @ plain) < 0.999  # the prompt changed the vector
    documents = onnx.embed_documents(TEXTS[:4])
    want = _reference(folder, TEXTS[:4], prompt_name="document")
    assert (documents * want).sum(axis=1).min() >= 0.9999


@pytest.mark.parametrize("family", FAMILIES)
def test_a_window_over_the_whole_text_equals_the_text_vector(
    tmp_path: Path, cache_dir: Path, family: str
) -> None:
    """The windows graph reruns the last layer with a per-token mask; a span covering every
    token allows all of them, so its vector is the text's own (MPNet: with the same
    relative-position bias)."""
    folder = make_tiny_family(tmp_path / family, family, seed=6)
    onnx = LocalEmbedder(str(folder), precision="fp32")
    assert onnx.late_chunking
    text = TEXTS[1]
    vectors, windows = onnx.embed_documents_late([text], [[(0, len(text))]])
    assert windows[0] is not None
    assert float(windows[0][0] @ vectors[0]) >= 0.9999


def test_pooling_configs_in_either_sentence_transformers_layout_are_read() -> None:
    assert Pooling.from_json({"pooling_mode": "cls", "embedding_dimension": 768}) == Pooling(
        "cls", 768
    )
    assert Pooling.from_json({"pooling_mode": ["mean", "mean_sqrt_len_tokens"]}).mode == (
        "mean+mean_sqrt_len"
    )
    older = {"word_embedding_dimension": 384, "pooling_mode_lasttoken": True}
    assert Pooling.from_json(older) == Pooling("lasttoken", 384)


def test_weighted_mean_pooling_falls_back_to_torch(tmp_path: Path) -> None:
    folder = make_tiny_family(tmp_path / "xlmr", "xlm-roberta")
    (folder / "1_Pooling" / "config.json").write_text(
        '{"word_embedding_dimension": 32, "pooling_mode_weightedmean_tokens": true}'
    )
    embedder = LocalEmbedder(str(folder))
    assert embedder.folder.onnx_obstacle() == "its pooling mode is weightedmean"
    assert embedder.engine == "torch"


def test_a_model_too_large_for_one_onnx_file_falls_back_to_torch(tmp_path: Path) -> None:
    """multilingual-e5-large's shape: 250,002 x 1,024 embeddings and 24 layers of about 12.6M
    values are 560M float32 values, 2.1 GiB, over what one ONNX (protobuf) file holds."""
    import json
    import struct

    from semsearch.embedders.model_folder import float32_weight_bytes

    folder = make_tiny_family(tmp_path / "large", "xlm-roberta")
    tensors = {"embeddings.word_embeddings.weight": [250002, 1024]}
    tensors.update({f"encoder.layer.{i}.block": [12_600_000] for i in range(24)})
    header = {name: {"dtype": "F16", "shape": shape, "data_offsets": [0, 0]}
              for name, shape in tensors.items()}  # fmt: skip
    raw = json.dumps(header).encode()
    (folder / "model.safetensors").write_bytes(struct.pack("<Q", len(raw)) + raw)
    want = 4 * (250002 * 1024 + 24 * 12_600_000)  # float32 bytes, though stored as float16
    assert float32_weight_bytes(folder / "model.safetensors") == want
    embedder = LocalEmbedder(str(folder))
    assert "2.1 GiB as float32" in (embedder.folder.onnx_obstacle() or "")
    assert embedder.engine == "torch"
