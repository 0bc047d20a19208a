"""The rows a write of the Milvus store stores, built from ``RecordWrite`` values (pure: no
Milvus call): chunk rows with their keyword terms (and a reused vector where there is one),
each record's head row carrying its body (cut into part rows when long), and the sizes refused
before anything is written. The columns are documented in :mod:`semsearch.stores.milvus.layout`
(layout 3; :func:`record_rows` builds layout 2's ``*_records`` rows, for tests that build
layout-2 collections).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from semsearch.errors import InvalidRecord
from semsearch.stores.base import ChunkWrite, PendingChunk, RecordWrite, WriteResult
from semsearch.stores.milvus import layout as lay
from semsearch.stores.milvus.expr import column
from semsearch.stores.milvus.keyword_columns import RecordKeyword, encode, folded, record_keyword

__all__ = [
    "NOT_HEAD",
    "NewChunk",
    "body_rows",
    "check_sizes",
    "chunk_rows",
    "head_rows",
    "new_chunks",
    "record_rows",
    "ticket_of",
]

#: A chunk of a changed record: (its Milvus chunk id, the record, the chunk).
NewChunk = tuple[int, RecordWrite, ChunkWrite]
#: The record columns of a chunk-part row that is not a head row (layout 4).
NOT_HEAD = {"body": "", "record_hash": "", "nparts": 0, "kw": ""}


def _ticket(r: RecordWrite, c: ChunkWrite) -> int:
    ch = c.chunk
    return lay.chunk_id(r.id, ch.ordinal, ch.char_start, ch.char_end, c.content_hash)


def new_chunks(changed: Sequence[RecordWrite]) -> list[NewChunk]:
    """Every chunk of the ``changed`` records, in order, with its Milvus chunk id (layout 3:
    the head id for the ordinal-0 chunk, else the content-derived :func:`layout.chunk_id`)."""
    return [
        (lay.head_id(r.id) if c.chunk.ordinal == 0 else _ticket(r, c), r, c)
        for r in changed
        for c in r.chunks
    ]


def ticket_of(row: dict[str, Any]) -> int:
    """The content-derived chunk id of a stored chunk row (record id, ordinal, offsets and
    content hash; the ``loc`` column holds the offsets): the id handed out for it."""
    start, end = json.loads(row["loc"])[:2]
    return lay.chunk_id(row["record_id"], int(row["ordinal"]), start, end, row["content_hash"])


def _attrs(fields: list[dict[str, Any]], values: dict[str, Any]) -> dict[str, Any]:
    """The ``f_*`` columns of the declared ``fields`` (None where ``values`` has none)."""
    return {column(f["name"]): values.get(f["name"]) for f in fields}


def check_sizes(records: Sequence[RecordWrite]) -> None:
    """Refuse values larger than a Milvus VARCHAR, and lists longer than its ARRAY columns
    hold, before anything is written."""
    for r in records:
        too_big = len(r.id.encode()) > lay.VARCHAR_MAX - 16 or any(
            len(c.chunk.text.encode()) > lay.VARCHAR_MAX for c in r.chunks
        )
        too_big = too_big or any(
            isinstance(v, str) and len(v.encode()) > lay.VARCHAR_MAX for v in r.attrs.values()
        )
        long_list = next(
            (k for k, v in r.attrs.items() if isinstance(v, list) and len(v) > lay.LIST_MAX_ITEMS),
            None,
        )
        if long_list is not None:
            raise InvalidRecord(
                f"record {r.id[:60]!r}: list field {long_list!r} has {len(r.attrs[long_list])} "
                f"items; a Milvus list column holds at most {lay.LIST_MAX_ITEMS}",
                hint="keep fewer items (e.g. the most relevant tags), or keep the list in an "
                "undeclared field; nothing was written",
            )
        if too_big:
            raise InvalidRecord(
                f"record {r.id[:60]!r} has an id, a declared string field or a chunk over "
                f"{lay.VARCHAR_MAX} bytes, Milvus' VARCHAR limit",
                hint="shorten it, or split the text with spaces so the chunker can cut it; "
                "nothing was written",
            )


def record_rows(
    fields: list[dict[str, Any]], r: RecordWrite, chunk_ids: list[int]
) -> list[dict[str, Any]]:
    """The ``*_records`` rows of ``r``: its body ``{"fields", "text", "chunks"}`` as JSON, cut
    into parts of ``BODY_PART_CHARS``, the declared fields on part 0 only."""
    doc = {"fields": r.fields, "text": r.text, "chunks": chunk_ids}
    body = json.dumps(doc, ensure_ascii=False, sort_keys=True)
    size = lay.BODY_PART_CHARS
    pieces = [body[i : i + size] for i in range(0, len(body), size)] or [""]
    rows = []
    for part, piece in enumerate(pieces):
        attrs = _attrs(fields, r.attrs if part == 0 else {})
        rows.append(
            {
                "pk": lay.record_pk(part, r.id),
                "record_id": r.id,
                "part": part,
                "nparts": len(pieces),
                "content_hash": r.content_hash,
                "body": piece,
                "_v": lay.DUMMY_VECTOR,
                **attrs,
            }
        )
    return rows


def head_rows(
    fields: list[dict[str, Any]],
    r: RecordWrite,
    chunk_ids: list[int],
    chunks: dict[int, dict[str, Any]],
) -> tuple[list[dict[str, Any]], RecordKeyword]:
    """Layout 4: make ``r``'s head row (with its keyword terms, ``kw``) and return its
    further body-part rows (see :func:`body_rows`) and its terms."""
    doc = {"fields": r.fields, "text": r.text, "chunks": chunk_ids}
    keyword = record_keyword(
        r.fields, r.text, [(cid, c.chunk) for cid, c in zip(chunk_ids, r.chunks, strict=True)]
    )
    parts = body_rows(r.id, r.content_hash, doc, _attrs(fields, r.attrs), chunks, encode(keyword))
    return parts, keyword


def body_rows(
    record_id: str,
    record_hash: str,
    doc: dict[str, Any],
    attrs: dict[str, Any],
    chunks: dict[int, dict[str, Any]],
    kw: str,
) -> list[dict[str, Any]]:
    """Layout 4: put a record's body ``doc`` (``{"fields", "text", "chunks"}``) and keyword
    terms ``kw`` (:func:`~semsearch.stores.milvus.keyword_columns.encode`) in its head row and
    return its further body-part rows.

    The body (JSON) is cut into pieces of ``BODY_PART_CHARS``; piece 0 goes into the head row
    (``chunks[head_id]``, the ordinal-0 chunk's row, updated in place; or, for a record without
    chunks, a new row of status ``RECORD`` with the ``f_*`` columns ``attrs``, added to
    ``chunks``) with ``record_hash`` and ``nparts``; pieces 1.. become part rows (status
    ``RECORD``, ordinal ``-part``, ids :func:`layout.part_id`), returned, not added."""
    body = json.dumps(doc, ensure_ascii=False, sort_keys=True)
    size = lay.BODY_PART_CHARS
    pieces = [body[i : i + size] for i in range(0, len(body), size)] or [""]
    hid = lay.head_id(record_id)
    head = chunks.get(hid)
    if head is None:
        head = chunks[hid] = _record_row(hid, record_id, 0, attrs)
    head.update(body=pieces[0], record_hash=record_hash, nparts=len(pieces), kw=kw)
    parts = []
    for n, piece in enumerate(pieces[1:], start=1):
        nulls = dict.fromkeys(attrs)
        row = _record_row(lay.part_id(n, record_id, record_hash), record_id, -n, nulls)
        row.update(body=piece, record_hash=record_hash, nparts=len(pieces), kw="")
        parts.append(row)
    return parts


def _record_row(cid: int, record_id: str, ordinal: int, attrs: dict[str, Any]) -> dict[str, Any]:
    """A chunk-part row that is no chunk (status ``RECORD``, no text, never searched)."""
    return {
        "chunk_id": cid,
        "record_id": record_id,
        "ordinal": ordinal,
        "text": "",
        "folded": "",
        "content_hash": "",
        "status": lay.RECORD,
        "error": "",
        "loc": lay.loc_json(0, 0, (), None, None),
        **attrs,
    }


def chunk_rows(
    fields: list[dict[str, Any]],
    new_chunks: list[NewChunk],
    vectors: dict[int, list[float]],
    own: set[int],
    result: WriteResult,
    tickets: dict[int, int],
) -> dict[int, dict[str, Any]]:
    """``{chunk id: chunk-part row}`` of the new chunks: with its ``vector`` and status
    ``embedded`` when ``vectors`` has one (counted in ``result.reused`` unless it is the
    chunk's own, ``own``); else ``pending`` without a vector, added to ``result.pending``
    under its ticket (its content-derived id; ``tickets`` gets ticket -> head row id for
    each pending head chunk). Head rows get their body columns from :func:`head_rows`."""
    out: dict[int, dict[str, Any]] = {}
    for cid, r, c in new_chunks:
        ch = c.chunk
        vec = vectors.get(cid)
        row = {
            "chunk_id": cid,
            "record_id": r.id,
            "ordinal": ch.ordinal,
            "text": ch.text,
            "folded": folded(ch.text),
            "content_hash": c.content_hash,
            "status": "embedded" if vec is not None else "pending",
            "error": "",
            "loc": lay.loc_json(
                ch.char_start, ch.char_end, ch.heading_path, ch.line_start, ch.line_end
            ),
            **_attrs(fields, r.attrs),
            **NOT_HEAD,
        }
        if vec is None:
            ticket = _ticket(r, c)
            if ticket != cid:
                tickets[ticket] = cid
            result.pending.append(PendingChunk(ticket, c.embed_text, r.id))
        else:
            result.reused += cid not in own
            row["vector"] = vec
        out[cid] = row
    return out
