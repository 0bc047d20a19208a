"""Helpers for the PostgreSQL BM25 tests: a recount of the statistics from the records, and the
layout collections had before the BM25 tables."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable
from typing import Any

from semsearch.stores.fts5_tokens import PORTER, PieceTokenizer
from semsearch.stores.record_terms import record_body, record_terms, record_title

Raw = Callable[..., list[tuple[Any, ...]]]


def recount(raw: Raw, cid: int = 1) -> dict[str, Any]:
    """N, total length, lengths per record id and df per term, counted from the records' text
    (the SQLite store's title and body columns, FTS5's terms), nothing read from the BM25
    tables."""
    tok = PieceTokenizer(PORTER)
    df: Counter[str] = Counter()
    lengths: dict[str, int] = {}
    for rid, fields, text in raw(f"SELECT id, fields, text FROM semsearch_c{cid}_records"):
        fields = json.loads(fields) if isinstance(fields, str) else fields
        terms = record_terms(tok, record_title(fields, text), record_body(fields, text))
        df.update(terms.tf.keys())
        lengths[rid] = terms.length
    tok.close()
    return {"N": len(lengths), "length": sum(lengths.values()), "lengths": lengths, "df": dict(df)}


def stored(raw: Raw, cid: int = 1) -> dict[str, Any]:
    """The same numbers as :func:`recount`, read from the BM25 tables."""
    ((records, length, _, _),) = raw(f"SELECT * FROM semsearch_c{cid}_kw_stats")
    lengths = dict(
        raw(
            f"SELECT r.id, d.len FROM semsearch_c{cid}_kw_docs d "
            f"JOIN semsearch_c{cid}_records r ON r.rid = d.record_rid"
        )
    )
    df = dict(raw(f"SELECT term, df FROM semsearch_c{cid}_kw_df WHERE df > 0"))
    return {"N": records, "length": length, "lengths": lengths, "df": df}


def postings_agree(raw: Raw, cid: int = 1) -> bool:
    """kw_df agrees with a count of kw_terms rows, term by term (records and chunks)."""
    rows = raw(
        f"SELECT count(*) FROM (SELECT term, count(*) AS n, sum(chunks) AS c "
        f"FROM semsearch_c{cid}_kw_terms GROUP BY term) t "
        f"FULL JOIN semsearch_c{cid}_kw_df d USING (term) "
        "WHERE t.n IS DISTINCT FROM d.df OR t.c IS DISTINCT FROM d.chunk_df"
    )
    return rows[0][0] == 0


def make_old_layout(raw: Raw, cid: int = 1) -> None:
    """Turn collection ``cid`` back into the layout of semsearch before the BM25 tables: no
    ``kw_*`` tables, and the chunks' generated ``tsv`` column with its GIN index (the DDL that
    version ran)."""
    for table in ("kw_stats", "kw_docs", "kw_df", "kw_terms"):
        raw(f"DROP TABLE semsearch_c{cid}_{table}")
    raw(
        f"ALTER TABLE semsearch_c{cid}_chunks ADD COLUMN tsv tsvector GENERATED ALWAYS AS "
        "(to_tsvector('english'::regconfig, text)) STORED"
    )
    raw(f"CREATE INDEX semsearch_c{cid}_chunks_tsv ON semsearch_c{cid}_chunks USING gin (tsv)")


def has_bm25_tables(raw: Raw, cid: int = 1) -> bool:
    return bool(raw(f"SELECT to_regclass('semsearch_c{cid}_kw_stats') IS NOT NULL")[0][0])
