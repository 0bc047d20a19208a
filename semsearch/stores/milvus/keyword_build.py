"""Where a process gets a layout-4 collection's keyword index, and when it must build it again.

- **Milvus Lite** (one process per folder): every write goes through this process, and each
  committed write updates the index (:func:`note_keywords`), so it is built once per process
  and collection: empty for a collection the process creates, else by reading every head
  row's ``kw`` column (:func:`build`) on the first keyword search. A write that raises half-way
  drops it (``LocationState.failed``): some of its head rows may be stored.
- **A Milvus server** (several processes may write): each process that writes a collection
  keeps a *stamp* row of its own in ``semsearch_meta`` (named ``<collection>#kw#<token>``, a
  counter bumped after each of its writes committed; only that process writes it, so no
  update is lost). An index remembers the stamps it reflects; a search reads the stamps
  (cached for ``META_TTL`` seconds, as the metadata is) and builds the index again when a
  stamp of another process moved. Its own writes update its index and its stamp in place.
  So a search sees another process's write at most ``META_TTL`` seconds after it committed,
  and the first search after it reads every head row again (see docs/milvus.md).
"""

from __future__ import annotations

import json
import secrets
import time
from collections.abc import Iterable, Mapping, Sequence
from itertools import islice
from typing import TYPE_CHECKING, Any

from semsearch.results import Chunk
from semsearch.stores.milvus import layout as lay
from semsearch.stores.milvus.conn import translated
from semsearch.stores.milvus.expr import literal
from semsearch.stores.milvus.keyword_columns import RecordKeyword, decode, record_keyword
from semsearch.stores.milvus.keyword_index import KeywordIndex
from semsearch.stores.milvus.records import head_docs
from semsearch.stores.milvus.state import META_TTL

if TYPE_CHECKING:
    from semsearch.stores.milvus.access import MilvusAccess

__all__ = [
    "build",
    "current_index",
    "drop_stamps",
    "note_keywords",
    "read_matching",
    "stamp_name",
]

#: The ``semsearch_meta`` rows of writers' stamps: ``<collection>#kw#<token>`` ('#' is never
#: in a collection name).
_STAMP = "#kw#"
#: This process's writer token (one per process: its stamp rows are its own).
_TOKEN = secrets.token_hex(8)


def read_matching(
    store: MilvusAccess, collection: str, expr: str, fields: list[str], cap: int | None = None
) -> list[dict[str, Any]]:
    """Every chunk-part row matching ``expr`` (at most ``cap``; None: all): on Milvus Lite in
    one query (Lite takes any ``limit``; each query costs a pass over every row), on a server
    through a query iterator (a server caps a query at MAX_TOPK rows)."""
    found = store._coll(collection, "chunks")
    if found is None:
        return []
    client, name = found
    if not store.state.lite:
        return list(islice(store.scan(collection, "chunks", expr, fields), cap))
    with translated("reading keyword rows"):
        total = client.query(name, filter=expr, output_fields=["count(*)"])
        size = int(total[0]["count(*)"]) if total else 0
        if not size:
            return []
        limit = size if cap is None else min(size, cap)
        return list(client.query(name, filter=expr, output_fields=fields, limit=limit))


def build(store: MilvusAccess, collection: str) -> KeywordIndex:
    """The keyword index of every committed record: their head rows' ``kw`` values, and for
    records stored as :data:`~semsearch.stores.milvus.keyword_columns.DERIVE`, their terms
    derived from their text and chunks."""
    index = KeywordIndex()
    rows = read_matching(store, collection, lay.HEADS, ["record_id", "kw"])
    found: list[tuple[str, RecordKeyword]] = []
    derive: list[str] = []
    for row in rows:
        keyword = decode(row["kw"])
        if keyword is None:
            derive.append(row["record_id"])
        else:
            found.append((row["record_id"], keyword))
    found += derived(store, collection, derive).items()
    index.load(found)
    return index


def derived(store: MilvusAccess, collection: str, ids: Sequence[str]) -> dict[str, RecordKeyword]:
    """``{id: RecordKeyword}`` of records whose terms are derived from their body and chunk
    rows (read by primary key)."""
    if not ids:
        return {}
    docs = head_docs(store, collection, ids)
    listed = [int(c) for doc in docs.values() for c in doc.get("chunks", [])]
    cols = ["chunk_id", "ordinal", "text", "loc"]
    chunks = {
        int(r["chunk_id"]): r for r in store.rows_by(collection, "chunks", "chunk_id", listed, cols)
    }
    out = {}
    for rid, doc in docs.items():
        pairs = [
            (int(c), _chunk(chunks[int(c)])) for c in doc.get("chunks", []) if int(c) in chunks
        ]
        out[rid] = record_keyword(doc["fields"], doc["text"], pairs)
    return out


