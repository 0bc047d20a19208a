"""The keyword sidecar: record-level BM25 from posting arrays beside the SQLite file.

An FTS5 OR query scores every record holding any query word through SQLite's virtual-table
machinery, which at 100,000 records costs tens of milliseconds; the same exhaustive scoring over
posting arrays in numpy costs a few, and MaxScore pruning (bm25/prune.py) about half
that again (docs/benchmarks.md, "keyword-engines"). The sidecar holds
those arrays (bm25/postings.py), built from the same record text the record-level
FTS5 table indexes and tokenized by FTS5 itself (bm25/tokens.py), so it ranks as
FTS5's ``bm25()`` does, to float tolerance. It answers ``porter`` collections' record-level
queries; a phrase clause (``ADR-0042`` adds ``"adr 0042"``) is scored by FTS5 for that phrase
alone. ``trigram`` collections, CJK text and the substring scan stay with FTS5
(stores/sqlite/keyword.py).

Guarantees, as the HNSW sidecar's (docs/ann.md):

- SQLite stays the source of truth; the sidecar is a derived cache (``<db>.c<C>.kw``,
  bm25/file.py), rebuilt when missing, truncated, damaged or stale.
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

import contextlib
import hashlib
import logging
import os
import sqlite3
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from semsearch.bm25.delta import LivePostings
from semsearch.bm25.file import (
    KeywordFileInvalid,
    keyword_path,
    read_postings,
    write_postings,
)
from semsearch.bm25.postings import Phrase, PostingsBuilder
from semsearch.bm25.tokens import PieceTokenizer
from semsearch.filters import Filter
from semsearch.stores.base import ScoredChunk
from semsearch.stores.sqlite import record_changes
from semsearch.stores.sqlite.record_fts import BODY_SQL, TITLE_SQL, TITLE_WEIGHT, record_fts_table
from semsearch.stores.sqlite.schema import KEYWORD_TOKENIZERS
from semsearch.stores.sqlite.sql import batches, marks

if TYPE_CHECKING:
    from semsearch.stores.sqlite.keyword import SidecarRank
    from semsearch.stores.sqlite.store import SQLiteStore

__all__ = ["KeywordSidecar", "forget_sidecar", "fts_stamp", "sidecar_rank"]

log = logging.getLogger(__name__)
Rows = Callable[[str, Sequence[Any]], list[Any]]
#: A filter's cache name and the function giving the rowids of the records passing it.
Allowed = tuple[Hashable, Callable[[], NDArray[np.int64]]]
_MASKS = 16  # filter masks kept per snapshot
_PHRASES = 1024  # phrase clauses' scores kept per snapshot
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


def fts_stamp(rows: Rows, cid: int) -> str:
    """The record-level FTS5 table's state: a digest of its structure and averages records."""
    found = rows(
        f"SELECT id, block FROM {record_fts_table(cid)}_data WHERE id IN (1, 10) ORDER BY id", ()
    )
    digest = hashlib.sha1(usedforsecurity=False)
    for row_id, block in found:
        digest.update(f"{int(row_id)}:".encode() + bytes(block or b""))
    return digest.hexdigest()


