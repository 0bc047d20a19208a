"""SEMSEARCH_* environment settings. Read only by the CLI and servers; the library takes arguments."""

from __future__ import annotations

__all__ = [
    "DEFAULT_COLLECTION",
    "DEFAULT_INDEX",
    "ENV_COLLECTION",
    "ENV_INDEX",
    "ENV_MODEL",
    "ENV_RERANKER",
    "ENV_RERANK_TOP_N",
]

#: Index file used when neither --index nor SEMSEARCH_INDEX is given.
DEFAULT_INDEX = "semsearch.embed.db"
#: Collection used when neither --collection nor SEMSEARCH_COLLECTION is given.
DEFAULT_COLLECTION = "notes"

ENV_INDEX = "SEMSEARCH_INDEX"
ENV_MODEL = "SEMSEARCH_MODEL"
ENV_COLLECTION = "SEMSEARCH_COLLECTION"
#: Reranker spec (``local:<folder>``, ``cohere:<model>``, ...) used by search and the servers.
ENV_RERANKER = "SEMSEARCH_RERANKER"
#: Hits rescored by the reranker (default 50).
ENV_RERANK_TOP_N = "SEMSEARCH_RERANK_TOP_N"
