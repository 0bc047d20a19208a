"""Semantic search by a query vector the caller already has (LangChain's
``similarity_search_by_vector``, LlamaIndex's ``query_embedding``).

The vector must come from the collection's own model: semsearch cannot check that, only its
dimension. It is unit-normalised here, so scores are cosine similarities as in
:meth:`semsearch.Collection.search`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any, Literal

import numpy as np
from numpy.typing import NDArray

from semsearch.collection_parts import CollectionParts
from semsearch.errors import DimensionMismatch, InvalidQuery
from semsearch.filters import parse_filter
from semsearch.long_query import QueryVector
from semsearch.results import SearchResult
from semsearch.search import (
    DEFAULT_MIN_SCORE,
    PathScope,
    SearchRequest,
    health_check,
    resolve_min_score,
    run_search,
    validate_request,
)

__all__ = ["as_query_vector", "search_by_vector"]


def as_query_vector(vector: object, dim: int | None) -> NDArray[np.float32]:
    """``vector`` as a unit-normalised float32[dim].

    Args:
        vector: a sequence of numbers or a 1-d numpy array.
        dim: the stored vectors' dimension, or None when the collection has none yet.
    Raises:
        InvalidQuery: not a 1-d sequence of finite numbers, or a zero vector.
        DimensionMismatch: its length differs from ``dim``.
    """
    try:
        array = np.asarray(vector, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise InvalidQuery(
            f"a query vector must be a list of numbers, got {type(vector).__name__}",
            hint="pass the vector the collection's embedder made, e.g. embedder.embed_query(text)",
        ) from exc
    if array.ndim != 1 or array.size == 0 or not np.isfinite(array).all():
        raise InvalidQuery(
            f"a query vector must be a flat list of finite numbers, got shape {array.shape}",
            hint="pass one vector, e.g. embedder.embed_query(text)",
        )
    if dim is not None and array.size != dim:
        raise DimensionMismatch(
            f"the query vector has {array.size} dimensions; the collection holds {dim}-d vectors",
            hint="embed the query with the collection's own model",
        )
    norm = float(np.linalg.norm(array))
    if norm < 1e-12:
        raise InvalidQuery("the query vector is zero (no direction)", hint="pass a non-zero vector")
    return (array / norm).astype(np.float32)


def search_by_vector(
    coll: CollectionParts,
    vector: Sequence[float] | NDArray[np.floating],
    *,
    limit: int = 10,
    min_score: float | Literal["default"] | None = "default",
    where: Mapping[str, Any] | None = None,
    folder: str | None = None,
    exclude: Sequence[str] = (),
    include: Sequence[str] = (),
    exact: bool = False,
) -> SearchResult:
    """Semantic search with a given query vector; see :meth:`semsearch.Collection.search_by_vector`.

    Returns:
        A semantic SearchResult (``query`` is ``""``; scores are cosine similarities in [-1, 1]).
    """
    validate_request(
        "", "semantic", limit, min_score, folder=folder, exclude=exclude, include=include,
        exact=exact,
    )  # fmt: skip
    info = coll.store.get_collection(coll.name)
    query = as_query_vector(vector, info.dim if info is not None else coll.info.dim)
    ast = parse_filter(where, coll.schema)
    health_check(coll, "semantic", None)
    threshold, note = resolve_min_score(min_score, "semantic", coll.embedder)
    scope = PathScope(folder, tuple(exclude), tuple(include))
    request = SearchRequest(
        "", "semantic", limit, threshold, scope, ast, None, None, exact,
        floor=min_score == DEFAULT_MIN_SCORE,
    )  # fmt: skip
    result = run_search(coll, request, QueryVector(query, 1, 0))
    notes = result.notes + ((note,) if note else ())
    return dataclasses.replace(result, min_score=threshold, query_windows=0, notes=notes)