def _chunk(row: Mapping[str, Any]) -> Chunk:
    start, end = json.loads(row["loc"])[:2]
    return Chunk(row["text"], int(row["ordinal"]), start, end)


def current_index(store: MilvusAccess, collection: str) -> KeywordIndex:
    """The collection's keyword index as this process may use it now (built if need be; see
    the module docstring)."""
    state = store.state
    index = state.keyword.get(collection)
    if state.lite:
        if index is None:
            index = state.keyword[collection] = build(store, collection)
        return index
    stamps = _stamps(store, collection)
    if index is None or _others(index.stamps) != _others(stamps):
        index = build(store, collection)
        index.stamps = stamps
        state.keyword[collection] = index
    return index


def note_keywords(
    store: MilvusAccess, collection: str, changed: Mapping[str, RecordKeyword | None]
) -> None:
    """After a write committed: put each changed record's terms (None: deleted) into the
    index this process holds, if any; on a server, move this process's stamp too (and drop an
    index that missed another process's write)."""
    if not changed:
        return
    state = store.state
    index = state.keyword.get(collection)
    if not state.lite:
        stamps = _stamps(store, collection, fresh=True)
        if index is not None and _others(index.stamps) != _others(stamps):
            state.keyword.pop(collection, None)
            index = None
        own = stamp_name(collection)
        stamps[own] = str(int(stamps.get(own, "0")) + 1)
        _put_stamp(store, own, stamps[own])
        if index is not None:
            index.stamps = stamps
    if index is not None:
        with index.lock:
            index.put(changed)


def stamp_name(collection: str) -> str:
    """This process's stamp row for ``collection``."""
    return f"{collection}{_STAMP}{_TOKEN}"


def _others(stamps: Mapping[str, str]) -> dict[str, str]:
    own = _TOKEN
    return {k: v for k, v in stamps.items() if not k.endswith(own)}


_stamp_cache: dict[tuple[str, str], tuple[float, dict[str, str]]] = {}


def _stamps(store: MilvusAccess, collection: str, fresh: bool = False) -> dict[str, str]:
    """``{stamp row name: counter}`` of the collection's writers (cached META_TTL seconds)."""
    key = (store.location, collection)
    hit = _stamp_cache.get(key)
    if hit is not None and not fresh and time.monotonic() - hit[0] < META_TTL:
        return dict(hit[1])
    found = store._coll_meta()
    rows: list[dict[str, Any]] = []
    if found is not None:
        client, meta = found
        low, high = literal(f"{collection}{_STAMP}"), literal(f"{collection}#kw$")
        with translated("reading keyword stamps"):
            rows = client.query(
                meta, filter=f"name >= {low} and name < {high}", output_fields=["name", "info"]
            )
    stamps = {r["name"]: str(json.loads(r["info"]).get("stamp", "")) for r in rows}
    _stamp_cache[key] = (time.monotonic(), stamps)
    return dict(stamps)


def _put_stamp(store: MilvusAccess, name: str, value: str) -> None:
    client = store.client()
    with translated("writing a keyword stamp"):
        client.upsert(
            lay.META, [{"name": name, "info": json.dumps({"stamp": value}), "_v": lay.DUMMY_VECTOR}]
        )


def is_stamp(name: str) -> bool:
    """True for a ``semsearch_meta`` row that is a writer's stamp, not a collection."""
    return _STAMP in name


def drop_stamps(client: Any, collection: str) -> None:
    """Delete every writer's stamp row of ``collection`` (it was dropped)."""
    low, high = literal(f"{collection}{_STAMP}"), literal(f"{collection}#kw$")
    client.delete(lay.META, filter=f"name >= {low} and name < {high}")
    for key in [k for k in _stamp_cache if k[1] == collection]:
        _stamp_cache.pop(key, None)


def forget(store: MilvusAccess, names: Iterable[str]) -> None:
    """Drop the indexes of ``names`` held by this process (their chunk part was rebuilt)."""
    for name in names:
        store.state.keyword.pop(name, None)
