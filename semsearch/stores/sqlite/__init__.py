"""The embedded default store: one SQLite file (``*.embed.db``) in WAL mode, or ``:memory:``.

What lives here, by job, top down:

- ``store.py``: :class:`SQLiteStore`, the Store protocol over the file, the top of the SQLite
  side; it hands each method to the module doing that job;
- the legs it queries, which sit above :mod:`semsearch.ann` and :mod:`semsearch.bm25`:
  ``vectors.py`` (vector search over the ANN cache) and ``keyword_leg.py`` (the keyword caches
  per collection: FTS5 term counts and keyword sidecars, and who answers);
- search below the caches: ``keyword.py`` (BM25 over FTS5, the keyword sidecar's fallback) and
  ``allowed.py`` (a filter as both caches take it);
- reads and writes: ``connection.py`` (the writer and reader connections, their locks and
  transactions; the base of the store and what the legs take), ``catalog.py`` (the
  ``collections`` table), ``reads.py`` (records, chunks, counts, find), ``writes.py`` (record,
  chunk and vector rows), ``windows.py`` (sentence windows);
- the file's layout: ``file.py`` (opening and guarding a file), ``schema.py`` (the on-disk layout
  and its numbered migrations), ``sql.py`` (pure SQL builders: FTS5 quoting, filter
  compilation), ``record_fts.py`` (the record-level FTS5 table), ``vector_blobs.py`` (float16
  vector blobs), ``changes.py`` and ``record_changes.py`` (the change logs that the derived
  caches catch up from, pruned as far as the caches' rules, passed in by the store, allow).

The file is the source of truth; its derived caches live in :mod:`semsearch.ann` (the HNSW graph
and exact scan) and :mod:`semsearch.bm25` (the keyword sidecar). Who may import it:
``semsearch.database`` (which opens it from a location) and those derived caches, which read the
file's layout modules (never ``store.py``, ``vectors.py`` or ``keyword_leg.py``). Nothing here
imports the engine (search, ingest, collection).
"""

from semsearch.moved import forward

# `from semsearch.stores.sqlite import SQLiteStore` (the module this package replaced).
__getattr__ = forward(
    __name__,
    {
        "SQLiteStore": "semsearch.stores.sqlite.store",
    },
)
