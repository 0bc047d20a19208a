"""A LangChain ``VectorStore`` over any semsearch collection, on any store.

    from semsearch.integrations.langchain import SemsearchVectorStore

    store = SemsearchVectorStore.open("notes.embed.db", "notes", fields={"source": "str"})
    store.add_texts(["Water tomatoes twice a week"], [{"source": "garden.md"}])
    store.similarity_search_with_score("how often to water?", k=3, where={"source": "garden.md"})

Needs ``pip install 'semsearch[langchain]'`` (``langchain-core``). Documents become records by
the rule of :mod:`semsearch.integrations.metadata`. Scores are semsearch's own: cosine similarity
in [-1, 1] in semantic mode (the default), BM25 in keyword mode, the fused score in [0, 1] in
hybrid mode (:data:`semsearch.search.HYBRID_FUSION`). LangChain's relevance scores
(``similarity_search_with_relevance_scores``, the ``similarity_score_threshold`` retriever) lie
in [0, 1] as its contract says: (1 + cosine) / 2 in semantic mode, the fused or reranked score as
it is; keyword mode has none (BM25 is unbounded). Searches return the top ``k`` without a
threshold unless ``min_score`` is given, as LangChain expects. ``page_content`` is the record's
whole text, even when semsearch chunked it and ranked it by its best chunk. See
docs/integrations/langchain.md.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import numpy as np
from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings
from langchain_core.vectorstores import VectorStore, VectorStoreRetriever
from langchain_core.vectorstores.utils import maximal_marginal_relevance

import semsearch
from semsearch.collection import Collection
from semsearch.embedders.base import Embedder
from semsearch.errors import InvalidFilter, InvalidQuery, InvalidRecord
from semsearch.integrations.langchain_embeddings import (
    LangChainEmbedder,
    SemsearchEmbeddings,
    as_embedder,
)
from semsearch.integrations.metadata import MetadataRule, check_writable, connect_collection
from semsearch.integrations.relevance import check_relevance_mode, cosine_relevance, relevance_fn
from semsearch.long_query import embed_query_windows
from semsearch.results import SearchResult
from semsearch.search import MODES
from semsearch.validation import check_text

__all__ = ["LangChainEmbedder", "SemsearchEmbeddings", "SemsearchVectorStore"]

log = logging.getLogger(__name__)


class SemsearchVectorStore(VectorStore):
    """A LangChain ``VectorStore`` backed by a semsearch :class:`~semsearch.Collection`.

    Args:
        collection: an open collection; it embeds with its own embedder.
        mode: the default search mode: ``"semantic"``, ``"keyword"`` or ``"hybrid"``; each
            search may pass ``mode=`` too.
        metadata_key: where metadata lives in a record (see
            :class:`semsearch.integrations.metadata.MetadataRule`); None for top-level fields.
    Raises:
        InvalidQuery: an unknown mode.
    """

    def __init__(
        self,
        collection: Collection,
        *,
        mode: str = "semantic",
        metadata_key: str | None = "metadata",
    ) -> None:
        self.collection = collection
        self.mode = _check_mode(mode)
        self.rule = MetadataRule(metadata_key)
        self._owned: semsearch.Database | None = None  # the Database :meth:`open` opened

    @classmethod
    def open(
        cls,
        location: str,
        collection_name: str = "langchain",
        *,
        embedding: Embeddings | Embedder | str | None = None,
        model_id: str | None = None,
        fields: Mapping[str, str] | None = None,
        mode: str = "semantic",
        metadata_key: str | None = "metadata",
    ) -> SemsearchVectorStore:
        """Open (or create) ``collection_name`` at ``location`` (as :func:`semsearch.connect`).

        Args:
            embedding: a LangChain ``Embeddings`` (wrapped as :class:`LangChainEmbedder` with
                ``model_id``), a semsearch embedder or spec string, or None for the
                collection's stored model (the packaged all-MiniLM-L6-v2 for a new one).
            fields: metadata keys to declare as filterable fields, ``{"name": "type"}``.
        Raises:
            ModelMismatch: ``embedding`` is another model than the collection was built with.
            BackendUnavailable / NotAnIndex: as :func:`semsearch.connect`.
        """
        wanted = MetadataRule(metadata_key).schema(fields)
        db, coll = connect_collection(
            location, collection_name, wanted, as_embedder(embedding, model_id)
        )
        store = cls(coll, mode=mode, metadata_key=metadata_key)
        store._owned = db
        return store

    def close(self) -> None:
        """Close the Database that :meth:`open` opened (a collection given is left open)."""
        if self._owned is not None:
            self._owned.close()

    @classmethod
    def from_texts(
        cls,
        texts: list[str],
        embedding: Embeddings | None = None,
        metadatas: list[dict[Any, Any]] | None = None,
        *,
        ids: list[str] | None = None,
        location: str = ":memory:",
        collection_name: str = "langchain",
        **kwargs: Any,
    ) -> SemsearchVectorStore:
        """A store at ``location`` (default in memory) filled with ``texts``; other keyword
        arguments as :meth:`open`. ``embedding=None`` uses the collection's model."""
        store = cls.open(location, collection_name, embedding=embedding, **kwargs)
        store.add_texts(texts, metadatas, ids=ids)
        return store

    @property
    def embeddings(self) -> Embeddings:
        """The collection's embedder as LangChain ``Embeddings`` (the object given, if any)."""
        embedder = self.collection.embedder
        if isinstance(embedder, LangChainEmbedder):
            return embedder.embeddings
        return SemsearchEmbeddings(embedder)

    # -- writes ----------------------------------------------------------------------------

    def add_texts(
        self,
        texts: Iterable[str],
        metadatas: list[dict[Any, Any]] | None = None,
        *,
        ids: list[str] | None = None,
        **kwargs: Any,
    ) -> list[str]:
        """Upsert texts by id (a new uuid4 hex for each missing id) and embed them.

        Returns:
            The ids, in input order.
        Raises:
            InvalidRecord: ``metadatas`` or ``ids`` of another length than ``texts``, a bad
                metadata value (nothing is written), or a collection whose text template does
                not read ``text``.
        """
        texts = list(texts)
        none: list[None] = [None] * len(texts)
        metas: Sequence[Mapping[str, Any] | None] = metadatas if metadatas is not None else none
        given: Sequence[str | None] = ids if ids is not None else none
        if len(metas) != len(texts) or len(given) != len(texts):
            raise InvalidRecord(
                f"{len(texts)} texts, {len(metas)} metadatas and {len(given)} ids",
                hint="give one metadata dict and one id (or None) per text",
            )
        check_writable(self.collection.schema, self.collection.name)
        out = [str(i) if i is not None and str(i) else uuid.uuid4().hex for i in given]
        records = [self.rule.to_record(i, t, m) for i, t, m in zip(out, texts, metas, strict=True)]
        report = self.collection.upsert(records)
        if report.errors:  # stored and keyword-searchable; semantic search finds them later
            log.warning("embedding deferred (run collection.reindex()): %s", report.errors[-1])
        return out

    def delete(self, ids: list[str] | None = None, **kwargs: Any) -> bool | None:
        """Delete records by id (missing ids are ignored), or every record matching ``where=``.

        Returns:
            True.
        Raises:
            InvalidQuery: neither ``ids`` nor ``where`` given: deleting everything is
                ``Database.drop_collection``, never a default.
        """
        where = _where(kwargs)
        if ids is None and where is None:
            raise InvalidQuery(
                "delete needs ids or a where filter",
                hint="to delete every record, drop the collection: db.drop_collection(name)",
            )
        if ids:
            self.collection.delete([str(i) for i in ids])
        if where is not None:
            self.collection.delete_where(where)
        return True

    # -- reads -----------------------------------------------------------------------------

    def get_by_ids(self, ids: Sequence[str], /) -> list[Document]:
        """The documents among ``ids`` that exist, in the order asked."""
        return [
            Document(page_content=r.text, metadata=self.rule.from_fields(r.fields), id=r.id)
            for r in self.collection.get([str(i) for i in ids])
        ]

    def similarity_search(self, query: str, k: int = 4, **kwargs: Any) -> list[Document]:
        """The ``k`` best documents for ``query``; keyword arguments as
        :meth:`similarity_search_with_score`."""
        return [doc for doc, _ in self.similarity_search_with_score(query, k, **kwargs)]

    def similarity_search_with_score(
        self, query: str, k: int = 4, **kwargs: Any
    ) -> list[tuple[Document, float]]:
        """The ``k`` best documents with their scores.

        Keyword arguments: ``where`` (or ``filter``, the same language), ``mode``
        (semantic/keyword/hybrid; default the store's), ``min_score`` (semantic: cosine
        threshold; default None, no threshold), and any other :meth:`Collection.search`
        argument (``folder``, ``exclude``, ``hypothetical_answer``...).

        Returns:
            ``(Document, score)`` pairs, best first: cosine similarity in [-1, 1] (semantic),
            BM25 >= 0 (keyword) or the fused score in [0, 1] (hybrid).
        Raises:
            InvalidFilter, InvalidQuery: as :meth:`Collection.search`.
        """
        return self._scored(self._search(query, k, kwargs))

    def _search(self, query: str, k: int, kwargs: Mapping[str, Any]) -> SearchResult:
        options = dict(kwargs)
        where = _where(options)
        mode = _check_mode(options.pop("mode", self.mode))
        options.setdefault("min_score", None)
        return self.collection.search(query, mode=mode, limit=k, where=where, **options)

    def _similarity_search_with_relevance_scores(
        self, query: str, k: int = 4, **kwargs: Any
    ) -> list[tuple[Document, float]]:
        """The ``k`` best documents with LangChain relevance scores in [0, 1] (1 most similar).

        Semantic mode: (1 + cosine similarity) / 2, so cosine -1 -> 0, 0 -> 0.5, 1 -> 1.
        Hybrid mode: the fused score, already in [0, 1]. Reranked searches (``rerank=``): the
        reranker's score in [0, 1]. An empty query lists records unranked: relevance 0
        (:mod:`semsearch.integrations.relevance`).
        Keyword arguments as :meth:`similarity_search_with_score`; LangChain's public
        ``similarity_search_with_relevance_scores`` calls this and applies ``score_threshold``.

        Raises:
            InvalidQuery: keyword mode without a reranker (BM25 has no [0, 1] scale), or as
                :meth:`similarity_search_with_score`.
        """
        check_relevance_mode(kwargs.get("mode", self.mode), kwargs.get("rerank"))
        result = self._search(query, k, kwargs)
        relevance = relevance_fn(result)
        return [(doc, relevance(score)) for doc, score in self._scored(result)]

    async def _asimilarity_search_with_relevance_scores(
        self, query: str, k: int = 4, **kwargs: Any
    ) -> list[tuple[Document, float]]:
        """As :meth:`_similarity_search_with_relevance_scores`, in a worker thread."""
        import asyncio

        return await asyncio.to_thread(
            self._similarity_search_with_relevance_scores, query, k, **kwargs
        )

    def similarity_search_by_vector(
        self, embedding: list[float], k: int = 4, **kwargs: Any
    ) -> list[Document]:
        """The ``k`` documents nearest to ``embedding`` (made by the collection's model).

        Keyword arguments: ``where``/``filter``, ``min_score`` (default None), ``exact``.
        Raises:
            DimensionMismatch: another dimension than the stored vectors'.
        """
        return [doc for doc, _ in self._scored(self._by_vector(embedding, k, kwargs))]

    def _by_vector(
        self, embedding: Sequence[float], k: int, kwargs: Mapping[str, Any]
    ) -> SearchResult:
        options = dict(kwargs)
        where = _where(options)
        options.setdefault("min_score", None)
        return self.collection.search_by_vector(embedding, limit=k, where=where, **options)

    def max_marginal_relevance_search(
        self,
        query: str,
        k: int = 4,
        fetch_k: int = 20,
        lambda_mult: float = 0.5,
        **kwargs: Any,
    ) -> list[Document]:
        """Maximal marginal relevance (Carbonell & Goldstein 1998): ``fetch_k`` semantic
        candidates, of which ``k`` are chosen balancing similarity to the query against
        similarity to those already chosen (``lambda_mult`` 1: similarity only, 0: diversity
        only). The query is embedded as :meth:`Collection.search` embeds it (in windows when
        longer than the model's). Keyword arguments: ``where``/``filter``.

        Raises:
            InvalidQuery: ``query`` is not a str, is not valid Unicode (a lone surrogate) or
                holds a NUL, as :meth:`similarity_search` refuses it.
            EmbedderUnavailable: the embedder fails.
        """
        check_text("query", query, no_nul=True)
        vector = embed_query_windows(self.collection.embedder, query).vector
        return self.max_marginal_relevance_search_by_vector(
            [float(x) for x in vector], k, fetch_k, lambda_mult, **kwargs
        )

    def max_marginal_relevance_search_by_vector(
        self,
        embedding: list[float],
        k: int = 4,
        fetch_k: int = 20,
        lambda_mult: float = 0.5,
        **kwargs: Any,
    ) -> list[Document]:
        """As :meth:`max_marginal_relevance_search`, from a query vector. Each candidate is
        represented by the stored vector of its best chunk."""
        result = self._by_vector(embedding, max(k, fetch_k), kwargs)
        docs = {doc.id or "": doc for doc, _ in self._scored(result)}
        stored = self.collection.vectors(list(docs))
        usable: list[tuple[Document, Any]] = [
            (docs[h.id], stored[h.id][h.chunk.ordinal])
            for h in result
            if h.id in docs and h.id in stored and h.chunk is not None
            and stored[h.id][h.chunk.ordinal] is not None
        ]  # fmt: skip
        if not usable:
            return []
        chosen = maximal_marginal_relevance(
            np.asarray(embedding, dtype=np.float32),
            [row for _, row in usable],
            lambda_mult=lambda_mult,
            k=min(k, len(usable)),
        )
        return [usable[c][0] for c in chosen]

    def as_retriever(self, mode: str | None = None, **kwargs: Any) -> VectorStoreRetriever:
        """A LangChain retriever; ``mode`` (semantic, keyword or hybrid) becomes a search
        argument, next to LangChain's ``search_type`` and ``search_kwargs``.

        Raises:
            InvalidQuery: an unknown mode.
        """
        if mode is not None:
            search_kwargs = dict(kwargs.pop("search_kwargs", None) or {})
            search_kwargs["mode"] = _check_mode(mode)
            kwargs["search_kwargs"] = search_kwargs
        return super().as_retriever(**kwargs)

    def _select_relevance_score_fn(self) -> Callable[[float], float]:
        """Semantic mode's relevance: cosine similarity in [-1, 1] -> (1 + cos) / 2 in [0, 1].
        (:meth:`_similarity_search_with_relevance_scores` picks the rule by each result's mode.)"""
        return cosine_relevance

    def _scored(self, result: SearchResult) -> list[tuple[Document, float]]:
        """Documents with the records' whole text (one ``get``), and each hit's score."""
        records = {r.id: r for r in self.collection.get(result.ids)} if result.hits else {}
        out = []
        for hit in result:
            record = records.get(hit.id)
            if record is None:  # deleted between the search and the read
                continue
            meta = self.rule.from_fields(record.fields)
            out.append((Document(page_content=record.text, metadata=meta, id=hit.id), hit.score))
        return out


def _check_mode(mode: object) -> str:
    if mode not in MODES:
        raise InvalidQuery(f"unknown search mode {mode!r}", hint=f"use one of: {', '.join(MODES)}")
    return str(mode)


def _where(options: dict[str, Any]) -> Any:
    """Pop ``where`` or its LangChain name ``filter`` (not both) from ``options``."""
    where, filter_ = options.pop("where", None), options.pop("filter", None)
    if where is not None and filter_ is not None:
        raise InvalidFilter(
            "give where or filter, not both", hint="they are the same filter language"
        )
    return where if where is not None else filter_
