"""The keyword sidecar: record-level BM25 over posting arrays kept beside a ``.embed.db`` file.

What lives here, by job: ``sidecar.py`` (:class:`~semsearch.bm25.sidecar.KeywordSidecar`, one
collection's sidecar: kept current, built, ranking), ``snapshot.py`` (the arrays of one FTS5
stamp with their filter masks and phrase scores), ``postings.py`` (posting arrays and exhaustive
BM25 in numpy), ``prune.py`` (exact top-k with MaxScore pruning), ``delta.py`` (catching up from
the record change log), ``file.py`` (the ``.kw`` file on disk, and how far the record change log
may be pruned without stranding it), ``tokens.py`` (FTS5's own tokenizer called from Python) and
``chunks.py`` (each keyword hit's best chunk).

Like :mod:`semsearch.ann` it is a derived cache: SQLite's FTS5 tables stay the source of truth,
and the sidecar is checked against the file's change counter, caught up from the change log, and
rebuilt when missing or damaged (docs/search-modes.md). Who may import it: the SQLite store
(``stores/sqlite/store.py`` and its keyword leg, ``keyword_leg.py``). It reads the SQLite file's
layout modules and never the store class, :mod:`semsearch.ann` or the engine above.
"""
