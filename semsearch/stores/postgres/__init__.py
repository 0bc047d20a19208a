"""PostgreSQL + pgvector store: ``semsearch.connect("postgresql://user:pass@host/db")``.

What lives here, by job: ``store.py`` (:class:`PostgresStore`, the Store protocol), ``conn.py``
(a checked psycopg pool, error mapping, redaction), ``schema.py`` (numbered migrations and
per-collection DDL), ``sql.py`` (pure SQL builders), ``search.py`` (HNSW with iterative scans,
exact scans), ``reads.py``, ``writes.py`` and ``windows.py``.

Who may import it: ``semsearch.database``. Nothing here imports another backend or the engine.
``from semsearch.stores.postgres import PostgresStore`` keeps working (docs/postgres.md).
"""

from semsearch.stores.postgres.store import PostgresStore

__all__ = ["PostgresStore"]
