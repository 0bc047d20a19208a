"""The LlamaIndex vector store, in the style of llama-index's own vector store tests, on every
store: index nodes, ask through a retriever, filter by metadata, delete by ref_doc_id.

Embeddings are semsearch's deterministic fake (through ``SemsearchEmbedding``); no LLM is
called. Expected ids are worked out from the node table below.

    node  ref_doc  text                                      topic    year  tags
    n1    doc-a    tomatoes need deep watering ...           garden   2020  veg, summer
    n2    doc-a    prune roses in early spring               garden   2021  flowers
    n3    doc-b    the kettle boils water for tea            kitchen  2022  drinks
    n4    doc-c    bake bread with flour water and yeast     kitchen  2023  (none)
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from llama_index.core import StorageContext, VectorStoreIndex
from llama_index.core.schema import NodeRelationship, RelatedNodeInfo, TextNode
from llama_index.core.vector_stores.types import (
    FilterCondition,
    FilterOperator,
    MetadataFilter,
    MetadataFilters,
    VectorStoreQuery,
    VectorStoreQueryMode,
)

from semsearch.embedders.fake import FakeEmbedder
from semsearch.errors import InvalidFilter, InvalidQuery
from semsearch.integrations.llamaindex import SemsearchEmbedding, SemsearchVectorStore
from tests.contract.conftest import StoreUnderTest
from tests.contract.helpers import as_stored

ROWS = [
    ("n1", "doc-a", "tomatoes need deep watering twice a week", "garden", 2020, ["veg", "summer"]),
    ("n2", "doc-a", "prune roses in early spring", "garden", 2021, ["flowers"]),
    ("n3", "doc-b", "the kettle boils water for tea", "kitchen", 2022, ["drinks"]),
    ("n4", "doc-c", "bake bread with flour water and yeast", "kitchen", 2023, []),
]
FIELDS = {"topic": "str", "year": "int", "tags": "list[str]"}


def _nodes() -> list[TextNode]:
    return [
        TextNode(
            id_=node_id,
            text=text,
            metadata={"topic": topic, "year": year, "tags": tags},
            relationships={NodeRelationship.SOURCE: RelatedNodeInfo(node_id=ref)},
        )
        for node_id, ref, text, topic, year, tags in ROWS
    ]


@pytest.fixture
def vector_store(store: StoreUnderTest) -> Iterator[SemsearchVectorStore]:
    vs = SemsearchVectorStore.open(store.location, "li", embedder=FakeEmbedder(32), fields=FIELDS)
    yield vs
    vs.close()


@pytest.fixture
def index(vector_store: SemsearchVectorStore) -> VectorStoreIndex:
    return VectorStoreIndex(
        _nodes(),
        storage_context=StorageContext.from_defaults(vector_store=vector_store),
        embed_model=SemsearchEmbedding(vector_store.collection),
    )


def _ids(index: VectorStoreIndex, question: str, **kwargs) -> list[str]:
    return [n.node.node_id for n in index.as_retriever(**kwargs).retrieve(question)]


def test_retriever_returns_nodes_with_text_metadata_and_cosine_scores(index, store) -> None:
    emb = FakeEmbedder(32)
    docs = as_stored(store.backend, emb.embed_documents([r[2] for r in ROWS]))
    expected = docs @ emb.embed_query("watering tomatoes")
    best = max(range(4), key=lambda i: expected[i])
    hits = index.as_retriever(similarity_top_k=1).retrieve("watering tomatoes")
    assert [h.node.node_id for h in hits] == [ROWS[best][0]] == ["n1"]
    node = hits[0].node
    assert node.get_content() == ROWS[0][2]
    assert node.metadata == {"topic": "garden", "year": 2020, "tags": ["veg", "summer"]}
    assert node.ref_doc_id == "doc-a"
    assert hits[0].score == pytest.approx(float(expected[best]), abs=1e-5)


@pytest.mark.parametrize(
    ("filters", "expected"),
    [
        (MetadataFilters(filters=[MetadataFilter(key="topic", value="kitchen")]), {"n3", "n4"}),
        (
            MetadataFilters(filters=[MetadataFilter(key="year", value=2021, operator=FilterOperator.GT)]),
            {"n3", "n4"},
        ),
        (
            MetadataFilters(
                filters=[
                    MetadataFilter(key="topic", value="garden"),
                    MetadataFilter(key="year", value=2020, operator=FilterOperator.NE),
                ]
            ),
            {"n2"},
        ),
        (
            MetadataFilters(
                filters=[
                    MetadataFilter(key="year", value=2020),
                    MetadataFilter(key="year", value=2023),
                ],
                condition=FilterCondition.OR,
            ),
            {"n1", "n4"},
        ),
        (
            MetadataFilters(filters=[MetadataFilter(key="topic", value="garden")], condition=FilterCondition.NOT),
            {"n3", "n4"},
        ),
        (
            MetadataFilters(filters=[MetadataFilter(key="year", value=[2021, 2022], operator=FilterOperator.IN)]),
            {"n2", "n3"},
        ),
        (
            MetadataFilters(filters=[MetadataFilter(key="tags", value=["flowers", "drinks"], operator=FilterOperator.ANY)]),
            {"n2", "n3"},
        ),
        (
            MetadataFilters(filters=[MetadataFilter(key="tags", value=["veg", "summer"], operator=FilterOperator.ALL)]),
            {"n1"},
        ),
    ],
)  # fmt: skip
def test_metadata_filters_apply_before_ranking(index, filters, expected) -> None:
    assert set(_ids(index, "water", similarity_top_k=4, filters=filters)) == expected


def test_delete_by_ref_doc_id_removes_every_node_of_that_document(index, vector_store) -> None:
    assert set(_ids(index, "garden roses tomatoes", similarity_top_k=4)) == {"n1", "n2", "n3", "n4"}
    vector_store.delete("doc-a")
    assert set(_ids(index, "garden roses tomatoes", similarity_top_k=4)) == {"n3", "n4"}
    assert vector_store.collection.ids() == ["n3", "n4"]


def test_hybrid_and_text_search_query_modes(index) -> None:
    assert _ids(index, "kettle", similarity_top_k=4, vector_store_query_mode="text_search") == [
        "n3"
    ]
    hybrid = _ids(index, "kettle tea", similarity_top_k=2, vector_store_query_mode="hybrid")
    assert hybrid[0] == "n3"


def test_query_by_embedding_and_doc_ids(vector_store, store) -> None:
    vector_store.add(_nodes())
    query = FakeEmbedder(32).embed_query(ROWS[2][2])
    vector = query.tolist()
    result = vector_store.query(VectorStoreQuery(query_embedding=vector, similarity_top_k=1))
    itself = min(1.0, float(as_stored(store.backend, query[None])[0] @ query))
    assert result.ids == ["n3"] and result.similarities == [pytest.approx(itself, abs=1e-5)]
    scoped = vector_store.query(
        VectorStoreQuery(query_str="water", similarity_top_k=4, doc_ids=["doc-b", "doc-c"])
    )
    assert set(scoped.ids or []) == {"n3", "n4"}


def test_unsupported_modes_and_operators_raise_with_a_hint(vector_store) -> None:
    vector_store.add(_nodes())
    with pytest.raises(InvalidQuery):
        vector_store.query(VectorStoreQuery(query_str="x", mode=VectorStoreQueryMode.MMR))
    for name in ("mmr", "no-such-mode"):  # a string mode, as the enum, or refused when unknown
        with pytest.raises(InvalidQuery):
            vector_store.query(VectorStoreQuery(query_str="x", mode=name))
    text_match = MetadataFilter(key="topic", value="gar", operator=FilterOperator.TEXT_MATCH)
    with pytest.raises(InvalidFilter):
        vector_store.query(
            VectorStoreQuery(query_str="x", filters=MetadataFilters(filters=[text_match]))
        )
    assert vector_store.collection.count() == 4


def test_get_nodes_delete_nodes_and_clear(vector_store) -> None:
    vector_store.add(_nodes())
    kitchen = MetadataFilters(filters=[MetadataFilter(key="topic", value="kitchen")])
    assert [n.node_id for n in vector_store.get_nodes(filters=kitchen)] == ["n3", "n4"]
    assert [n.node_id for n in vector_store.get_nodes(["n4", "n1"])] == ["n4", "n1"]
    vector_store.delete_nodes(node_ids=["n1"])
    vector_store.delete_nodes(filters=kitchen)
    assert vector_store.collection.ids() == ["n2"]
    vector_store.clear()
    assert vector_store.collection.count() == 0


def test_an_index_reopened_from_the_store_answers_without_a_docstore(store, index) -> None:
    reopened = SemsearchVectorStore.open(store.location, "li", embedder=FakeEmbedder(32))
    try:
        again = VectorStoreIndex.from_vector_store(
            reopened, embed_model=SemsearchEmbedding(reopened.collection)
        )
        assert _ids(again, "kettle boils water for tea", similarity_top_k=1) == ["n3"]
    finally:
        reopened.close()


# -- issue 46, item 6: bad queries raise InvalidQuery, never a raw Python error ----------------

BAD_QUERIES = [None, 3, 2.5, "\ud800", "tea \udfff pot", b"tea", ["tea"], "tea\x00"]


@pytest.fixture
def sqlite_store(tmp_path) -> Iterator[SemsearchVectorStore]:
    vs = SemsearchVectorStore.open(
        str(tmp_path / "li.embed.db"), "li", embedder=FakeEmbedder(32), fields=FIELDS
    )
    vs.add(_nodes())
    yield vs
    vs.close()


@pytest.mark.parametrize("query", BAD_QUERIES, ids=repr)
def test_bad_query_text_raises_invalid_query_fake_embedder(sqlite_store, query) -> None:
    for mode in ("default", "hybrid", "text_search"):
        with pytest.raises(InvalidQuery):
            sqlite_store.query(VectorStoreQuery(query_str=query, similarity_top_k=2, mode=mode))
    if query != "tea\x00":  # a NUL is refused by the stores (PostgreSQL), not by a model
        with pytest.raises(InvalidQuery):
            SemsearchEmbedding(sqlite_store.collection).get_query_embedding(query)


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    query=st.one_of(
        st.none(),
        st.integers(),
        st.floats(allow_nan=True),
        st.binary(max_size=8),
        st.text(max_size=20),
        st.text(alphabet=st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF), min_size=1),
    ),
    mode=st.sampled_from(["default", "hybrid", "text_search", "sparse"]),
)
@example(query=None, mode="default")
@example(query=7, mode="default")
@example(query="\ud800", mode="default")
def test_query_fuzz_raises_only_invalid_query_fake_embedder(sqlite_store, query, mode) -> None:
    try:
        result = sqlite_store.query(
            VectorStoreQuery(query_str=query, similarity_top_k=2, mode=mode)
        )
    except InvalidQuery as exc:
        assert exc.hint
    else:
        assert len(result.ids or []) <= 2
    try:
        vector = SemsearchEmbedding(sqlite_store.collection).get_query_embedding(query)
    except InvalidQuery as exc:
        assert exc.hint
    else:
        assert len(vector) == 32
