"""Each keyword hit's best chunk, scored in Python from the chunks' own text (issue 26).

Record-level hits show the chunk with the highest chunk-level BM25 (stores/sqlite/keyword.py
``best_chunks``). Asking FTS5 for it costs a query that scores every chunk holding a query word,
most of a keyword search's time once the ranking itself is fast. Here only the shown records'
chunks are scored: their text is tokenized by FTS5's own tokenizer (stores/fts5_tokens.py),
and BM25's collection statistics come from the chunk-level FTS5 table itself: N and the total
token count from its averages record (``fts_<C>_data`` row 1: SQLite varints, the row count
then each column's token total), a term's n(q) from the keyword sidecar's chunk frequencies
(counted from the same chunk texts at build; once the sidecar is caught up from the change log
they are not kept, bm25/delta.py), else, and a phrase's, from the snapshot's cached FTS5
counts (:class:`~semsearch.stores.sqlite.keyword.TermCounts`). The score is
:func:`semsearch.stores.record_terms.best_chunk`'s, which PostgreSQL and Milvus use too: FTS5's
``bm25()`` formula (one column, weight 1), the same weightless-clause rule and the same ties
(the first chunk), so the same chunk as ``best_chunks`` to float tolerance.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence

from semsearch.bm25.delta import LivePostings
from semsearch.stores.fts5_tokens import PieceTokenizer
from semsearch.stores.record_terms import best_chunk
from semsearch.stores.sqlite.fts_stats import fts_state
from semsearch.stores.sqlite.keyword import TermCounts
from semsearch.stores.sqlite.schema import fts_table
from semsearch.stores.sqlite.sql import Rows, batches, marks

__all__ = ["SHOWN_RECORDS", "ShownChunks", "best_chunks_from_text"]

#: Records whose chunks :class:`ShownChunks` keeps, per collection.
SHOWN_RECORDS = 1024


class ShownChunks:
    """The chunks (id, text) of the records whose best chunk was chosen last, for one state of a
    collection's chunk-level FTS5 table (:func:`~semsearch.stores.sqlite.fts_stats.fts_state`).

    A server shows the same records again and again; reading all their chunks' text again was a
    quarter of picking the best ones. Every write to the chunks writes that table, which
    changes its stamp, and a new stamp empties the store: the chunks kept are those of the
    snapshot the search reads. At most :data:`SHOWN_RECORDS` records, the oldest dropped.
    Thread-safe.
    """

    def __init__(self, capacity: int = SHOWN_RECORDS) -> None:
        self.capacity = capacity
        self._stamp: str | None = None
        self._records: OrderedDict[str, list[tuple[int, str]]] = OrderedDict()
        self._lock = threading.Lock()

    def read(
        self, rows: Rows, cid: int, stamp: str, record_ids: Sequence[str]
    ) -> dict[str, list[tuple[int, str]]]:
        """``{record id: [(chunk id, text), ...]}`` in chunk id order, for the records of
        ``record_ids`` that have chunks, in the snapshot ``rows`` reads (whose table stamp is
        ``stamp``); those not kept are read with one query."""
        with self._lock:
            if stamp != self._stamp:
                self._records.clear()
                self._stamp = stamp
            kept = {r: self._records[r] for r in record_ids if r in self._records}
        missing = [r for r in dict.fromkeys(record_ids) if r not in kept]
        if missing:
            found: dict[str, list[tuple[int, str]]] = {r: [] for r in missing}
            for record_id, chunk_id, text in _chunks(rows, cid, missing):
                found[record_id].append((chunk_id, text))
            kept.update(found)
        with self._lock:
            if stamp == self._stamp:
                for r in record_ids:
                    self._records[r] = kept[r]
                    self._records.move_to_end(r)
                while len(self._records) > self.capacity:
                    self._records.popitem(last=False)
        return {r: kept[r] for r in record_ids if kept[r]}


def best_chunks_from_text(
    rows: Rows,
    cid: int,
    tokenizer: PieceTokenizer,
    postings: LivePostings,
    clauses: Sequence[str],
    record_ids: Sequence[str],
    counts: TermCounts,
    shown: ShownChunks | None = None,
) -> dict[str, int]:
    """``{record id: chunk id}``: each record's chunk with the highest chunk-level FTS5 BM25
    for the quoted FTS5 ``clauses`` (``porter`` collections: the query's scoring clauses),
    ties to the first chunk; records with no chunk matching on its own are left out, except
    that a record of one chunk always gets it (the chunk it shows either way). Same answer as
    ``semsearch.stores.sqlite.keyword.best_chunks`` where it has one. ``shown``: the
    collection's kept chunk texts (else they are read)."""
    clauses = list(clauses)
    if not clauses or not record_ids:
        return {}
    stamp, n_chunks, totals = fts_state(rows, fts_table(cid))
    if n_chunks <= 0:
        return {}
    inner = {c: c[1:-1].replace('""', '"') for c in clauses}
    phrases = {c: tuple(tokenizer.terms(t)) for c, t in inner.items()}
    hits = {}  # n(q): a term's from the sidecar, else (a phrase, or caught up) by FTS5, cached
    for c, t in phrases.items():
        found = postings.chunk_hits(t[0]) if len(t) == 1 else None
        hits[c] = found if found is not None else counts.hits(rows, cid, "chunk", c)
    if shown is not None:
        by_record = shown.read(rows, cid, stamp, record_ids)
    else:
        by_record = {}
        for record_id, chunk_id, chunk_text in _chunks(rows, cid, record_ids):
            by_record.setdefault(record_id, []).append((chunk_id, chunk_text))
    avgdl = (sum(totals) / n_chunks) or 1.0
    terms, n = [phrases[c] for c in clauses], [hits[c] for c in clauses]
    # a record of one chunk shows it either way: nothing to score
    scored = [text for pairs in by_record.values() if len(pairs) > 1 for _, text in pairs]
    bags_of = iter(tokenizer.shown_counts_of(scored))
    chosen: dict[str, int | None] = {}
    for record_id, pairs in by_record.items():
        if len(pairs) == 1:
            chosen[record_id] = pairs[0][0]
            continue
        kept = [next(bags_of) for _ in pairs]
        tokens = [(chunk_id, kept[i][0]) for i, (chunk_id, _) in enumerate(pairs)]
        bags = [bag for _, bag in kept]
        chosen[record_id] = best_chunk(tokens, terms, n, n_chunks, avgdl, bags)
    return {r: chunk for r, chunk in chosen.items() if chunk is not None}


def _chunks(rows: Rows, cid: int, record_ids: Sequence[str]) -> list[tuple[str, int, str]]:
    """(record id, chunk id, chunk text) of the records' chunks, chunk ids ascending."""
    out: list[tuple[str, int, str]] = []
    for batch in batches(list(record_ids)):
        out += [
            (r[0], int(r[1]), r[2])
            for r in rows(
                "SELECT r.id, k.id, k.text FROM records r JOIN chunks k ON k.record_rowid = r.rowid "
                f"WHERE r.collection_id = ? AND r.id IN ({marks(batch)}) ORDER BY k.id",
                (cid, *batch),
            )
        ]
    return out
