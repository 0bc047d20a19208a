"""PostgreSQL + pgvector store: ``semsearch.connect("postgresql://user:pass@host/db")``.

What lives here, by job, from the top down (a module imports only modules of its own line or
of the lines below it):

- ``store.py``: :class:`PostgresStore`, the Store protocol (collections, writes, searches);
  imported by nothing here but this ``__init__``.
- ``keyword.py``: keyword search (BM25 over whole records, the older collections' ranking
  and the note about it, scoped statistics, the chunk a hit shows).
- ``reads.py``: records, chunks, counts and structured find.
- ``access.py``: :class:`PostgresAccess`, the pool, write transactions and read queries on a
  collection's tables.
- ``writes.py`` (a batch of records in one transaction, vectors reused by hash),
  ``search.py`` (HNSW with iterative scans, exact scans, the older keyword ranking and the
  substring scan) and ``bm25_search.py`` (BM25: statistics, scores, evidence, the shown
  chunk).
- ``schema.py``: numbered migrations and per-collection DDL.
- ``bm25_index.py`` (the keyword statistics' tables, kept in the records' transaction, and
  the migration of older collections) and ``windows.py`` (sentence windows).
- ``sql.py`` and ``bm25_sql.py`` (pure SQL builders) and ``conn.py`` (a checked psycopg pool,
  error mapping, redaction).

Who may import it: ``semsearch.database``. Nothing here imports another backend or the engine.
``from semsearch.stores.postgres import PostgresStore`` keeps working (docs/postgres.md).
"""

from semsearch.stores.postgres.store import PostgresStore

__all__ = ["PostgresStore"]