class _Snapshot:
    """Posting arrays of one stamp, with the filter masks computed on them.

    ``live`` scores the records as they are at ``stamp``: the base arrays (a ``.kw`` file or a
    build, with ``names``/``first`` per base record) caught up by the records the log names
    (``changed``, rowids; their ids and first chunks in ``delta_names``/``delta_first``)."""

    def __init__(
        self,
        stamp: str,
        seq: int | None,
        live: LivePostings,
        names: list[str],
        first: NDArray[np.int64],
        changed: NDArray[np.int64] | None = None,
        delta_names: list[str] | None = None,
        delta_first: NDArray[np.int64] | None = None,
    ) -> None:
        self.stamp, self.seq, self.live = stamp, seq, live
        self.names = names  # base record ids, in base rowid order
        self.first = first  # each base record's first chunk id, -1 for none
        self.changed = np.zeros(0, np.int64) if changed is None else changed
        self.delta_names = delta_names or []
        self.delta_first = np.zeros(0, np.int64) if delta_first is None else delta_first
        self.masks: OrderedDict[Hashable, NDArray[np.bool_]] = OrderedDict()
        self.phrases: dict[str, Phrase] = {}

    def phrase(self, rows: Rows, cid: int, clause: str) -> Phrase:
        """A phrase clause's BM25 part per record: FTS5's ``-bm25()`` of the phrase alone."""
        if clause not in self.phrases:
            table = record_fts_table(cid)
            found = rows(
                f"SELECT rowid, -bm25({table}, {TITLE_WEIGHT}, 1.0) FROM {table} "
                f"WHERE {table} MATCH ?",
                (clause,),
            )
            ids = np.fromiter((r[0] for r in found), np.int64, len(found))
            scores = np.fromiter((r[1] for r in found), np.float64, len(found))
            at = self.live.positions(ids)
            if len(self.phrases) >= _PHRASES:
                self.phrases.clear()
            self.phrases[clause] = (at[at >= 0], scores[at >= 0])
        return self.phrases[clause]

    def _record(self, position: int) -> tuple[str, int]:
        n_base = len(self.names)
        if position < n_base:
            return self.names[position], int(self.first[position])
        return self.delta_names[position - n_base], int(self.delta_first[position - n_base])

    def hits(
        self, positions: NDArray[np.int64], scores: NDArray[np.float64], k: int
    ) -> list[ScoredChunk]:
        """ScoredChunks of the best ``k`` of (positions, scores), ties by record id."""
        ranked = sorted(
            (-float(s), *self._record(int(i))) for i, s in zip(positions, scores, strict=True)
        )
        return [ScoredChunk(c, r, -s, provisional=True) for s, r, c in ranked if c >= 0][:k]

    def mask(self, allowed: Allowed) -> NDArray[np.bool_]:
        key, rowids = allowed
        if key in self.masks:
            self.masks.move_to_end(key)
            return self.masks[key]
        at = self.live.positions(rowids())
        mask = np.zeros(self.live.size, dtype=np.bool_)
        mask[at[at >= 0]] = True
        self.masks[key] = mask
        if len(self.masks) > _MASKS:
            self.masks.popitem(last=False)
        return mask


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
        self._snapshot: _Snapshot | None = None
        self._lock = threading.Lock()
        self._building: threading.Thread | None = None
        self.tokenizer = PieceTokenizer(tokenize)  # for searches, under the store's read lock

    @property
    def path(self) -> str:
        """The ``.kw`` file's path."""
        return keyword_path(self.db_path, self.cid)

    def _identity(self) -> dict[str, Any]:
        return {
            "collection_id": self.cid,
            "created_at": self.created_at,
            "tokenize": self.tokenize,
            "title_weight": TITLE_WEIGHT,
        }

    def current(self, rows: Rows) -> _Snapshot | None:
        """The snapshot matching the file as ``rows`` sees it, or None (FTS5 must answer).

        In turn: the snapshot held, as it is or caught up from the record change log; the
        ``.kw`` file, as it is or caught up; else a rebuild starts (in place for a small
        in-memory store, where ``rows`` is the only connection) and FTS5 answers."""
        stamp = fts_stamp(rows, self.cid)
        with self._lock:
            snap = self._snapshot
        if snap is not None and snap.stamp == stamp:
            return snap
        seq = record_changes.position(rows, self.cid)
        found = self._catch_up(rows, snap, stamp, seq) if snap is not None else None
        if found is None and self.persist:
            try:
                header, postings, names, first = read_postings(self.path, self._identity())
            except KeywordFileInvalid:
                header = None
            if header is not None:
                kept = header.get("seq")
                loaded = _Snapshot(
                    header.get("stamp", ""), kept if isinstance(kept, int) else None,
                    LivePostings(postings), names, first,
                )  # fmt: skip
                found = (
                    loaded if loaded.stamp == stamp else self._catch_up(rows, loaded, stamp, seq)
                )
        if found is None and self.db_path == ":memory:":
            size = rows("SELECT count(*) FROM records WHERE collection_id = ?", (self.cid,))
            if int(size[0][0]) <= MEMORY_BUILD_MAX:  # else too slow inside a search
                found = _Snapshot(*self._build(rows, self.tokenizer))
        if found is None:
            self._start_build()
            return None
        with self._lock:
            self._snapshot = found
        return found

    def _catch_up(
        self, rows: Rows, snap: _Snapshot, stamp: str, seq: int | None
    ) -> _Snapshot | None:
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
            return _Snapshot(stamp, seq, snap.live, snap.names, snap.first, snap.changed,
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
            builder.add_records([(int(r[0]), r[3], r[4]) for r in page])
            names += (r[1] for r in page)
            first += (-1 if r[2] is None else int(r[2]) for r in page)
        live = LivePostings(base, at[ok].astype(np.int64), builder.finish())
        if len(changed) > REBUILD_AFTER:
            self._start_build()
        return _Snapshot(
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
            builder.add_records([(int(r[0]), r[3], r[4]) for r in page])
            names += (r[1] for r in page)
            first += (-1 if r[2] is None else int(r[2]) for r in page)
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
        if self.db_path == ":memory:":  # one connection: no thread can read it
            return
        with self._lock:
            if self._building is not None and self._building.is_alive():
                return
            self._building = threading.Thread(
                target=self._build_in_background, name=f"semsearch-kw-{self.cid}", daemon=True
            )
            self._building.start()

    def wait(self, timeout: float | None = None) -> None:
        """Wait for a running rebuild to finish (tests, benchmarks)."""
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
                snap = _Snapshot(
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
                except OSError as exc:  # a read-only folder: keep it in memory
                    log.info("keyword sidecar not written (%s); kept in memory", exc)
            with self._lock:
                self._snapshot = snap
        except (sqlite3.Error, OSError) as exc:  # the file went away: FTS5 keeps answering
            log.warning("keyword sidecar build failed: %s", exc)
        finally:
            tokenizer.close()

    def clause_terms(self, clauses: Sequence[str]) -> list[tuple[str, tuple[str, ...]]]:
        """Each quoted FTS5 clause (``"word"``, ``"adr 0042"``) with its terms; clauses that
        give no term are dropped, as they match nothing."""
        inner = [c[1:-1].replace('""', '"') for c in clauses]
        found = self.tokenizer.pieces(p for text in inner for p in text.split())
        out = []
        for clause, text in zip(clauses, inner, strict=True):
            terms = tuple(t for piece in text.split() for t in found[piece])
            if terms:
                out.append((clause, terms))
        return out

    def rank(
        self, rows: Rows, clauses: Sequence[str], k: int, allowed: Allowed | None
    ) -> list[ScoredChunk] | None:
        """The top ``k`` records for ORed ``clauses``, best first, ties by record id, each with
        its BM25 (> 0) and first chunk, ``provisional`` (as FTS5's record ranking returns
        them); None when the sidecar is stale (FTS5 must answer).

        A clause of one term is scored from the postings; a phrase (several terms) by FTS5's
        own ``bm25()`` of that phrase alone, which is exactly its part of the sum, cached per
        snapshot. As stores/sqlite/keyword.py does, weightless clauses (in at least half of
        the records: IDF clamped to 1e-6) are left out first, and scored too only when that
        finds fewer than ``k`` records. ``allowed`` (a filter) is applied before the top k.
        """
        parts = self.clause_terms(clauses)
        snap = self.current(rows)
        if snap is None:
            return None
        p = snap.live
        terms = [t[0] if len(t) == 1 else snap.phrase(rows, self.cid, c) for c, t in parts]
        mask = None if allowed is None else snap.mask(allowed)
        n = p.n
        weighty = [t for t in terms if 2 * p.df(t) < n]
        found = None
        if 0 < len(weighty) < len(terms):
            found = p.top(weighty, k, mask)
        if found is None or found[2] < k:
            found = p.top(terms, k, mask)
        return snap.hits(found[0], found[1], k)


def sidecar_rank(
    store: SQLiteStore, cid: int, created_at: str, tokenizer: str
) -> SidecarRank | None:
    """The sidecar ranking of one of ``store``'s collections for
    :func:`~semsearch.stores.sqlite.keyword.keyword_search`, or None (``trigram``: FTS5 only).
    Call it inside the search's read transaction (``store._rows`` reads that snapshot)."""
    from semsearch.stores.sqlite.vectors import filter_key

    if tokenizer != "porter":
        return None
    sidecars: dict[int, KeywordSidecar] = store._keyword_sidecars
    sidecar = sidecars.get(cid)
    if sidecar is None or sidecar.created_at != created_at:
        tokenize = KEYWORD_TOKENIZERS[tokenizer]
        sidecar = sidecars[cid] = KeywordSidecar(store.location, cid, created_at, tokenize)

    def rank(clauses: list[str], k: int, where: Filter | None) -> list[ScoredChunk] | None:
        allowed = None if where is None else filter_key(store, cid, where)
        return sidecar.rank(store._rows, clauses, k, allowed)

    return rank


def forget_sidecar(store: SQLiteStore, cid: int) -> None:
    """After a collection is dropped: let go of its sidecar and delete its ``.kw`` file (a
    build still running may write it again; collection ids are never reused, so such a file
    is never read)."""
    store._keyword_sidecars.pop(cid, None)
    if store.location != ":memory:":
        with contextlib.suppress(OSError):
            os.unlink(keyword_path(store.location, cid))


def refresh_sidecar(store: SQLiteStore, collection: str, wait: bool) -> None:
    """Bring ``collection``'s keyword sidecar in step with the file after writes: load the
    ``.kw`` file if it is current, else build it (waiting for the build when ``wait``).

    A one-shot process (``semsearch index``, ``import``, ``compact``) waits, because a build
    started by a search runs in a daemon thread that dies with the process; a long-running
    writer (``semsearch watch``) does not. Nothing happens for ``trigram`` collections, files
    of format 1 or a store whose sidecar is off.
    """
    from semsearch.stores.sqlite.record_fts import has_record_fts

    if not store.keyword_sidecar or store._read() is None:
        return

    def load(_: sqlite3.Connection) -> KeywordSidecar | None:
        found = store._keyword_setup(collection)
        if found is None or not has_record_fts(store._rows, found[0]):
            return None
        cid, tokenizer, counts = found
        if sidecar_rank(store, cid, counts.key[2], tokenizer) is None:
            return None
        sidecar: KeywordSidecar = store._keyword_sidecars[cid]
        sidecar.current(store._rows)
        return sidecar

    sidecar = store._in_read_txn(load)
    if sidecar is not None and wait:
        sidecar.wait()
