"""The keyword sidecar: record-level BM25 from posting arrays beside the SQLite file.

An FTS5 OR query scores every record holding any query word through SQLite's virtual-table
machinery, which at 100,000 records costs tens of milliseconds; the same exhaustive scoring over
posting arrays in numpy costs a few, and MaxScore pruning (bm25/prune.py) about half
that again (docs/benchmarks.md, "keyword-engines"). The sidecar holds
those arrays (bm25/postings.py), built from the same record text the record-level
FTS5 table indexes and tokenized by FTS5 itself (stores/fts5_tokens.py), so it ranks as
FTS5's ``bm25()`` does, to float tolerance. It answers ``porter`` collections' record-level
queries; a phrase clause (``ADR-0042`` adds ``"adr 0042"``) is scored by FTS5 for that phrase
alone. ``trigram`` collections, CJK text and the substring scan stay with FTS5
(stores/sqlite/keyword.py).

Guarantees, as the HNSW sidecar's (docs/ann.md):

- SQLite stays the source of truth; the sidecar is a derived cache (``<db>.c<C>.kw``,
  bm25/file.py), rebuilt when missing, truncated, damaged, stale or built from another copy
  of the index (its header names the SQLite file). Temporary files of a writer killed while
  writing it are removed when a process first loads it and after every write.
- Before every search the snapshot's *stamp* is read inside the search's read transaction:
  the collection's creation time plus a digest of the record-level FTS5 table's structure and
  averages records (``fts_rec_<C>_data`` rows 10 and 1; FTS5 rewrites both on every change to
  the table, from any process). Embedding progress, which bumps the change counter but not
  the text, leaves the stamp alone.
- A snapshot whose stamp is behind is *caught up* from the record change log (format 4,
  stores/sqlite/record_changes.py) inside the search: the records changed since its log position are
  re-read and scored beside the rest (bm25/delta.py), with the ranking a rebuild
  would give. So another process's writes are seen by the next search. Up to
  :data:`CATCH_UP_MAX` changed records are caught up inline; past :data:`REBUILD_AFTER` a
  background rebuild also starts, which writes a fresh ``.kw`` file for later processes.
- A sidecar that cannot be caught up (missing or damaged file, too many changes, a log pruned
  past it, a file of format 3 or older with no log) never answers: that search runs on FTS5
  (same ranking), and a rebuild starts in a background thread on its own connection; the next
  search after it finishes uses the new arrays. In-memory stores rebuild inside the search,
  up to :data:`MEMORY_BUILD_MAX` records.
"""

from __future__ import annotations

import hashlib
import logging
import sqlite3
import threading
from collections.abc import Sequence
from typing import Any

import numpy as np

from semsearch.atomic_file import remove_dead_temps
from semsearch.bm25.delta import LivePostings, rank_clauses
from semsearch.bm25.file import (
    KeywordFileInvalid,
    file_identity,
    keyword_path,
    read_postings,
    write_postings,
)
from semsearch.bm25.postings import PostingsBuilder
from semsearch.bm25.snapshot import Snapshot
from semsearch.keyword_query import TITLE_WEIGHT
from semsearch.keyword_query import Clause as QueryClause
from semsearch.stores.base import ScoredChunk
from semsearch.stores.fts5_tokens import PieceTokenizer
from semsearch.stores.record_terms import clause_terms, term_weights
from semsearch.stores.sqlite import record_changes
from semsearch.stores.sqlite.allowed import Allowed
from semsearch.stores.sqlite.record_fts import BODY_SQL, TITLE_SQL, record_fts_table
from semsearch.stores.sqlite.sql import Rows, batches, marks

__all__ = ["KeywordSidecar", "fts_stamp"]

log = logging.getLogger(__name__)
#: An in-memory store (one connection, no background thread) rebuilds inside the search that
#: finds its sidecar stale, up to this many records (tens of ms); above it FTS5 answers.
MEMORY_BUILD_MAX = 5000
_PAGE = 20_000  # records (or chunks) read and tokenized at a time by a build
#: Changed records up to which a search catches its snapshot up from the record change log
#: inline (re-tokenizing them: about 0.2 ms each); beyond it a rebuild runs and FTS5 answers.
CATCH_UP_MAX = 2000
#: Changed records past which a caught-up snapshot also starts a background rebuild.
REBUILD_AFTER = 500
_RECORDS_SQL = (
    "SELECT r.rowid, r.id, (SELECT min(k.id) FROM chunks k WHERE k.record_rowid = r.rowid), "
    f"{TITLE_SQL}, {BODY_SQL} FROM records r WHERE r.collection_id = ? "
)


