"""The Milvus store: Milvus Lite (a local data folder) or any Milvus server, through pymilvus.

What lives here, by job: ``store.py`` (:class:`MilvusStore`, the Store protocol), ``conn.py``
(opening Milvus and translating its errors), ``layout.py`` (collection names, schemas, index
parameters), ``expr.py`` (the ``where`` AST compiled to a Milvus expression, values escaped),
``access.py`` and ``state.py`` (the client, loaded collections and what one process shares),
``query.py`` (vector search with an exact fallback, BM25, find), ``writes.py``, ``columns.py``
and ``lookup.py`` (the write path), ``pending.py``, ``terms.py`` (keyword terms) and
``windows.py`` (sentence windows).

Who may import it: ``semsearch.database``. Nothing here imports another backend or the engine.
"""
