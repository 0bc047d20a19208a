"""Listing without ranking: an empty query's records, ordered by id and paged (mode "structured")."""

from __future__ import annotations

from semsearch.collection_parts import CollectionParts
from semsearch.filters import Filter
from semsearch.results import Hit, SearchResult
from semsearch.scope import PathScope, store_filter

__all__ = ["structured_search"]


def structured_search(
    coll: CollectionParts,
    query: str,
    where: Filter | None,
    scope: PathScope,
    limit: int,
    offset: int = 0,
) -> SearchResult:
    """An empty query: the records matching ``where`` and ``scope`` (all when neither is
    given) ordered by id, from the ``offset``-th, at most ``limit``; score 0.0, no chunk."""
    # the path scope goes to the store with the filter; allows() is the safety net
    store_where = store_filter(coll.store, where, scope)
    if scope == PathScope():  # nothing to check here: the store pages (an entity cache's list)
        found = coll.store.find(coll.name, store_where, limit, offset, [])
        listed = [Hit(r.id, 0.0, None, r.fields) for r in found]
        return SearchResult(query, listed, "structured", total_candidates=len(listed))
    hits: list[Hit] = []
    start = 0
    while len(hits) < offset + limit:
        page = coll.store.find(coll.name, store_where, 500, start, [])
        hits += [Hit(r.id, 0.0, None, r.fields) for r in page if scope.allows(r.id)]
        if len(page) < 500:
            break
        start += 500
    chosen = hits[offset : offset + limit]
    return SearchResult(query, chosen, "structured", total_candidates=len(hits))
