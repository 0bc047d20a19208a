"""The SQLite store's keyword leg: its caches per collection, and who answers each query.

A record-level keyword query of a ``porter`` collection is ranked by the collection's keyword
sidecar (bm25/sidecar.py) when it is current, else by FTS5 (stores/sqlite/keyword.py), with the
same ranking; each record hit shows its best chunk, scored from the chunks' own text with the
sidecar's statistics (bm25/chunks.py) or by FTS5. :class:`KeywordLeg` holds, per collection id,
the snapshot's FTS5 term counts and the sidecar, and runs each query in one read transaction. It
takes the store's connections (stores/sqlite/connection.py), never the store class.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence

from semsearch.bm25.chunks import ShownChunks, best_chunks_from_text
from semsearch.bm25.file import record_log_horizon
from semsearch.bm25.sidecar import KeywordSidecar
from semsearch.filters import Filter
from semsearch.keyword_query import Clause, scoring_clauses, stopword_list
from semsearch.stores.base import ScoredChunk
from semsearch.stores.sqlite import keyword as sqlite_keyword
from semsearch.stores.sqlite import record_changes
from semsearch.stores.sqlite import schema as ddl
from semsearch.stores.sqlite.allowed import filter_key
from semsearch.stores.sqlite.connection import SQLiteConnections
from semsearch.stores.sqlite.record_fts import has_record_fts

__all__ = ["KeywordLeg"]


class KeywordLeg:
    """One store's keyword caches, by collection id, and the keyword queries that use them.

    Args:
        db: the store's connections (reads, read transactions, the file's location).
    Attributes:
        term_counts: each collection's FTS5 clause counts, for its current snapshot.
        sidecars: each collection's keyword sidecar (``porter`` collections that were searched).
        use_sidecar: rank record-level queries from the sidecar when it is current (off: FTS5
            only, the same ranking; benchmarks compare the two).
    """

    def __init__(self, db: SQLiteConnections) -> None:
        self.db = db
        self.term_counts: dict[int, sqlite_keyword.TermCounts] = {}
        self.sidecars: dict[int, KeywordSidecar] = {}
        self.use_sidecar = True
        self.shown_chunks: dict[int, ShownChunks] = {}  # chunk texts of records shown last
        self._caught_up: dict[int, int] = {}  # log position of each collection's last catch-up

    def setup(self, collection: str) -> tuple[int, str, sqlite_keyword.TermCounts] | None:
        """(collection id, keyword tokenizer, the snapshot's term counts), or None when gone."""
        found = self._setup(collection)
        return None if found is None else found[:3]

    def _setup(
        self, collection: str
    ) -> tuple[int, str, sqlite_keyword.TermCounts, frozenset[str]] | None:
        """:meth:`setup` plus the collection's stop words."""
        rows = self.db._rows(
            "SELECT id, options, version, created_at FROM collections WHERE name = ?",
            (collection,),
        )
        if not rows:
            return None
        cid, raw, *stamp = rows[0]
        counts = self.term_counts.get(cid)
        if counts is None or counts.key != (cid, *stamp):
            counts = self.term_counts[cid] = sqlite_keyword.TermCounts((cid, *stamp))
        options = json.loads(raw)
        return int(cid), ddl.keyword_tokenizer(options), counts, stopword_list(options)

    def search(self, collection: str, text: str, k: int, where: Filter | None) -> list[ScoredChunk]:
        """Top-k by BM25 (> 0, higher is better), ties by id, in one read transaction (see
        ``SQLiteStore.keyword_search``); no hits before the file exists."""
        if self.db._read() is None:
            return []
        found: list[ScoredChunk] = self.db._in_read_txn(
            lambda _: self._search(collection, text, k, where)
        )
        return found

    def search_scoped(
        self, collection: str, text: str, k: int, where: Filter | None
    ) -> list[ScoredChunk] | None:
        """Top-k records by BM25 counted over the records ``where`` allows only (see
        ``SQLiteStore.keyword_search_scoped``), from the sidecar; None when it cannot answer
        now (stale and rebuilding, ``trigram``, a format-1 file, or the sidecar off)."""
        if self.db._read() is None:
            return []

        def run(_: sqlite3.Connection) -> list[ScoredChunk] | None:
            found = self._setup(collection)
            if found is None:
                return []
            cid, tokenizer, counts, stop = found
            rows = self.db._rows
            if not self.use_sidecar or not has_record_fts(rows, cid):
                return None
            rank = self._sidecar_rank(cid, counts.key[2], tokenizer, scoped=True)
            return None if rank is None else rank(scoring_clauses(text, stop), k, where)

        ranked: list[ScoredChunk] | None = self.db._in_read_txn(run)
        return ranked

    def _search(
        self, collection: str, text: str, k: int, where: Filter | None
    ) -> list[ScoredChunk]:
        found = self._setup(collection)
        if found is None:
            return []
        cid, tokenizer, counts, stop = found
        rows = self.db._rows
        # files of format 1 keep ranking chunks until a write migrates them (never on a read)
        unit: sqlite_keyword.Unit = "record" if has_record_fts(rows, cid) else "chunk"
        use = unit == "record" and self.use_sidecar
        fast = self._sidecar_rank(cid, counts.key[2], tokenizer) if use else None
        clauses = scoring_clauses(text, stop)
        return sqlite_keyword.keyword_search(
            rows, int(cid), tokenizer, text, k, where, clauses, counts, unit, fast, stop
        )

    def best_chunks(self, collection: str, text: str, record_ids: Sequence[str]) -> dict[str, int]:
        """``{record id: chunk id}``: each record's best chunk by chunk-level BM25 for ``text``,
        from the sidecar's statistics when it is current, else from FTS5."""
        if self.db._read() is None:
            return {}

        def best(_: sqlite3.Connection) -> dict[str, int]:
            found = self._setup(collection)
            if found is None:
                return {}
            cid, tokenizer, counts, stop = found
            rows = self.db._rows
            clauses = scoring_clauses(text, stop)
            sidecar = self.sidecars.get(cid) if self.use_sidecar else None
            snap = sidecar.current(rows) if sidecar is not None else None
            if sidecar is not None and snap is not None:  # no FTS5 scoring query
                shown = self.shown_chunks.setdefault(cid, ShownChunks())
                return best_chunks_from_text(
                    rows, cid, sidecar.tokenizer, snap.live, [c.fts for c in clauses],
                    record_ids, counts, shown,
                )  # fmt: skip
            return sqlite_keyword.best_chunks(
                rows, cid, tokenizer, text, record_ids, counts, clauses
            )

        chunks: dict[str, int] = self.db._in_read_txn(best)
        return chunks

    def _sidecar_rank(
        self, cid: int, created_at: str, tokenizer: str, scoped: bool = False
    ) -> sqlite_keyword.SidecarRank | None:
        """The sidecar ranking of one collection for
        :func:`~semsearch.stores.sqlite.keyword.keyword_search`, or None (``trigram``: FTS5
        only). Call it inside the search's read transaction (``db._rows`` reads that snapshot).
        ``scoped``: statistics within the filter (``KeywordSidecar.rank``)."""
        if tokenizer != "porter":
            return None
        sidecar = self.sidecars.get(cid)
        if sidecar is None or sidecar.created_at != created_at:
            tokenize = ddl.KEYWORD_TOKENIZERS[tokenizer]
            sidecar = KeywordSidecar(self.db.location, cid, created_at, tokenize)
            self.sidecars[cid] = sidecar
        rows = self.db._rows

        def rank(clauses: list[Clause], k: int, where: Filter | None) -> list[ScoredChunk] | None:
            allowed = None if where is None else filter_key(rows, cid, where)
            return sidecar.rank(rows, clauses, k, allowed, scoped)

        return rank

    def forget(self, cid: int) -> None:
        """After a collection is dropped: let go of its sidecar (the store deletes its ``.kw``
        file: stores/sqlite/cache_files.py)."""
        self.sidecars.pop(cid, None)
        self.shown_chunks.pop(cid, None)

    def _sidecar(self, collection: str) -> KeywordSidecar | None:
        """The collection's sidecar (made on first use), or None: no such collection, a
        ``trigram`` one, or a file of format 1."""
        found = self.setup(collection)
        if found is None or not has_record_fts(self.db._rows, found[0]):
            return None
        cid, tokenizer, counts = found
        if self._sidecar_rank(cid, counts.key[2], tokenizer) is None:
            return None
        return self.sidecars[cid]

    def refresh(self, collection: str, wait: bool) -> None:
        """Bring ``collection``'s keyword sidecar in step with the file after writes: load the
        ``.kw`` file if it is current, else build it (waiting for the build when ``wait``).

        A one-shot process (``semsearch index``, ``import``, ``compact``) waits, because a build
        started by a search runs in a daemon thread that dies with the process; a long-running
        writer (``semsearch watch``) does not. Nothing happens for ``trigram`` collections,
        files of format 1 or a store whose sidecar is off.
        """
        if not self.use_sidecar or self.db._read() is None:
            return

        def load(_: sqlite3.Connection) -> KeywordSidecar | None:
            sidecar = self._sidecar(collection)
            if sidecar is not None:
                sidecar.current(self.db._rows)
            return sidecar

        sidecar: KeywordSidecar | None = self.db._in_read_txn(load)
        if sidecar is not None and wait:
            sidecar.wait()

    def horizon(self, cid: int, top: int) -> int:
        """How far collection ``cid``'s record change log, at position ``top``, may be pruned:
        to its ``.kw`` file's position (bm25/file.py). A
        :data:`~semsearch.stores.sqlite.changes.Horizon`."""
        return record_log_horizon(self.db.location, cid, top)

    def catch_up(self, collection: str, top: int | None) -> None:
        """After a write whose prune of the record change log the ``.kw`` file held back
        (``record_changes.maybe_prune`` returned the log's position ``top``; None: it did not):
        rewrite the file in the background, so the next prune passes it (``close()`` waits
        for it). At most once per :data:`~semsearch.stores.sqlite.record_changes.PRUNE_AFTER`
        log rows, so a folder the file cannot be written to is not rebuilt on every write."""
        if top is None:
            return
        sidecar = self._sidecar(collection)
        last = self._caught_up.get(sidecar.cid) if sidecar is not None else None
        if sidecar is None or (last is not None and top - last < record_changes.PRUNE_AFTER):
            return
        self._caught_up[sidecar.cid] = top
        sidecar.rebuild(wait=False)

    def catch_up_files(self, collections: Sequence[str]) -> None:
        """Before ``compact`` prunes: rewrite, in this thread, each ``.kw`` file of
        ``collections`` that is behind its record change log, so the prune empties the log (a
        rebuild each: about as long as a collection's first keyword search). A missing or
        foreign file holds nothing back and is left to the next search."""
        for name in collections:
            sidecar = self._sidecar(name)
            top = record_changes.position(self.db._rows, sidecar.cid) if sidecar else None
            if sidecar is None or top is None:
                continue
            if self.horizon(sidecar.cid, top) < top:
                sidecar.rebuild(wait=True)

    def wait(self) -> None:
        """Wait for every keyword sidecar rebuild running in the background (``close()``: a
        daemon thread would die with the process, leaving its ``.kw`` file unwritten)."""
        for sidecar in list(self.sidecars.values()):
            sidecar.wait()
