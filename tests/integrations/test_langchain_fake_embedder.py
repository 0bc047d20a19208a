"""What the LangChain adapter adds beyond the standard suite (fake embedders, real SQLite files):
metadata as declared fields, filters in the ``where`` language, semsearch's scores and modes,
search by vector, MMR, retrievers, and model-mismatch protection for wrapped Embeddings."""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
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


# -- issue 46, item 5: relevance scores in [0, 1] ----------------------------------------------


def test_relevance_scores_map_cosine_to_unit_interval_fake_embedder(vs) -> None:
    query = "boils kettle"
    cosines = _fake_cosines(query)
    assert min(cosines.values()) < 0, "the data must hold a negative cosine to mean anything"
    expected = {i: (1.0 + c) / 2.0 for i, c in cosines.items()}  # LangChain: 0 worst, 1 best
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # LangChain warns "Relevance scores must be between 0 and 1"
        pairs = vs.similarity_search_with_relevance_scores(query, k=3)
    assert [d.id for d, _ in pairs] == sorted(expected, key=lambda i: -expected[i])
    for doc, score in pairs:
        assert 0.0 <= score <= 1.0
        assert score == pytest.approx(expected[doc.id], abs=1e-5)


def test_relevance_threshold_retriever_cuts_on_the_mapped_score_fake_embedder(vs) -> None:
    query = "boils kettle"
    cosines = _fake_cosines(query)
    keep = {i for i, c in cosines.items() if (1.0 + c) / 2.0 >= 0.5}  # cosine >= 0
    assert 0 < len(keep) < 3
    retriever = vs.as_retriever(
        search_type="similarity_score_threshold",
        search_kwargs={"k": 3, "score_threshold": 0.5},
    )
    assert {d.id for d in retriever.invoke(query)} == keep


def test_relevance_scores_of_hybrid_are_the_fused_score_and_keyword_is_refused_fake_embedder(
    vs,
) -> None:
    fused = vs.similarity_search_with_score("kettle tea", k=3, mode="hybrid")
    relevance = vs.similarity_search_with_relevance_scores("kettle tea", k=3, mode="hybrid")
    assert [(d.id, s) for d, s in relevance] == [(d.id, s) for d, s in fused]
    assert all(0.0 <= s <= 1.0 for _, s in relevance)
    with pytest.raises(InvalidQuery, match="keyword"):  # BM25 has no [0, 1] scale
        vs.similarity_search_with_relevance_scores("kettle", k=3, mode="keyword")


# -- issue 46, item 6: MMR refuses bad queries as similarity_search does -----------------------

BAD_QUERIES = [None, 3, 2.5, "\ud800", "tea \udfff pot", b"tea", ["tea"], "tea\x00"]


@pytest.mark.parametrize("query", BAD_QUERIES, ids=repr)
def test_mmr_raises_invalid_query_on_bad_queries_fake_embedder(vs, query) -> None:
    with pytest.raises(InvalidQuery):
        vs.similarity_search(query, k=2)  # the reference behaviour
    with pytest.raises(InvalidQuery):
        vs.max_marginal_relevance_search(query, k=2, fetch_k=3)
    if query != "tea\x00":  # a NUL is refused by the stores (PostgreSQL), not by a model
        with pytest.raises(InvalidQuery):
            vs.embeddings.embed_query(query)


_ANY_QUERY = st.one_of(
    st.none(),
    st.integers(),
    st.floats(allow_nan=True),
    st.booleans(),
    st.binary(max_size=8),
    st.text(max_size=20),
    st.text(alphabet=st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF), min_size=1),
    st.lists(st.text(max_size=3), max_size=2),
)


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(query=_ANY_QUERY)
@example(query=None)
@example(query=7)
@example(query="\ud800")
def test_mmr_fuzz_fails_only_as_similarity_search_does_fake_embedder(vs, query) -> None:
    try:
        vs.similarity_search(query, k=2)
        plain_refused = False
    except InvalidQuery:
        plain_refused = True
    try:
        docs = vs.max_marginal_relevance_search(query, k=2, fetch_k=3)
    except InvalidQuery as exc:
        assert plain_refused, f"MMR refused what similarity_search took: {exc}"
        assert exc.hint
    else:
        assert not plain_refused, "MMR took what similarity_search refused"
        assert len(docs) <= 2
