"""Storage backends behind one protocol.

What lives here: ``base.py`` (the :class:`~semsearch.stores.base.Store` protocol and the plain
values that cross it); the logic the backends share, written once: ``query_rules.py`` (hit
order, the query vector's dimension check, the keyword leg's substring fallback),
``write_rules.py`` (new vectors' dimension check, the chunk identity that keeps chunk rows) and
``window_blobs.py`` (the sentence-window byte layout); and one package per backend: ``sqlite/``
(the default, one ``.embed.db`` file), ``postgres/`` (PostgreSQL + pgvector) and ``milvus/``
(Milvus Lite or a Milvus server).

Who may import it: every layer above storage may use ``base.py`` (the protocol and its values:
the engine, the collection, sources, the CLI); only ``semsearch.database``, which picks a
backend from a location string, imports a backend's store class. A backend package never imports
another backend, and nothing in ``stores/`` imports the engine above it
(tests/unit/test_import_rules.py). ``stores/ann.py`` is the old path of :mod:`semsearch.ann`.
"""