def _add_records(
    builder: PostingsBuilder, page: list[Any], names: list[str], first: list[int]
) -> None:
    """Add a page of :data:`_RECORDS_SQL` rows: their text to ``builder``, their ids to
    ``names`` and their first chunk ids (-1 for none) to ``first``."""
    builder.add_records([(int(r[0]), r[3], r[4]) for r in page])
    names.extend(r[1] for r in page)
    first.extend(-1 if r[2] is None else int(r[2]) for r in page)


def fts_stamp(rows: Rows, cid: int) -> str:
    """The record-level FTS5 table's state: a digest of its structure and averages records."""
    found = rows(
        f"SELECT id, block FROM {record_fts_table(cid)}_data WHERE id IN (1, 10) ORDER BY id", ()
    )
    digest = hashlib.sha1(usedforsecurity=False)
    for row_id, block in found:
        digest.update(f"{int(row_id)}:".encode() + bytes(block or b""))
    return digest.hexdigest()


class KeywordSidecar:
    """One collection's keyword sidecar in one process (see the module docstring).

    Args:
        db_path: the SQLite file, or ``:memory:`` (no file: built in place, in memory).
        cid: the collection's id. created_at: its creation time (names the collection).
        tokenize: the collection's FTS5 ``tokenize=`` argument (porter only).
        persist: write and read the ``.kw`` file (off: memory only).
    Thread-safe: searches run under the store's read lock; the build thread swaps in its
    snapshot under this object's lock.
    """

    def __init__(
        self, db_path: str, cid: int, created_at: str, tokenize: str, persist: bool = True
    ) -> None:
        self.db_path, self.cid, self.created_at, self.tokenize = db_path, cid, created_at, tokenize
        self.persist = persist and db_path != ":memory:"
        self._snapshot: Snapshot | None = None
        self._lock = threading.Lock()
        self._building: threading.Thread | None = None
        self._swept = not self.persist  # temporary files of killed writers removed once
        self.tokenizer = PieceTokenizer(tokenize)  # for searches, under the store's read lock

    @property
    def path(self) -> str:
        """The ``.kw`` file's path."""
        return keyword_path(self.db_path, self.cid)

    def _identity(self) -> dict[str, Any]:
        """What a ``.kw`` file's header must hold to be this sidecar's (bm25/file.py): the
        collection, its tokenizer and title weight, and the SQLite file's identity."""
        return {
            "collection_id": self.cid,
            "created_at": self.created_at,
            "tokenize": self.tokenize,
            "title_weight": TITLE_WEIGHT,
            "file": file_identity(self.db_path),
        }

    def current(self, rows: Rows) -> Snapshot | None:
        """The snapshot matching the file as ``rows`` sees it, or None (FTS5 must answer).

        In turn: the snapshot held, as it is or caught up from the record change log; the
        ``.kw`` file, as it is or caught up; else a rebuild starts (in place for a small
        in-memory store, where ``rows`` is the only connection) and FTS5 answers."""
        stamp = fts_stamp(rows, self.cid)
        with self._lock:
            snap = self._snapshot
        if snap is not None and snap.stamp == stamp:
            return snap
        if not self._swept:  # as the ANN cache does (ann/file.py)
            self._swept = True
            remove_dead_temps(self.path)
        seq = record_changes.position(rows, self.cid)
        found = self._catch_up(rows, snap, stamp, seq) if snap is not None else None
        if found is None and self.persist:
            try:
                header, postings, names, first = read_postings(self.path, self._identity())
            except KeywordFileInvalid:
                header = None
            if header is not None:
                kept = header.get("seq")
                loaded = Snapshot(
                    header.get("stamp", ""), kept if isinstance(kept, int) else None,
                    LivePostings(postings), names, first,
                )  # fmt: skip
                found = (
                    loaded if loaded.stamp == stamp else self._catch_up(rows, loaded, stamp, seq)
                )
        if found is None and self.db_path == ":memory:":
            size = rows("SELECT count(*) FROM records WHERE collection_id = ?", (self.cid,))
            if int(size[0][0]) <= MEMORY_BUILD_MAX:  # else too slow inside a search
                found = Snapshot(*self._build(rows, self.tokenizer))
        if found is None:
            self._start_build()
            return None
        with self._lock:
            self._snapshot = found
        return found

    def _catch_up(self, rows: Rows, snap: Snapshot, stamp: str, seq: int | None) -> Snapshot | None:
        """``snap`` brought to ``stamp`` by re-reading the records the log names since its
        position (bm25/delta.py); None when it cannot be (no log, pruned past it,
        or more than :data:`CATCH_UP_MAX` records changed: a rebuild must run). Past
        :data:`REBUILD_AFTER` changed records a background rebuild starts as well, so that
        later catch-ups (and other processes) start from a fresh file."""
        if seq is None or snap.seq is None or seq < snap.seq:
            return None
        new = record_changes.changed_since(rows, self.cid, snap.seq)
        if new is None:
            return None
        if not len(new):  # FTS5's structure moved (``optimize``), not the text: same arrays
            return Snapshot(stamp, seq, snap.live, snap.names, snap.first, snap.changed,
                             snap.delta_names, snap.delta_first)  # fmt: skip
        changed = np.union1d(snap.changed, new).astype(np.int64)
        if len(changed) > CATCH_UP_MAX:
            return None
        base = snap.live.base
        at = np.searchsorted(base.rowids, changed)
        ok = at < len(base.rowids)
        ok[ok] = base.rowids[at[ok]] == changed[ok]
        builder = PostingsBuilder(self.tokenizer)
        names: list[str] = []
        first: list[int] = []
        for batch in batches(changed.tolist()):
            page = rows(_RECORDS_SQL + f"AND r.rowid IN ({marks(batch)}) ORDER BY r.rowid",
                        (self.cid, *batch))  # fmt: skip
            _add_records(builder, page, names, first)
        live = LivePostings(base, at[ok].astype(np.int64), builder.finish())
        if len(changed) > REBUILD_AFTER:
            self._start_build()
        return Snapshot(
            stamp, seq, live, snap.names, snap.first, changed, names, np.array(first, np.int64)
        )

    def _build(self, rows: Rows, tokenizer: PieceTokenizer) -> tuple[Any, ...]:
        """(stamp, log position, live postings, record ids, first chunk ids) of the snapshot
        ``rows`` reads (call it inside one read transaction). Text is read in pages of
        :data:`_PAGE` rows."""
        stamp = fts_stamp(rows, self.cid)
        seq = record_changes.position(rows, self.cid)
        builder = PostingsBuilder(tokenizer)
        names: list[str] = []
        first: list[int] = []
        after = -1
        while True:
            page = rows(
                _RECORDS_SQL + "AND r.rowid > ? ORDER BY r.rowid LIMIT ?", (self.cid, after, _PAGE)
            )
            if not page:
                break
            _add_records(builder, page, names, first)
            after = int(page[-1][0])
        after = -1
        while True:
            texts = rows(
                "SELECT id, text FROM chunks WHERE collection_id = ? AND id > ? ORDER BY id LIMIT ?",
                (self.cid, after, _PAGE),
            )
            if not texts:
                break
            builder.add_chunks([t[1] for t in texts])
            after = int(texts[-1][0])
        live = LivePostings(builder.finish())
        return stamp, seq, live, names, np.array(first, np.int64)

    def _start_build(self) -> None:
        """Start a rebuild in a background thread unless one runs (none in memory: one
        connection, which no thread can read)."""
        if self.db_path == ":memory:":
            return
        with self._lock:
            if self._building is not None and self._building.is_alive():
                return
            self._building = threading.Thread(
                target=self._build_in_background, name=f"semsearch-kw-{self.cid}", daemon=True
            )
            self._building.start()

    def rebuild(self, wait: bool) -> None:
        """Rebuild the arrays from the SQLite file and write the ``.kw`` file at the record
        change log's current position, so the log can be pruned up to it (``semsearch
        compact``, or a write past the pruning threshold). ``wait``: in this thread (after a
        rebuild already running), else in the background. No-op in memory."""
        if self.db_path == ":memory:":
            return
        if not wait:
            self._start_build()
            return
        self.wait()
        self._build_in_background()

    def wait(self, timeout: float | None = None) -> None:
        """Wait for a running rebuild to finish (``close()``, tests, benchmarks)."""
        thread = self._building
        if thread is not None:
            thread.join(timeout)

    def _build_in_background(self) -> None:
        from semsearch.stores.sqlite import (
            file as sqlite_file,  # the store's own connection settings
        )

        tokenizer = PieceTokenizer(self.tokenize)  # not shared with searching threads
        try:
            conn = sqlite_file.connect(self.db_path, True)
            try:
                conn.execute("BEGIN")
                snap = Snapshot(
                    *self._build(
                        lambda sql, params: conn.execute(sql, params).fetchall(), tokenizer
                    )
                )
                conn.execute("COMMIT")
            finally:
                conn.close()
            if self.persist:
                try:
                    head = dict(self._identity(), stamp=snap.stamp, seq=snap.seq)
                    write_postings(self.path, head, snap.live.base, snap.names, snap.first)
                    remove_dead_temps(self.path)
                except OSError as exc:  # a read-only folder: keep it in memory
                    log.info("keyword sidecar not written (%s); kept in memory", exc)
            with self._lock:
                self._snapshot = snap
        except (sqlite3.Error, OSError) as exc:  # the file went away: FTS5 keeps answering
            log.warning("keyword sidecar build failed: %s", exc)
        finally:
            tokenizer.close()

    def clause_terms(
        self, clauses: Sequence[QueryClause]
    ) -> list[tuple[QueryClause, tuple[str, ...]]]:
        """Each query clause with its terms (FTS5's tokens of its words, stemmed); clauses
        that give no term are dropped, as they match nothing."""
        return clause_terms(self.tokenizer, clauses)

    def rank(
        self,
        rows: Rows,
        clauses: Sequence[QueryClause],
        k: int,
        allowed: Allowed | None,
        scoped: bool = False,
    ) -> list[ScoredChunk] | None:
        """The top ``k`` records for ORed ``clauses``, best first, ties by record id, each with
        its BM25 (> 0; semsearch/bm25/postings.py), its keyword evidence
        (:func:`~semsearch.bm25.delta.rank_clauses`) and first chunk, ``provisional``; None
        when the sidecar is stale (FTS5 must answer).

        A clause of one term is scored from the postings; a phrase (several terms) from FTS5's
        own ``bm25()`` of that phrase alone, converted to semsearch's IDF
        (:meth:`~semsearch.bm25.snapshot.Snapshot.phrase`), cached per snapshot. Each clause
        counts with its query weight. ``allowed`` (a filter) is applied before the top k.

        ``scoped``: N, n(q) and avgdl are counted over the records ``allowed`` lets through
        only (:class:`~semsearch.bm25.delta.ScopedPostings`), so no other record moves a score
        (conversation memory, one user per filter); each term of the clauses is scored once
        per clause it comes from, without phrase scores (FTS5's phrase ``bm25()`` counts the
        whole collection).
        """
        parts = self.clause_terms(clauses)
        snap = self.current(rows)
        if snap is None:
            return None
        p = snap.live
        mask = None if allowed is None else snap.mask(allowed)
        if scoped:
            weights, stops = term_weights(parts)
            scope = p if mask is None else p.within(mask)
            found = rank_clauses(
                scope, list(weights), list(weights.values()), k, None, list(stops.values())
            )
            return snap.hits(found[0], found[1], k, (found[3], found[4]))
        terms = [t[0] if len(t) == 1 else snap.phrase(rows, self.cid, c.fts) for c, t in parts]
        flags = [c.stop for c, _ in parts]
        found = rank_clauses(p, terms, [c.weight for c, _ in parts], k, mask, flags)
        return snap.hits(found[0], found[1], k, (found[3], found[4]))
