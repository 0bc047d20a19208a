"""A filter as the derived caches take it: a hashable name and the rowids of passing records.

Both caches of the SQLite file apply a ``where`` filter as a mask over their rows before ranking:
the vector cache (ann/filter.py) and the keyword sidecar (bm25/snapshot.py). Each keeps one
mask per filter and snapshot, so the filter is named by its compiled SQL and parameters, and the
records passing it are read only when a cache has no mask for that name yet.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable

import numpy as np
from numpy.typing import NDArray

from semsearch.filters import Filter
from semsearch.stores.sqlite.sql import Rows, compile_filter

__all__ = ["Allowed", "filter_key"]

#: A filter's cache name and the function giving the rowids (int64[m]) of the records passing it.
Allowed = tuple[Hashable, Callable[[], NDArray[np.int64]]]


def filter_key(rows: Rows, cid: int, where: Filter) -> Allowed:
    """(a hashable name of the filter, a function returning the rowids of passing records).

    The name is the compiled SQL with its parameters, so equal filters share one cached
    allowed set per snapshot (ann/filter.py); unhashable parameters get a unique name.
    ``rows`` reads the snapshot the caller searches.
    """
    sql, params = compile_filter(where)

    def rowids() -> NDArray[np.int64]:
        found = rows(
            f"SELECT r.rowid FROM records r WHERE r.collection_id = ? AND ({sql})",
            (cid, *params),
        )
        return np.fromiter((r[0] for r in found), dtype=np.int64, count=len(found))

    key: Hashable = (sql, tuple(params))
    try:
        hash(key)
    except TypeError:
        key = object()
    return key, rowids
