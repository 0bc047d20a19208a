"""Storage backends behind one protocol.

What lives here: ``base.py`` (the :class:`~semsearch.stores.base.Store` protocol and the plain
values that cross it), ``window_blobs.py`` (the sentence-window byte layout that several backends
share), and one package per backend: ``sqlite/`` (the default, one ``.embed.db`` file),
``postgres/`` (PostgreSQL + pgvector) and ``milvus/`` (Milvus Lite or a Milvus server).

Who may import it: the engine (``semsearch.search``, ``semsearch.ingest``, ``semsearch.collection``)
and ``semsearch.database``, which picks a backend from a location string. A backend package never
imports another backend, and nothing in ``stores/`` imports the engine above it.
"""
