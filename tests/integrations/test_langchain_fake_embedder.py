"""What the LangChain adapter adds beyond the standard suite (fake embedders, real SQLite files):
metadata as declared fields, filters in the ``where`` language, semsearch's scores and modes,
search by vector, MMR, retrievers, and model-mismatch protection for wrapped Embeddings."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from langchain_core.documents import Document
from langchain_core.embeddings import DeterministicFakeEmbedding

import semsearch
from semsearch.embedders.fake import FakeEmbedder
from semsearch.errors import InvalidFilter, InvalidQuery, InvalidRecord, ModelMismatch
from semsearch.integrations.langchain import LangChainEmbedder, SemsearchVectorStore

TEXTS = [
    "tomatoes need deep watering twice a week",
    "prune roses in early spring",
    "the kettle boils water for tea",
]
METAS = [
    {"topic": "garden", "page": 1, "tags": ["veg"]},
    {"topic": "garden", "page": 2},
    {"topic": "kitchen", "page": 3, "id": "k-1"},  # a metadata key named like a record key
]


@pytest.fixture
def vs(tmp_path: Path):
    store = SemsearchVectorStore.open(
        str(tmp_path / "lc.embed.db"), "notes", embedding=FakeEmbedder(32),
        fields={"topic": "str", "page": "int"},
    )  # fmt: skip
    store.add_texts(TEXTS, METAS, ids=["t", "r", "k"])
    yield store
    store.close()


def _fake_cosines(query: str) -> dict[str, float]:
    emb = FakeEmbedder(32)
    stored = emb.embed_documents(TEXTS).astype(np.float16).astype(np.float32)  # SQLite's precision
    scores = stored @ emb.embed_query(query)
    return dict(zip(["t", "r", "k"], scores.tolist(), strict=True))


def test_scores_are_cosine_similarities_of_the_collections_model(vs) -> None:
    expected = _fake_cosines("water tea")
    pairs = vs.similarity_search_with_score("water tea", k=3)
    assert [d.id for d, _ in pairs] == sorted(expected, key=lambda i: -expected[i])
    for doc, score in pairs:
        assert score == pytest.approx(expected[doc.id], abs=1e-5)


def test_metadata_round_trips_whole_including_reserved_key_names(vs) -> None:
    docs = vs.get_by_ids(["k", "t", "missing"])
    assert docs == [
        Document(id="k", page_content=TEXTS[2], metadata=METAS[2]),
        Document(id="t", page_content=TEXTS[0], metadata=METAS[0]),
    ]


def test_declared_metadata_filters_with_where_or_filter(vs) -> None:
    assert {d.id for d in vs.similarity_search("water", k=3, where={"topic": "garden"})} == {
        "t",
        "r",
    }
    assert [d.id for d in vs.similarity_search("water", k=3, filter={"page": {"$gte": 3}})] == ["k"]
    with pytest.raises(InvalidFilter):
        vs.similarity_search("water", where={"tags": "veg"})  # stored, not declared
    with pytest.raises(InvalidFilter):
        vs.similarity_search("water", where={"page": 1}, filter={"page": 1})


def test_keyword_and_hybrid_modes_per_call_and_per_retriever(vs) -> None:
    keyword = vs.similarity_search_with_score("kettle", k=3, mode="keyword")
    assert [d.id for d, _ in keyword] == ["k"] and keyword[0][1] > 0  # BM25, only matches
    retriever = vs.as_retriever(mode="hybrid", search_kwargs={"k": 2})
    assert retriever.search_kwargs == {"k": 2, "mode": "hybrid"}
    assert retriever.invoke("kettle tea")[0].id == "k"
    with pytest.raises(InvalidQuery):
        vs.as_retriever(mode="fuzzy")


def test_search_by_vector_ranks_the_identical_text_first(vs) -> None:
    vector = FakeEmbedder(32).embed_query(TEXTS[1]).tolist()
    docs = vs.similarity_search_by_vector(vector, k=2)
    assert docs[0] == Document(id="r", page_content=TEXTS[1], metadata=METAS[1])


def test_mmr_prefers_a_diverse_second_document(tmp_path: Path) -> None:
    texts = ["red apple pie", "red apple pie recipe", "blue ocean waves"]
    store = SemsearchVectorStore.from_texts(
        texts, FakeEmbedder(32), ids=["a", "b", "c"], location=str(tmp_path / "m.embed.db")
    )
    query = FakeEmbedder(32).embed_query("red apple pie")
    vectors = FakeEmbedder(32).embed_documents(texts)
    # worked out here: b is nearer the query than c, so plain similarity takes a then b ...
    assert float(vectors[1] @ query) > float(vectors[2] @ query)
    assert [d.id for d in store.similarity_search("red apple pie", k=2)] == ["a", "b"]
    # ... while MMR (lambda 0.1) scores each candidate 0.1*sim(query) - 0.9*sim(a), after a
    mmr_b = 0.1 * float(vectors[1] @ query) - 0.9 * float(vectors[0] @ vectors[1])
    mmr_c = 0.1 * float(vectors[2] @ query) - 0.9 * float(vectors[0] @ vectors[2])
    assert mmr_c > mmr_b
    mmr = store.max_marginal_relevance_search("red apple pie", k=2, fetch_k=3, lambda_mult=0.1)
    assert [d.id for d in mmr] == ["a", "c"]
    store.close()


def test_wrapped_langchain_embeddings_keep_model_mismatch_protection(tmp_path: Path) -> None:
    location = str(tmp_path / "w.embed.db")
    store = SemsearchVectorStore.open(location, "w", embedding=DeterministicFakeEmbedding(size=6))
    store.add_texts(["hello"], ids=["h"])
    model_id = store.collection.model_id
    assert model_id == "langchain:langchain_core.embeddings.fake.DeterministicFakeEmbedding"
    store.close()
    with pytest.raises(ModelMismatch):
        SemsearchVectorStore.open(location, "w", embedding=FakeEmbedder(6))
    named = LangChainEmbedder(DeterministicFakeEmbedding(size=6), model_id="my-model")
    with pytest.raises(ModelMismatch):
        SemsearchVectorStore.open(location, "w", embedding=named)
    again = SemsearchVectorStore.open(location, "w", embedding=DeterministicFakeEmbedding(size=6))
    assert [d.id for d in again.similarity_search("hello", k=1)] == ["h"]
    again.close()


def test_top_level_metadata_over_an_existing_collection(tmp_path: Path) -> None:
    location = str(tmp_path / "spells.embed.db")
    with semsearch.connect(location) as db:
        schema = semsearch.Schema.from_types({"level": "int"})
        coll = db.collection("spells", schema=schema, embedder=FakeEmbedder(32))
        coll.upsert([{"id": "fireball", "text": "a burst of flame", "level": 3}])
        store = SemsearchVectorStore(coll, metadata_key=None)
        assert store.get_by_ids(["fireball"])[0].metadata == {"level": 3}
        store.add_texts(["a ward"], [{"level": 1}], ids=["alarm"])
        assert [d.id for d in store.similarity_search("ward", k=2, where={"level": 1})] == ["alarm"]
        with pytest.raises(InvalidRecord):
            store.add_texts(["x"], [{"id": "clash"}])
        assert coll.count() == 2


def test_bad_input_writes_nothing_and_delete_needs_a_target(vs) -> None:
    with pytest.raises(InvalidRecord):
        vs.add_texts(["a", "b"], [{"page": 1}])  # one metadata for two texts
    with pytest.raises(InvalidRecord):
        vs.add_texts(["a"], [{"page": "one"}])  # page is declared int
    with pytest.raises(InvalidQuery):
        vs.delete()
    assert vs.collection.count() == 3
    vs.delete(where={"topic": "garden"})
    assert vs.collection.ids() == ["k"]


def test_embeddings_property_gives_the_collections_unit_vectors(vs) -> None:
    vector = vs.embeddings.embed_query("tea")
    assert len(vector) == 32
    assert np.linalg.norm(vector) == pytest.approx(1.0, abs=1e-6)
