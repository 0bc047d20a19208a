"""A LlamaIndex vector store (``BasePydanticVectorStore``) over any semsearch collection.

    from llama_index.core import StorageContext, VectorStoreIndex
    from semsearch.integrations.llamaindex import SemsearchEmbedding, SemsearchVectorStore

    store = SemsearchVectorStore.open("notes.embed.db", "notes", fields={"topic": "str"})
    index = VectorStoreIndex(nodes, storage_context=StorageContext.from_defaults(vector_store=store),
                             embed_model=SemsearchEmbedding(store.collection))
    index.as_retriever(similarity_top_k=3).retrieve("how often to water?")

Needs ``pip install 'semsearch[llamaindex]'`` (``llama-index-core``). The text is stored in our
store (``stores_text=True``) and embedded there with the collection's own model: the store asks
for the query text, not its embedding (``is_embedding_query=False``), and vectors LlamaIndex
computed for the nodes are not used (see docs/integrations/llamaindex.md for the cost). Each node
is the record ``{"id": node_id, "text": ..., "ref_doc_id": ..., "metadata": {...}}`` (the rule of
:mod:`semsearch.integrations.metadata`); ``ref_doc_id`` is a declared field, so
``delete(ref_doc_id)`` is one ``delete_where``. Query modes: DEFAULT (semantic: cosine similarity
in [-1, 1]), HYBRID and SEMANTIC_HYBRID (semsearch hybrid: the fused score of
:data:`semsearch.search.HYBRID_FUSION`, in [0, 1]; ``alpha`` is not used), TEXT_SEARCH and SPARSE (keyword: BM25). Metadata filters become ``where``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.bridge.pydantic import PrivateAttr
from llama_index.core.schema import (
    BaseNode,
    MetadataMode,
    NodeRelationship,
    RelatedNodeInfo,
    TextNode,
)
from llama_index.core.vector_stores.types import (
    BasePydanticVectorStore,
    FilterCondition,
    FilterOperator,
    MetadataFilter,
    MetadataFilters,
    VectorStoreQuery,
    VectorStoreQueryMode,
    VectorStoreQueryResult,
)

import semsearch
from semsearch.collection import Collection
from semsearch.embedders.base import Embedder
from semsearch.errors import InvalidFilter, InvalidQuery, InvalidRecord
from semsearch.integrations.metadata import MetadataRule, check_writable, connect_collection
from semsearch.results import Record, SearchResult
from semsearch.validation import check_text

__all__ = ["SemsearchEmbedding", "SemsearchVectorStore", "to_where"]

#: The declared field holding each node's source document id.
REF_DOC_FIELD = "ref_doc_id"
_MODES = {
    VectorStoreQueryMode.DEFAULT: "semantic",
    VectorStoreQueryMode.HYBRID: "hybrid",
    VectorStoreQueryMode.SEMANTIC_HYBRID: "hybrid",
    VectorStoreQueryMode.TEXT_SEARCH: "keyword",
    VectorStoreQueryMode.SPARSE: "keyword",
}
_MODE_HINT = "modes: default (semantic), hybrid, text_search (keyword)"


def _query_mode(mode: VectorStoreQueryMode | str) -> VectorStoreQueryMode:
    """``mode`` as the enum: LlamaIndex's pydantic model keeps a plain string as given.

    Raises:
        InvalidQuery: a string that names no VectorStoreQueryMode.
    """
    try:
        return VectorStoreQueryMode(mode)
    except ValueError:
        raise InvalidQuery(f"unknown query mode {mode!r}", hint=_MODE_HINT) from None


_COMPARE = {
    FilterOperator.NE: "$ne",
    FilterOperator.GT: "$gt",
    FilterOperator.LT: "$lt",
    FilterOperator.GTE: "$gte",
    FilterOperator.LTE: "$lte",
    FilterOperator.IN: "$in",
    FilterOperator.NIN: "$nin",
    FilterOperator.CONTAINS: "$contains",
}


def to_where(filters: MetadataFilters | None) -> dict[str, Any] | None:
    """LlamaIndex ``MetadataFilters`` as a semsearch ``where`` filter (None for no filter).

    ``==`` is equality, ``!= > < >= <= in nin contains`` map to ``$ne $gt $lt $gte $lte $in
    $nin $contains``, ``any``/``all`` to ``$or``/``$and`` of ``$contains``; conditions AND, OR
    and NOT to ``$and``, ``$or`` and ``$not`` (of their AND). Keys are declared field names.

    Raises:
        InvalidFilter: ``text_match``, ``text_match_insensitive`` or ``is_empty`` (semsearch
            filters compare declared values; use keyword mode for text).
    """
    if filters is None or not filters.filters:
        return None
    parts = [
        _leaf(f) if isinstance(f, MetadataFilter) else to_where(f) or {} for f in filters.filters
    ]
    condition = filters.condition or FilterCondition.AND
    if condition == FilterCondition.OR:
        return {"$or": parts}
    joined = parts[0] if len(parts) == 1 else {"$and": parts}
    return {"$not": joined} if condition == FilterCondition.NOT else joined


def _leaf(f: MetadataFilter) -> dict[str, Any]:
    op = f.operator
    if op == FilterOperator.EQ:
        return {f.key: f.value}
    if op in _COMPARE:
        return {f.key: {_COMPARE[op]: f.value}}
    if op in (FilterOperator.ANY, FilterOperator.ALL) and isinstance(f.value, list):
        each = [{f.key: {"$contains": v}} for v in f.value]
        return {"$or" if op == FilterOperator.ANY else "$and": each}
    raise InvalidFilter(
        f"the LlamaIndex filter operator {op.value!r} has no semsearch equivalent",
        hint="use == != > < >= <= in nin contains any all; for text, query in TEXT_SEARCH mode",
    )


class SemsearchVectorStore(BasePydanticVectorStore):
    """LlamaIndex vector store backed by a semsearch :class:`~semsearch.Collection`.

    Args:
        collection: an open collection (it embeds with its own embedder). Writing needs the
            default text template and a declared ``ref_doc_id`` str field (:meth:`open` makes
            both).
        metadata_key: where node metadata lives in a record (see
            :class:`semsearch.integrations.metadata.MetadataRule`).
    """

    stores_text: bool = True
    is_embedding_query: bool = False
    _collection: Collection = PrivateAttr()
    _rule: MetadataRule = PrivateAttr()
    _owned: semsearch.Database | None = PrivateAttr(default=None)

    def __init__(self, collection: Collection, *, metadata_key: str | None = "metadata") -> None:
        super().__init__(stores_text=True, is_embedding_query=False)
        self._collection = collection
        self._rule = MetadataRule(metadata_key)

    @classmethod
    def open(
        cls,
        location: str,
        collection_name: str = "llamaindex",
        *,
        embedder: str | Embedder | None = None,
        fields: Mapping[str, str] | None = None,
    ) -> SemsearchVectorStore:
        """Open (or create) ``collection_name`` at ``location`` (as :func:`semsearch.connect`),
        declaring ``ref_doc_id`` and the metadata ``fields`` (``{"name": "type"}``).

        Raises:
            ModelMismatch: ``embedder`` is another model than the collection was built with.
        """
        wanted = MetadataRule().schema({**(fields or {}), REF_DOC_FIELD: f"str={REF_DOC_FIELD}"})
        db, coll = connect_collection(location, collection_name, wanted, embedder)
        store = cls(coll)
        store._owned = db
        return store

    @classmethod
    def class_name(cls) -> str:
        return "SemsearchVectorStore"

    @property
    def client(self) -> Collection:
        """The semsearch collection."""
        return self._collection

    @property
    def collection(self) -> Collection:
        """The semsearch collection."""
        return self._collection

    def close(self) -> None:
        """Close the Database that :meth:`open` opened (a collection given is left open)."""
        if self._owned is not None:
            self._owned.close()

    # -- writes ----------------------------------------------------------------------------

    def add(self, nodes: Sequence[BaseNode], **add_kwargs: Any) -> list[str]:
        """Upsert nodes by ``node_id`` (text, ``ref_doc_id``, metadata) and embed their text.

        Returns:
            The node ids, in input order.
        Raises:
            InvalidRecord: a bad metadata value (nothing is written), or a collection whose
                text template does not read ``text``.
        """
        check_writable(self._collection.schema, self._collection.name)
        records = []
        for node in nodes:
            record = self._rule.to_record(
                node.node_id, node.get_content(metadata_mode=MetadataMode.NONE), node.metadata
            )
            if node.ref_doc_id is not None:
                record[REF_DOC_FIELD] = node.ref_doc_id
            records.append(record)
        self._collection.upsert(records)
        return [node.node_id for node in nodes]

    def delete(self, ref_doc_id: str, **delete_kwargs: Any) -> None:
        """Delete every node of the source document ``ref_doc_id``."""
        self._collection.delete_where({REF_DOC_FIELD: ref_doc_id})

    def delete_nodes(
        self,
        node_ids: list[str] | None = None,
        filters: MetadataFilters | None = None,
        **delete_kwargs: Any,
    ) -> None:
        """Delete nodes by id and/or by metadata filter.

        Raises:
            InvalidQuery: neither given (``clear()`` deletes everything).
        """
        where = to_where(filters)
        if node_ids is None and where is None:
            raise InvalidQuery("delete_nodes needs node_ids or filters", hint="clear() deletes all")
        if node_ids:
            self._collection.delete(node_ids)
        if where is not None:
            self._collection.delete_where(where)

    def clear(self) -> None:
        """Delete every node of the collection."""
        self._collection.delete(self._collection.ids())

    # -- reads -----------------------------------------------------------------------------

    def get_nodes(
        self, node_ids: list[str] | None = None, filters: MetadataFilters | None = None
    ) -> list[BaseNode]:
        """Nodes by id (in the order asked) and/or matching ``filters`` (at most 10000)."""
        where = to_where(filters)
        if node_ids is None:
            return [self._node(r) for r in self._collection.find(where, limit=10_000)]
        records = self._collection.get(node_ids)
        if where is not None:
            allowed = {r.id for r in self._collection.find(where, limit=10_000)}
            records = [r for r in records if r.id in allowed]
        return [self._node(r) for r in records]

    def query(self, query: VectorStoreQuery, **kwargs: Any) -> VectorStoreQueryResult:
        """The ``similarity_top_k`` best nodes for ``query_str`` (or ``query_embedding``).

        Returns:
            nodes, similarities (cosine in [-1, 1], BM25 or the fused hybrid score in [0, 1]
            by mode) and ids,
            best first; no threshold (LlamaIndex's ``SimilarityPostprocessor`` cuts).
        Raises:
            InvalidQuery: an unsupported mode (MMR and the learners) or an unknown one (a mode
                may be the enum or its string, e.g. ``"hybrid"``), ``node_ids``, or neither
                text nor embedding.
            InvalidFilter: as :func:`to_where`.
        """
        asked_mode = _query_mode(query.mode)
        mode = _MODES.get(asked_mode)
        if mode is None or query.node_ids:
            asked = "node_ids" if query.node_ids else f"mode {asked_mode.value!r}"
            raise InvalidQuery(
                f"{asked} is not supported by the semsearch vector store",
                hint=f"{_MODE_HINT}; filter with MetadataFilters or doc_ids",
            )
        where = to_where(query.filters)
        if query.doc_ids:
            doc_filter = {REF_DOC_FIELD: {"$in": list(query.doc_ids)}}
            where = doc_filter if where is None else {"$and": [where, doc_filter]}
        k = (
            query.hybrid_top_k
            if mode == "hybrid" and query.hybrid_top_k
            else query.similarity_top_k
        )
        result = self._search(query, mode, k, where)
        records = {r.id: r for r in self._collection.get(result.ids)} if result.hits else {}
        hits = [h for h in result if h.id in records]
        return VectorStoreQueryResult(
            nodes=[self._node(records[h.id]) for h in hits],
            similarities=[h.score for h in hits],
            ids=[h.id for h in hits],
        )

    def _search(
        self, query: VectorStoreQuery, mode: str, k: int, where: dict[str, Any] | None
    ) -> SearchResult:
        if query.query_str:
            return self._collection.search(
                query.query_str, mode=mode, limit=k, where=where, min_score=None
            )
        if mode == "semantic" and query.query_embedding is not None:
            return self._collection.search_by_vector(
                query.query_embedding, limit=k, where=where, min_score=None
            )
        raise InvalidQuery(
            f"a {mode} query needs query_str", hint="pass the question's text as query_str"
        )

    def _node(self, record: Record) -> TextNode:
        node = TextNode(
            id_=record.id, text=record.text, metadata=self._rule.from_fields(record.fields)
        )
        ref = record.fields.get(REF_DOC_FIELD)
        if isinstance(ref, str):
            node.relationships[NodeRelationship.SOURCE] = RelatedNodeInfo(node_id=ref)
        return node


class SemsearchEmbedding(BaseEmbedding):
    """A semsearch embedder as a LlamaIndex embed model (unit-normalised float lists), so that
    LlamaIndex's own embedding steps use the collection's model.

    Args:
        source: a Collection (its embedder is used) or a semsearch embedder.
    """

    _embedder: Embedder = PrivateAttr()

    def __init__(self, source: Collection | Embedder, **kwargs: Any) -> None:
        embedder = source.embedder if isinstance(source, Collection) else source
        super().__init__(model_name=embedder.model_id, **kwargs)
        self._embedder = embedder

    @classmethod
    def class_name(cls) -> str:
        return "SemsearchEmbedding"

    def _get_query_embedding(self, query: str) -> list[float]:
        """float[dim], unit-normalised. Raises InvalidQuery for a query that is not a str or
        not valid Unicode (a lone surrogate)."""
        check_text("query", query)
        return [float(x) for x in self._embedder.embed_query(query)]

    def _get_text_embedding(self, text: str) -> list[float]:
        return self._get_text_embeddings([text])[0]

    def _get_text_embeddings(self, texts: list[str]) -> list[list[float]]:
        """float[len(texts)][dim], unit-normalised. Raises InvalidRecord for a text that is not
        a str or not valid Unicode."""
        for i, text in enumerate(texts):
            check_text(f"texts[{i}]", text, InvalidRecord)
        return [[float(x) for x in row] for row in self._embedder.embed_documents(texts)]

    async def _aget_query_embedding(self, query: str) -> list[float]:
        import asyncio

        return await asyncio.to_thread(self._get_query_embedding, query)
