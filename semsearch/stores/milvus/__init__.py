"""The Milvus store: Milvus Lite (a local data folder) or any Milvus server, through pymilvus.

What lives here, by job, from the top down (a module imports only modules of its own line or
of the lines below it):

- ``store.py``: :class:`MilvusStore`, the Store protocol; imported by nothing here.
- ``writes.py`` (upsert records and chunks, store vectors and status, delete), ``rebuild.py``
  (added fields: the Milvus collections rebuilt).
- ``batch.py`` (a write's rows held back until their vectors arrive), ``migrate.py`` (layout 1
  to 2 and chunk-part rebuilds, on the write path, kill-safe), ``lookup.py`` (what a write
  replaces and reuses, by primary key), ``rows.py`` (the rows a write stores, built without a
  Milvus call), ``mutate.py`` (row writes and deletes of a part) and ``columns.py``
  (column-wise row writes).
- ``query.py`` (vector search with an exact fallback, BM25, find), ``pending.py`` (chunks
  waiting for a vector, status counts), ``records.py`` (record bodies and content hashes) and
  ``windows.py`` (sentence windows).
- ``access.py``: :class:`MilvusAccess`, the client, loaded collections, metadata rows and
  batched queries; the modules above take it, never the store.
- ``state.py`` (what one process's stores on a location share), ``layout.py`` (collection names,
  schemas, index parameters, Milvus limits), ``expr.py`` (the ``where`` AST compiled to a Milvus
  expression, values escaped), ``conn.py`` (opening Milvus, translating its errors) and
  ``terms.py`` (keyword terms).

Who may import it: ``semsearch.database``. Nothing here imports another backend or the engine.
"""

from semsearch.moved import forward

# The names of the module this package replaced (stores/milvus.py).
__getattr__ = forward(
    __name__,
    {
        "MilvusStore": "semsearch.stores.milvus.store",
        "MAX_TOPK": "semsearch.stores.milvus.layout",
        "EXACT_MAX": "semsearch.stores.milvus.state",
    },
)
