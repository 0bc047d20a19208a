"""The embedded default store: one SQLite file (``*.embed.db``) in WAL mode, or ``:memory:``.

What lives here, by job: ``store.py`` (:class:`SQLiteStore`, the Store protocol over the file),
``file.py`` (opening and guarding a file), ``schema.py`` (the on-disk layout and its numbered
migrations), ``sql.py`` (pure SQL builders: FTS5 quoting, filter compilation), ``writes.py``,
``vectors.py``, ``vector_blobs.py``, ``keyword.py`` and ``record_fts.py`` (FTS5 search),
``windows.py`` (sentence windows), ``changes.py`` and ``record_changes.py`` (the change logs that
the derived caches catch up from).

The file is the source of truth; its derived caches live in :mod:`semsearch.ann` (the HNSW graph
and exact scan) and :mod:`semsearch.bm25` (the keyword sidecar). Who may import it:
``semsearch.database`` (which opens it from a location) and those derived caches, which read the
file's layout modules. Nothing here imports the engine (search, ingest, collection).
"""
