"""BM25 over whole records in PostgreSQL: the term statistics, kept in the record's transaction.

Keyword search ranks records by semsearch's BM25 (semsearch/keyword_query.py), the same on every
store. On PostgreSQL the statistics it needs live in four tables per collection, beside the
records and chunks tables, and change in the same transaction as the records they count:

- ``semsearch_c<id>_kw_terms``: one row per (term, record): ``tf``, the weighted frequency
  (TITLE_WEIGHT per title occurrence, 1 per body one); ``len``, the record's length in tokens
  (BM25's ``|d|``, kept on every row so scoring reads one table); ``chunks``, how many of the
  record's chunks hold the term; ``title_pos`` and ``body_pos``, the term's positions in each
  column (NULL when none), for phrase clauses. Primary key (term, record_rid) carrying ``tf``
  and ``len`` (``INCLUDE``), so scoring a term reads its postings from the index alone
  (an index-only scan: 4 ms against 22 ms through the heap for a SciFact claim); an index on
  record_rid for rewrites and deletes.
- ``semsearch_c<id>_kw_df``: records (``df``, BM25's ``n(q)``) and chunks (``chunk_df``)
  holding each term; a term no record or chunk holds has no row.
- ``semsearch_c<id>_kw_docs``: each record's ``len``, its ``chunks`` and their tokens.
- ``semsearch_c<id>_kw_stats``: one row, ``records`` (N), ``len`` (total length; avgdl is
  len / records), ``chunks`` and ``chunk_len`` (for the chunk a hit shows). It is created
  last: a collection has this layout exactly when it has this table.

Terms are FTS5's ``porter unicode61 remove_diacritics 2`` terms of the SQLite store's title and
body columns (semsearch/stores/record_terms.py), so every store counts the same terms; a term
longer than :data:`MAX_TERM_CHARS` characters is not indexed (it never matches; it still
counts in the record's length).

Exact under concurrent writers: every write transaction of a collection first locks the
collection's row in ``semsearch_collections`` (``SELECT ... FOR UPDATE``, the store's
``_need_tables``), so writers of one collection take their turns, and they change ``kw_df``
by increments, in term order, after that lock: one lock order, no deadlock, and no lost
update. Tables written by earlier versions (no ``kw_stats``) gain these tables on their first
write or ``semsearch compact`` (:func:`ensure_bm25`), in one transaction: a crash in the middle
leaves the old layout as it was.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from semsearch.stores.fts5_tokens import PieceTokenizer
from semsearch.stores.postgres.sql import Tables
from semsearch.stores.record_terms import RecordTerms, record_body, record_terms, record_title

__all__ = [
    "MAX_TERM_CHARS",
    "Count",
    "IndexRow",
    "RecordCounts",
    "count_rows",
    "create_bm25_tables",
    "drop_bm25_tables",
    "ensure_bm25",
    "has_bm25",
    "index_records",
    "unindex_records",
]

#: Terms longer than this (characters) are not indexed (FTS5 keeps longer tokens whole; a
#: btree entry holds at most 2,704 bytes); they still count in the record's length.
MAX_TERM_CHARS = 512
#: Records read per page while an older collection gains the tables.
BACKFILL_PAGE = 1000


@dataclass(frozen=True)
class IndexRow:
    """One record to index: its row id, fields (for the title), text and chunk texts."""

    rid: int
    fields: Mapping[str, Any]
    text: str
    chunks: Sequence[str]


@dataclass(frozen=True)
class RecordCounts:
    """One record's rows in the tables.

    Attributes:
        rid: the record's row id.
        terms: its terms (tf, length, positions) without terms over MAX_TERM_CHARS.
        chunk_hits: term -> how many of its chunks hold the term (terms of ``terms`` only).
        chunks: its chunks; chunk_len: their tokens.
    """

    rid: int
    terms: RecordTerms
    chunk_hits: dict[str, int]
    chunks: int
    chunk_len: int


#: Counts rows with the store's tokenizer (which is not thread-safe: under the store's lock).
Count = Callable[[Sequence[IndexRow]], list[RecordCounts]]


def count_rows(tokenizer: PieceTokenizer, rows: Sequence[IndexRow]) -> list[RecordCounts]:
    """The :class:`RecordCounts` of each row (no database access)."""
    out = []
    for row in rows:
        title = record_title(row.fields, row.text)
        rt = record_terms(tokenizer, title, record_body(row.fields, row.text))
        if any(len(term) > MAX_TERM_CHARS for term in rt.tf):
            keep = [term for term in rt.tf if len(term) <= MAX_TERM_CHARS]
            rt = RecordTerms(
                {k: rt.tf[k] for k in keep}, rt.length, rt.title_length,
                {k: rt.positions[k] for k in keep},
            )  # fmt: skip
        hits: Counter[str] = Counter()
        chunk_len = 0
        for text in row.chunks:
            found = tokenizer.terms(text)
            chunk_len += len(found)
            hits.update(term for term in set(found) if term in rt.tf)
        out.append(RecordCounts(row.rid, rt, dict(hits), len(row.chunks), chunk_len))
    return out


def has_bm25(conn: Any, t: Tables) -> bool:
    """True when the collection has the BM25 tables (its ``kw_stats`` table exists)."""
    return bool(conn.execute("SELECT to_regclass(%s) IS NOT NULL", (t.kw_stats,)).fetchone()[0])


def create_bm25_tables(conn: Any, t: Tables) -> None:
    """Create the four tables, empty, ``kw_stats`` last (inside a write transaction)."""
    conn.execute(
        f"""CREATE TABLE {t.kw_terms} (
            term text COLLATE "C" NOT NULL,
            record_rid bigint NOT NULL,
            tf real NOT NULL,
            len integer NOT NULL,
            chunks integer NOT NULL,
            title_pos integer[],
            body_pos integer[],
            PRIMARY KEY (term, record_rid) INCLUDE (tf, len))"""
    )
    conn.execute(f"CREATE INDEX {t.kw_terms}_record ON {t.kw_terms} (record_rid)")
    conn.execute(
        f'CREATE TABLE {t.kw_df} (term text COLLATE "C" PRIMARY KEY, '
        "df integer NOT NULL, chunk_df integer NOT NULL)"
    )
    conn.execute(
        f"CREATE TABLE {t.kw_docs} (record_rid bigint PRIMARY KEY, len integer NOT NULL, "
        "chunks integer NOT NULL, chunk_len bigint NOT NULL)"
    )
    conn.execute(
        f"CREATE TABLE {t.kw_stats} (records bigint NOT NULL, len bigint NOT NULL, "
        "chunks bigint NOT NULL, chunk_len bigint NOT NULL)"
    )
    conn.execute(f"INSERT INTO {t.kw_stats} VALUES (0, 0, 0, 0)")


def drop_bm25_tables(conn: Any, t: Tables) -> None:
    """Drop the four tables (with the collection's other tables)."""
    for table in (t.kw_stats, t.kw_docs, t.kw_df, t.kw_terms):
        conn.execute(f"DROP TABLE IF EXISTS {table}")


def ensure_bm25(conn: Any, t: Tables, count: Count) -> bool:
    """Give a collection written by an earlier version the BM25 tables, filled from its
    records, inside the caller's write transaction (which holds the collection's row lock).

    Returns:
        True when it created them, False when they existed.
    """
    if has_bm25(conn, t):
        return False
    create_bm25_tables(conn, t)
    last = 0
    with conn.cursor() as cur:
        while True:
            cur.execute(
                f"SELECT r.rid, r.fields, r.text, coalesce(array_agg(k.text ORDER BY k.ordinal) "
                f"FILTER (WHERE k.id IS NOT NULL), '{{}}') FROM {t.records} r "
                f"LEFT JOIN {t.chunks} k ON k.record_rid = r.rid WHERE r.rid > %s "
                "GROUP BY r.rid ORDER BY r.rid LIMIT %s",
                (last, BACKFILL_PAGE),
            )
            page = [IndexRow(int(r[0]), r[1], r[2], list(r[3])) for r in cur.fetchall()]
            if not page:
                return True
            index_records(cur, t, count(page))
            last = page[-1].rid


def unindex_records(cur: Any, t: Tables, rids: Sequence[int]) -> None:
    """Take records out of the statistics (before they are rewritten or deleted)."""
    _apply(cur, t, _removed(cur, t, rids), [])


def index_records(
    cur: Any, t: Tables, new: Sequence[RecordCounts], replaced: Sequence[int] = ()
) -> None:
    """Count ``new`` records in the statistics, after taking out the records at ``replaced``
    (row ids: their earlier versions); inside the write transaction of those records."""
    old = _removed(cur, t, replaced)
    if new:
        with cur.copy(
            f"COPY {t.kw_terms} (term, record_rid, tf, len, chunks, title_pos, body_pos) FROM STDIN"
        ) as copy:
            for rc in new:
                rt = rc.terms
                for term, tf in rt.tf.items():
                    title = [p for p in rt.positions[term] if p < rt.title_length]
                    body = [p for p in rt.positions[term] if p >= rt.title_length]
                    copy.write_row(
                        (term, rc.rid, tf, rt.length, rc.chunk_hits.get(term, 0),
                         title or None, body or None)
                    )  # fmt: skip
        with cur.copy(f"COPY {t.kw_docs} (record_rid, len, chunks, chunk_len) FROM STDIN") as copy:
            for rc in new:
                copy.write_row((rc.rid, rc.terms.length, rc.chunks, rc.chunk_len))
    _apply(cur, t, old, new)


@dataclass
class _Delta:
    """Counts taken out of the statistics: per term (records, chunks), and the totals."""

    df: Counter[str] = field(default_factory=Counter)
    chunk_df: Counter[str] = field(default_factory=Counter)
    records: int = 0
    length: int = 0
    chunks: int = 0
    chunk_len: int = 0


def _removed(cur: Any, t: Tables, rids: Sequence[int]) -> _Delta:
    """Delete the records' rows from ``kw_terms`` and ``kw_docs``; what they counted."""
    out = _Delta()
    if not rids:
        return out
    cur.execute(
        f"DELETE FROM {t.kw_terms} WHERE record_rid = ANY(%s) RETURNING term, chunks", (list(rids),)
    )
    for term, chunks in cur.fetchall():
        out.df[term] += 1
        out.chunk_df[term] += int(chunks)
    cur.execute(
        f"DELETE FROM {t.kw_docs} WHERE record_rid = ANY(%s) RETURNING len, chunks, chunk_len",
        (list(rids),),
    )
    for length, chunks, chunk_len in cur.fetchall():
        out.records += 1
        out.length += int(length)
        out.chunks += int(chunks)
        out.chunk_len += int(chunk_len)
    return out


def _apply(cur: Any, t: Tables, old: _Delta, new: Sequence[RecordCounts]) -> None:
    """Change ``kw_df`` by the net counts per term (in term order) and ``kw_stats`` by the
    totals: ``new`` records in, ``old`` out."""
    df: Counter[str] = Counter()
    chunk_df: Counter[str] = Counter()
    for rc in new:
        df.update(rc.terms.tf.keys())
        chunk_df.update(rc.chunk_hits)
    df.subtract(old.df)
    chunk_df.subtract(old.chunk_df)
    touched = sorted(term for term in set(df) | set(chunk_df) if df[term] or chunk_df[term])
    if touched:
        cur.execute(
            f"INSERT INTO {t.kw_df} AS d (term, df, chunk_df) "
            "SELECT * FROM unnest(%s::text[], %s::int[], %s::int[]) ORDER BY 1 "
            "ON CONFLICT (term) DO UPDATE SET df = d.df + EXCLUDED.df, "
            "chunk_df = d.chunk_df + EXCLUDED.chunk_df",
            (touched, [df[term] for term in touched], [chunk_df[term] for term in touched]),
        )
        fell = [term for term in touched if df[term] < 0 or chunk_df[term] < 0]
        if fell:
            cur.execute(
                f"DELETE FROM {t.kw_df} WHERE term = ANY(%s) AND df <= 0 AND chunk_df <= 0",
                (fell,),
            )
    cur.execute(
        f"UPDATE {t.kw_stats} SET records = records + %s, len = len + %s, "
        "chunks = chunks + %s, chunk_len = chunk_len + %s",
        (
            len(new) - old.records,
            sum(rc.terms.length for rc in new) - old.length,
            sum(rc.chunks for rc in new) - old.chunks,
            sum(rc.chunk_len for rc in new) - old.chunk_len,
        ),
    )
