"""Batch write helpers for the PostgreSQL store, run inside its write transaction.

Same semantics as the SQLite store (:mod:`semsearch.stores.sqlite.writes`): a record whose content
hash is unchanged is left alone; a changed record keeps its chunk rows when only non-text fields
changed; otherwise its chunks are replaced, and every new chunk whose content hash already has a
vector in the collection reuses it instead of being re-embedded. Statements are batched
(``executemany`` runs in pipeline mode), so a batch costs a handful of round trips.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from semsearch.stores.base import PendingChunk, RecordWrite, WriteResult
from semsearch.stores.postgres.sql import Tables, column
from semsearch.stores.write_rules import chunk_key

__all__ = ["write_batch"]

#: The columns of :func:`~semsearch.stores.write_rules.chunk_key`, in its order.
_CHUNK_KEY = "content_hash, ordinal, char_start, char_end, line_start, line_end"


def write_batch(
    cur: Any, t: Tables, fields: Sequence[str], records: Sequence[RecordWrite], out: WriteResult
) -> list[tuple[int, RecordWrite]]:
    """Insert or update ``records`` and their chunks; append chunks to embed to ``out.pending``.

    Returns:
        (row id, record) of each record written (new or changed; unchanged ones are skipped),
        for the keyword statistics.
    """
    if not records:
        return []
    cur.execute(
        f"SELECT id, rid, content_hash FROM {t.records} WHERE id = ANY(%s)",
        ([r.id for r in records],),
    )
    known = {row[0]: (int(row[1]), row[2]) for row in cur.fetchall()}
    changed = [r for r in records if known.get(r.id, (0, None))[1] != r.content_hash]
    out.unchanged += len(records) - len(changed)
    if not changed:
        return []
    rids = _upsert_rows(cur, t, fields, changed)
    updated = {rids[r.id]: r for r in changed if r.id in known}
    out.added += len(changed) - len(updated)
    out.updated += len(updated)
    same = _same_chunks(cur, t, updated)
    replace = [r for r in changed if rids[r.id] not in same]
    _replace_chunks(cur, t, rids, replace, [rid for rid in updated if rid not in same], out)
    return [(rids[r.id], r) for r in changed]


def _upsert_rows(
    cur: Any, t: Tables, fields: Sequence[str], records: Sequence[RecordWrite]
) -> dict[str, int]:
    cols = ", ".join(column(f) for f in fields)
    marks = ", ".join("%s" for _ in fields)
    sets = ", ".join(f"{column(f)} = EXCLUDED.{column(f)}" for f in fields)
    sql = (
        f"INSERT INTO {t.records} (id, fields, text, content_hash{', ' + cols if cols else ''}) "
        # no cast: the text fits the json column and an older table's jsonb one
        f"VALUES (%s, %s, %s, %s{', ' + marks if marks else ''}) "
        "ON CONFLICT (id) DO UPDATE SET fields = EXCLUDED.fields, text = EXCLUDED.text, "
        f"content_hash = EXCLUDED.content_hash, updated_at = now(){', ' + sets if sets else ''} "
        "RETURNING id, rid"
    )
    params = [
        (
            r.id,
            json.dumps(r.fields, ensure_ascii=False, sort_keys=True),
            r.text,
            r.content_hash,
            *(r.attrs.get(f) for f in fields),
        )
        for r in records
    ]
    cur.executemany(sql, params, returning=True)
    rids: dict[str, int] = {}
    while True:
        row = cur.fetchone()
        rids[row[0]] = int(row[1])
        if not cur.nextset():
            break
    return rids


def _same_chunks(cur: Any, t: Tables, updated: dict[int, RecordWrite]) -> set[int]:
    """Row ids of updated records whose chunks are unchanged (only non-text fields changed)."""
    if not updated:
        return set()
    cur.execute(
        f"SELECT record_rid, {_CHUNK_KEY} FROM {t.chunks} WHERE record_rid = ANY(%s) "
        "ORDER BY record_rid, ordinal",
        (list(updated),),
    )
    stored: dict[int, list[tuple[Any, ...]]] = {rid: [] for rid in updated}
    for row in cur.fetchall():
        stored[int(row[0])].append(tuple(row[1:]))
    return {rid for rid, rec in updated.items() if stored[rid] == chunk_key(rec)}


def _replace_chunks(
    cur: Any,
    t: Tables,
    rids: dict[str, int],
    records: Sequence[RecordWrite],
    old_rids: list[int],
    out: WriteResult,
) -> None:
    """Insert new chunks, reuse vectors by content hash, then drop the replaced chunks."""
    items = [(rids[r.id], c) for r in records for c in r.chunks]
    if items:
        cur.executemany(
            f"INSERT INTO {t.chunks} (record_rid, ordinal, text, char_start, char_end, "
            "heading_path, line_start, line_end, content_hash) "
            "VALUES (%s, %s, %s, %s, %s, %s::jsonb, %s, %s, %s) RETURNING id",
            [
                (rid, c.chunk.ordinal, c.chunk.text, c.chunk.char_start, c.chunk.char_end,
                 json.dumps(list(c.chunk.heading_path), ensure_ascii=False),
                 c.chunk.line_start, c.chunk.line_end, c.content_hash)
                for rid, c in items
            ],
            returning=True,
        )  # fmt: skip
        new_ids = _returned_ids(cur)
        reused = _reuse_vectors(cur, t, new_ids, sorted({c.content_hash for _, c in items}))
        out.reused += len(reused)
        owners = [r.id for r in records for _ in r.chunks]
        out.pending += [
            PendingChunk(cid, c.embed_text, owner)
            for cid, (_, c), owner in zip(new_ids, items, owners, strict=True)
            if cid not in reused
        ]
    else:
        new_ids = []
    if old_rids:
        cur.execute(
            f"DELETE FROM {t.chunks} WHERE record_rid = ANY(%s) AND NOT (id = ANY(%s))",
            (old_rids, new_ids),
        )


def _returned_ids(cur: Any) -> list[int]:
    ids: list[int] = []
    while True:
        ids.append(int(cur.fetchone()[0]))
        if not cur.nextset():
            break
    return ids


def _reuse_vectors(cur: Any, t: Tables, new_ids: list[int], hashes: list[str]) -> set[int]:
    """Copy an embedded chunk's vector onto new chunks with the same content hash."""
    cur.execute(
        f"UPDATE {t.chunks} AS k SET embedding = src.embedding, status = 'embedded', error = NULL "
        f"FROM (SELECT DISTINCT ON (content_hash) content_hash, embedding FROM {t.chunks} "
        "WHERE status = 'embedded' AND content_hash = ANY(%s) ORDER BY content_hash, id) AS src "
        "WHERE k.id = ANY(%s) AND k.content_hash = src.content_hash RETURNING k.id",
        (hashes, new_ids),
    )
    return {int(row[0]) for row in cur.fetchall()}
