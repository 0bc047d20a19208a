"""Tiny random XLM-RoBERTa, MPNet and multilingual-BERT sentence-transformers folders, built with
transformers.

Each folder is what sentence-transformers saves for a Hub model of that family: ``config.json``
and ``model.safetensors`` (from ``XLMRobertaModel`` / ``MPNetModel`` / ``BertModel`` with
seeded random weights), a ``tokenizer.json`` trained here with the tokenizers library (a
SentencePiece-style Unigram model with ``<s> ... </s>`` for XLM-R and for BERT, which is how
multilingual-e5-small and paraphrase-multilingual-MiniLM-L12-v2 pair them; a lower-casing
WordPiece for MPNet; all with ``<pad>`` = 1 as in the real models), ``modules.json``, ``1_Pooling/config.json``,
``sentence_bert_config.json`` and, when asked, prompts in ``config_sentence_transformers.json``.

Weights are redrawn with std 0.2 (and MPNet's relative-position bias with std 1) so that
positions, attention and the bias each move the output: a graph that got one of them wrong
would not match.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

#: Training text for the tokenizers: the four scripts the tests embed, none of the test texts.
CORPUS = [
    "The harbour master keeps a log of ships, tides and the weather every morning.",
    "Notes about vectors, search engines and cosine similarity between short texts.",
    "Der Hafenmeister führt jeden Morgen ein Buch über Schiffe, Gezeiten und das Wetter.",
    "Notizen über Vektoren, Suchmaschinen und die Ähnlichkeit kurzer Texte.",
    "港口主管每天早上记录船只、潮汐和天气。关于向量和搜索引擎的笔记。",
    "图书馆里有很多关于历史和语言的书。",
    "يسجل مدير الميناء السفن والمد والجزر والطقس كل صباح.",
    "ملاحظات حول المتجهات ومحركات البحث وتشابه النصوص القصيرة.",
]
SPECIALS = ["<s>", "<pad>", "</s>", "<unk>"]  # ids 0-3, as in XLM-R and MPNet
POSITIONS = 66  # max_position_embeddings: 64 tokens + padding_idx + 1


def _tokenizer(kind: str, corpus: list[str], vocab: int) -> Any:
    """A ``tokenizers.Tokenizer`` trained on ``corpus`` with ``vocab`` pieces: ``"unigram"``
    (XLM-R) or ``"wordpiece"`` (MPNet)."""
    from tokenizers import (
        Tokenizer,
        decoders,
        models,
        normalizers,
        pre_tokenizers,
        processors,
        trainers,
    )

    if kind == "unigram":
        tokenizer = Tokenizer(models.Unigram())
        tokenizer.normalizer = normalizers.NFKC()
        tokenizer.pre_tokenizer = pre_tokenizers.Metaspace()
        tokenizer.decoder = decoders.Metaspace()
        trainer: Any = trainers.UnigramTrainer(
            vocab_size=vocab, special_tokens=SPECIALS, unk_token="<unk>"
        )
    else:
        tokenizer = Tokenizer(models.WordPiece(unk_token="<unk>"))
        tokenizer.normalizer = normalizers.BertNormalizer(lowercase=True)
        tokenizer.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
        tokenizer.decoder = decoders.WordPiece()
        trainer = trainers.WordPieceTrainer(vocab_size=vocab, special_tokens=SPECIALS)
    tokenizer.train_from_iterator(corpus, trainer)
    tokenizer.post_processor = processors.TemplateProcessing(
        single="<s> $A </s>",
        pair="<s> $A </s> </s> $B </s>",
        special_tokens=[("<s>", 0), ("</s>", 2)],
    )
    return tokenizer


def _randomised(model: Any, seed: int) -> Any:
    """``model`` with every weight redrawn: N(0, 0.2), LayerNorm scales 1 + N(0, 0.2), the
    relative-position bias N(0, 1)."""
    import torch

    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, param in model.named_parameters():
            noise = torch.randn(param.shape, generator=generator)
            if "relative_attention_bias" in name:
                param.copy_(noise)
            elif "LayerNorm.weight" in name:
                param.copy_(1 + 0.2 * noise)
            else:
                param.copy_(0.2 * noise)
    return model.eval()


def make_tiny_family(
    folder: Path,
    family: str,
    pooling: str = "mean",
    seed: int = 0,
    max_seq_length: int = 48,
    prompts: dict[str, str] | None = None,
    size: tuple[int, int, int, int] = (32, 2, 4, 64),
    vocab_size: int | None = None,
    corpus: list[str] | None = None,
    pieces: int = 300,
) -> Path:
    """Write a random ``family`` (``"xlm-roberta"``, ``"mpnet"`` or ``"bert-unigram"``) ST
    folder; returns it.

    ``size`` is (hidden, layers, heads, feed-forward): (32, 2, 4, 64) by default,
    (384, 6, 12, 1536) with ``vocab_size=30522`` for all-MiniLM-L6-v2's shape. The tokenizer
    learns ``pieces`` pieces from ``corpus`` (default :data:`CORPUS`). ``pooling`` is a sentence-transformers pooling mode (``mean``, ``cls``,
    ``max``, ``mean_sqrt_len``, ``lasttoken``).
    """
    from transformers import (
        BertConfig,
        BertModel,
        MPNetConfig,
        MPNetModel,
        PreTrainedTokenizerFast,
        XLMRobertaConfig,
        XLMRobertaModel,
    )

    folder.mkdir(parents=True, exist_ok=True)
    kind = "wordpiece" if family == "mpnet" else "unigram"
    tokenizer = _tokenizer(kind, corpus or CORPUS * 4, pieces)
    hidden, layers, heads, feed_forward = size
    sizes: dict[str, Any] = dict(
        vocab_size=vocab_size or tokenizer.get_vocab_size(),
        hidden_size=hidden,
        num_hidden_layers=layers,
        num_attention_heads=heads,
        intermediate_size=feed_forward,
        max_position_embeddings=max(POSITIONS, max_seq_length + 2),
        pad_token_id=1,
        bos_token_id=0,
        eos_token_id=2,
    )
    if family == "xlm-roberta":
        model = XLMRobertaModel(XLMRobertaConfig(type_vocab_size=1, **sizes), False)
    elif family == "mpnet":
        model = MPNetModel(MPNetConfig(relative_attention_num_buckets=32, **sizes), False)
    elif family == "bert-unigram":
        model = BertModel(BertConfig(type_vocab_size=2, **sizes), False)
    else:
        raise ValueError(f"no tiny builder for {family!r}")
    _randomised(model, seed).save_pretrained(str(folder), safe_serialization=True)
    wrapped = PreTrainedTokenizerFast(
        tokenizer_object=tokenizer,
        bos_token="<s>",
        eos_token="</s>",
        cls_token="<s>",
        sep_token="</s>",
        pad_token="<pad>",
        unk_token="<unk>",
        model_max_length=max_seq_length,
    )
    wrapped.save_pretrained(str(folder))
    _write_st_files(folder, pooling, max_seq_length, prompts, hidden)
    return folder


def _write_st_files(
    folder: Path, pooling: str, max_seq_length: int, prompts: dict[str, str] | None, dim: int
) -> None:
    """modules.json, 1_Pooling/config.json (the older per-mode flags, as most Hub models),
    sentence_bert_config.json and, with ``prompts``, config_sentence_transformers.json."""
    kinds = [("", "Transformer"), ("1_Pooling", "Pooling"), ("2_Normalize", "Normalize")]
    modules = [
        {"idx": i, "name": str(i), "path": path, "type": f"sentence_transformers.models.{kind}"}
        for i, (path, kind) in enumerate(kinds)
    ]
    (folder / "modules.json").write_text(json.dumps(modules))
    (folder / "1_Pooling").mkdir(exist_ok=True)
    flags = {
        "cls": "pooling_mode_cls_token",
        "max": "pooling_mode_max_tokens",
        "mean": "pooling_mode_mean_tokens",
        "mean_sqrt_len": "pooling_mode_mean_sqrt_len_tokens",
        "lasttoken": "pooling_mode_lasttoken",
    }
    config: dict[str, Any] = {"word_embedding_dimension": dim}
    config.update({key: mode == pooling for mode, key in flags.items()})
    (folder / "1_Pooling" / "config.json").write_text(json.dumps(config))
    sbert = {"max_seq_length": max_seq_length, "do_lower_case": False}
    (folder / "sentence_bert_config.json").write_text(json.dumps(sbert))
    if prompts:
        st_config = {"prompts": prompts, "default_prompt_name": None}
        (folder / "config_sentence_transformers.json").write_text(json.dumps(st_config))
