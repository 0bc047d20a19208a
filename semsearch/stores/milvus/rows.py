"""The rows a write of the Milvus store stores, built from ``RecordWrite`` values (pure: no
Milvus call): record rows with the body cut into parts, chunk rows with their keyword terms
(and a reused vector where there is one), and the sizes refused before anything is written. The columns
are documented in :mod:`semsearch.stores.milvus.layout`.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from semsearch.errors import InvalidRecord
from semsearch.stores.base import ChunkWrite, PendingChunk, RecordWrite, WriteResult
from semsearch.stores.milvus import layout as lay
from semsearch.stores.milvus.expr import column
from semsearch.stores.milvus.terms import keyword_terms

__all__ = ["NewChunk", "check_sizes", "chunk_rows", "new_chunks", "record_rows"]

#: A chunk of a changed record: (its Milvus chunk id, the record, the chunk).
NewChunk = tuple[int, RecordWrite, ChunkWrite]


def new_chunks(changed: Sequence[RecordWrite]) -> list[NewChunk]:
    """Every chunk of the ``changed`` records, in order, with its Milvus chunk id."""
    return [
        (
            lay.chunk_id(
                r.id, c.chunk.ordinal, c.chunk.char_start, c.chunk.char_end, c.content_hash
            ),
            r,
            c,
        )
        for r in changed
        for c in r.chunks
    ]


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


def chunk_rows(
    fields: list[dict[str, Any]],
    new_chunks: list[NewChunk],
    vectors: dict[int, list[float]],
    own: set[int],
    result: WriteResult,
) -> dict[int, dict[str, Any]]:
    """``{chunk id: chunk-part row}`` of the new chunks (layout 2): with its ``vector`` and
    status ``embedded`` when ``vectors`` has one (counted in ``result.reused`` unless it is
    the chunk's own, ``own``); else ``pending`` without a vector, added to
    ``result.pending``."""
    out: dict[int, dict[str, Any]] = {}
    for cid, r, c in new_chunks:
        ch = c.chunk
        vec = vectors.get(cid)
        row = {
            "chunk_id": cid,
            "record_id": r.id,
            "ordinal": ch.ordinal,
            "text": ch.text,
            "terms": keyword_terms(ch.text),
            "content_hash": c.content_hash,
            "status": "embedded" if vec is not None else "pending",
            "error": "",
            "loc": lay.loc_json(
                ch.char_start, ch.char_end, ch.heading_path, ch.line_start, ch.line_end
            ),
            **_attrs(fields, r.attrs),
        }
        if vec is None:
            result.pending.append(PendingChunk(cid, c.embed_text, r.id))
        else:
            result.reused += cid not in own
            row["vector"] = vec
        out[cid] = row
    return out
