"""Query/document prefixes declared per model entry (e5, nomic, bge ...)."""

from __future__ import annotations

import numpy as np
import pytest

from semsearch.embedders.prompts import Prompts, prompts_for


@pytest.mark.parametrize(
    ("name", "query", "document"),
    [
        ("intfloat/multilingual-e5-small", "query: ", "passage: "),
        ("/models/e5-large-v2", "query: ", "passage: "),
        ("nomic-embed-text:v1.5", "search_query: ", "search_document: "),
        (
            "BAAI/bge-small-en-v1.5",
            "Represent this sentence for searching relevant passages: ",
            "",
        ),
        ("e5-mistral-7b-instruct", "", ""),  # instruction-tuned: not the plain e5 prompts
        ("sentence-transformers/all-MiniLM-L6-v2", "", ""),
    ],
)
def test_known_models(name, query, document):
    prompts = prompts_for(name)
    assert (prompts.query, prompts.document) == (query, document)


def test_sentence_transformers_config_wins():
    config = {"prompts": {"query": "Q: ", "passage": "P: "}}
    assert prompts_for("e5-small", config) == Prompts(
        "Q: ", "P: ", "config_sentence_transformers.json"
    )
    assert prompts_for("e5-small", {"prompts": {}}).query == "query: "


def test_apply_and_token_cost():
    prompts = Prompts("query: ", "passage: ")
    assert prompts.apply(["a", "b"], "document") == ["passage: a", "passage: b"]
    assert prompts.apply(["a"], "query") == ["query: a"]
    assert prompts.token_cost(lambda p: len(p.split())) == 1
    assert Prompts().apply(["x"], "query") == ["x"] and not Prompts()


@pytest.mark.slow
def test_local_e5_folder_gets_prefixes(tmp_path, minilm):
    """A local folder named like an e5 model gets "query: "/"passage: " (the weights here are
    MiniLM's, linked under an e5 name: this tests the prefix plumbing, not e5 quality)."""
    from semsearch.embedders.local import LocalEmbedder

    folder = tmp_path / "multilingual-e5-small"
    folder.mkdir()
    for item in minilm.path.iterdir():
        (folder / item.name).symlink_to(item)
    emb = LocalEmbedder(str(folder), precision=minilm.precision)  # the same weights' graph
    assert emb.prompts.query == "query: " and emb.has_modes and not minilm.has_modes
    longest = max(len(minilm.token_spans(p)) for p in ("query: ", "passage: "))
    assert emb.max_tokens == minilm.max_tokens - longest

    # minilm has no prefixes of its own, so it embeds the prefixed texts as given.
    expected_q = minilm.embed_documents(["query: hello there"])[0]
    expected_d = minilm.embed_documents(["passage: hello there"])[0]
    np.testing.assert_allclose(emb.embed_query("hello there"), expected_q, atol=1e-5)
    np.testing.assert_allclose(emb.embed_documents(["hello there"])[0], expected_d, atol=1e-5)
    assert not np.allclose(expected_q, expected_d, atol=1e-3)
