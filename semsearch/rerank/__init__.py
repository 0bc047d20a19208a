"""Reranking: rescore the top N hits of any search with a cross-encoder or a rerank API.

- :mod:`.base`: the :class:`Reranker` protocol, the score check and :func:`resolve_reranker`;
- :mod:`.local`: sentence-transformers ``CrossEncoder`` folders on the ONNX engine;
- :mod:`.api`: the Cohere, Jina and Voyage rerank APIs;
- :mod:`.stage`: :func:`plan_rerank` and :func:`apply_rerank`, called by ``Collection.search``.

Nothing heavy is imported until a reranker first scores a pair. Who may import it: the
collection's search verb, evaluation and the faces; it imports only the foundation and
``semsearch.embedders`` (for the ONNX engine and the API plumbing it shares).
"""

from semsearch.rerank.base import Reranker, resolve_reranker
from semsearch.rerank.stage import DEFAULT_TOP_N, apply_rerank, plan_rerank

__all__ = ["DEFAULT_TOP_N", "Reranker", "apply_rerank", "plan_rerank", "resolve_reranker"]
