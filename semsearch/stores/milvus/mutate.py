"""Row writes and deletes of the Milvus store's parts, in calls of up to ``ROWS_PER_CALL``
rows, counted for the bulk flush (``MilvusAccess.written``), never flushed per call."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from semsearch.stores.milvus.columns import write_rows
from semsearch.stores.milvus.conn import translated
from semsearch.stores.milvus.expr import literal

if TYPE_CHECKING:
    from semsearch.stores.milvus.access import MilvusAccess

__all__ = ["ROWS_PER_CALL", "delete_ids", "delete_where", "trim_parts", "upsert"]

#: Rows per write/delete call: large calls, well inside gRPC's 64 MB message limit
#: (2,000 rows of 384 float32 plus text are a few MB).
ROWS_PER_CALL = 2000


def upsert(
    store: MilvusAccess,
    collection: str,
    kind: str,
    rows: list[dict[str, Any]],
    partial: bool = False,
) -> None:
    """Write whole rows (or with ``partial``, some columns) to a part; nothing if it is gone."""
    if not rows:
        return
    found = store._coll(collection, kind)
    if found is None:
        return
    client, name = found
    with translated(f"writing {kind}"):
        for start in range(0, len(rows), ROWS_PER_CALL):
            write_rows(client, name, rows[start : start + ROWS_PER_CALL], store.state.lite, partial)
    store.written(name, len(rows))


def delete_ids(store: MilvusAccess, collection: str, ids: list[int]) -> None:
    """Delete chunk rows by chunk id."""
    found = store._coll(collection, "chunks") if ids else None
    if found is None:
        return
    client, name = found
    with translated("deleting chunks"):
        for start in range(0, len(ids), ROWS_PER_CALL):
            client.delete(name, ids=ids[start : start + ROWS_PER_CALL])
    store.written(name, len(ids))


def trim_parts(store: MilvusAccess, collection: str, rows: list[dict[str, Any]]) -> None:
    """Delete body parts left over from a longer previous version of a record."""
    by_n: dict[int, list[str]] = {}
    for row in rows:
        if row["part"] == 0:
            by_n.setdefault(row["nparts"], []).append(row["record_id"])
    delete_where(store, collection, ["records"], "record_id", by_n, "part >= {n}")


def delete_where(
    store: MilvusAccess,
    collection: str,
    kinds: Sequence[str],
    key: str,
    groups: dict[int, list[str]],
    extra: str = "",
) -> None:
    """Delete rows of ``kinds`` whose ``key`` is in a group's values (and ``extra``, formatted
    with the group's number ``n``)."""
    for kind in kinds:
        found = store._coll(collection, kind)
        if found is None:
            continue
        client, name = found
        with translated(f"deleting {kind}"):
            for n, values in groups.items():
                for start in range(0, len(values), ROWS_PER_CALL):
                    batch = ", ".join(literal(v) for v in values[start : start + ROWS_PER_CALL])
                    expr = f"{key} in [{batch}]" + (f" and {extra.format(n=n)}" if extra else "")
                    client.delete(name, filter=expr)
        store.written(name, sum(len(v) for v in groups.values()))
