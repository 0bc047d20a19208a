"""Record-level keyword index of the SQLite store: one FTS5 row per record, title and body.

Keyword search ranks records by BM25 over their whole text (Robertson and Zaragoza 2009),
not by their best chunk: a record whose query words fall in different chunks is scored as one
document, as BM25 means it. On BEIR SciFact (docs/benchmarks.md, "keyword-record") this
scores nDCG@10 0.6887 against 0.6807 for the best chunk, and weighting the title column
(:data:`TITLE_WEIGHT`) 0.6959. The chunk-level FTS5 table still picks which chunk a hit shows.

Layout: a contentless FTS5 table ``fts_rec_<collection id>`` (``content=''``: it keeps only
the index, the text stays in ``records``), rowid = the record's rowid, two columns:

- ``title``: the record's ``title`` field, else its ``name`` field, when it is a string and
  the record's text opens with it (text templates often start with the name; BEIR records are
  title + text). A title the text does not hold (front matter, say) is left out: keyword
  search matches a record's text only;
- ``body``: the rest of the record's text, so that the title's words are counted once, in the
  title column, weighted by :data:`TITLE_WEIGHT`.

Both are SQL expressions over the ``records`` row (:data:`TITLE_SQL`, :data:`BODY_SQL`), so the
values indexed on insert and the values given to FTS5's ``delete`` command always agree.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Sequence
from typing import Any

from semsearch.stores.sqlite.record_changes import log_records
from semsearch.stores.sqlite.sql import batches, marks

__all__ = [
    "BODY_SQL",
    "TITLE_SQL",
    "create_record_fts",
    "delete_record_fts",
    "has_record_fts",
    "index_record_fts",
    "record_fts_table",
]

_FIELD_TITLE = (
    "COALESCE(CASE WHEN json_type(r.fields, '$.title') = 'text' "
    "THEN json_extract(r.fields, '$.title') END, "
    "CASE WHEN json_type(r.fields, '$.name') = 'text' "
    "THEN json_extract(r.fields, '$.name') END, '')"
)
_OPENS_WITH_TITLE = (
    f"({_FIELD_TITLE} <> '' AND substr(r.text, 1, length({_FIELD_TITLE})) = {_FIELD_TITLE})"
)
#: The title column's value for the ``records`` row aliased ``r``: its title when its text
#: opens with it, else '' (a title kept only in a field, e.g. front matter, is not text).
TITLE_SQL = f"CASE WHEN {_OPENS_WITH_TITLE} THEN {_FIELD_TITLE} ELSE '' END"
#: The body column's value: ``r.text`` without that leading title.
BODY_SQL = (
    f"CASE WHEN {_OPENS_WITH_TITLE} "
    f"THEN ltrim(substr(r.text, length({_FIELD_TITLE}) + 1), char(32, 9, 10, 13)) "
    "ELSE r.text END"
)


def record_fts_table(collection_id: int) -> str:
    """Name of a collection's record-level FTS5 table (the id is an int: safe to inline)."""
    return f"fts_rec_{int(collection_id)}"


def has_record_fts(rows: Callable[[str, Sequence[Any]], list[Any]], collection_id: int) -> bool:
    """True when the collection has its record-level table (files written before format 2
    have none until their first write migrates them). ``rows`` runs one SELECT."""
    found = rows(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?",
        (record_fts_table(collection_id),),
    )
    return bool(found)


def create_record_fts(conn: sqlite3.Connection, collection_id: int, tokenize: str) -> None:
    """Create the table if missing and index every record of the collection (write path)."""
    table = record_fts_table(collection_id)
    if has_record_fts(lambda sql, params: conn.execute(sql, params).fetchall(), collection_id):
        return
    conn.execute(
        f"CREATE VIRTUAL TABLE {table} USING fts5(title, body, content='', tokenize='{tokenize}')"
    )
    conn.execute(
        f"INSERT INTO {table} (rowid, title, body) SELECT r.rowid, {TITLE_SQL}, {BODY_SQL} "
        "FROM records r WHERE r.collection_id = ?",
        (collection_id,),
    )


def index_record_fts(conn: sqlite3.Connection, collection_id: int, rowid: int) -> None:
    """Index one record row as it is now (after its insert or update), and log it
    (stores/sqlite/record_changes.py)."""
    conn.execute(
        f"INSERT INTO {record_fts_table(collection_id)} (rowid, title, body) "
        f"SELECT r.rowid, {TITLE_SQL}, {BODY_SQL} FROM records r WHERE r.rowid = ?",
        (rowid,),
    )
    log_records(conn, collection_id, [rowid])


def delete_record_fts(conn: sqlite3.Connection, collection_id: int, rowids: Sequence[int]) -> None:
    """Remove records from the index, and log them (stores/sqlite/record_changes.py); call BEFORE
    their row is changed or deleted (a contentless table's ``delete`` needs the values that
    were indexed)."""
    table = record_fts_table(collection_id)
    for batch in batches(list(rowids)):
        conn.execute(
            f"INSERT INTO {table} ({table}, rowid, title, body) "
            f"SELECT 'delete', r.rowid, {TITLE_SQL}, {BODY_SQL} FROM records r "
            f"WHERE r.rowid IN ({marks(batch)})",
            batch,
        )
    log_records(conn, collection_id, rowids)
