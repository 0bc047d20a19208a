"""The SQLite store's vector cache: exact scans below a threshold, an HNSW graph above it.

What lives here, by job: ``cache.py`` (:class:`~semsearch.ann.cache.AnnIndex`, the cache one
store holds per collection: catching up with the file, scheduling graph upkeep, answering a
search), ``scan.py`` (exact and graph searches over one snapshot), ``upkeep.py`` (building,
merging, compacting and dropping the graph), ``grower.py`` (the first graph, grown in a
background thread while the collection is written), ``rows.py`` (the cache's rows, read from a
``.embed.db`` file), ``graph.py`` (thin faiss HNSW wrappers), ``file.py`` (the ``.ann`` sidecar
on disk), ``horizon.py`` (how far the change log may be pruned without stranding a cache),
``filter.py`` (allowed sets per filter and snapshot), ``policy.py`` (HNSW parameters,
exact-or-graph, and ``configure_ann``) and ``exact.py`` (exact top-k over a float32 matrix;
Milvus's exact fallback uses it too).

Everything here is a derived cache: the ``.embed.db`` file stays the source of truth, and a
cache is checked against the file's change counter before use (docs/ann.md). Who may import it:
the stores (``semsearch.stores.sqlite`` builds and queries it; ``semsearch.stores.milvus`` uses
``exact``). It reads the SQLite file's layout modules (``stores/sqlite/changes.py``,
``vector_blobs.py``, ``allowed.py``) and never the store class, :mod:`semsearch.bm25` or the
engine above.
"""

#: The logger of the whole ANN cache. It keeps the name docs/ann.md gives it from before the cache
#: moved out of ``semsearch/stores/``, so that log filters users set up keep working.
LOGGER = "semsearch.stores.ann"
