"""Column-wise writes of whole rows to Milvus (the store's bulk write path).

``MilvusClient.insert``/``upsert`` take rows (dicts) only, and pymilvus 3.0.2 packs them one
value at a time (a type lookup and a protobuf append per field of every row): for 10,000
records that cost about 0.2 s per collection of chunk or record rows, measured. The same
request built from columns (pymilvus' batch path, the one its ORM ``Collection.insert`` takes
for a list of columns) extends each protobuf column once: 0.007 s. Vector columns cost the
same either way (their floats are copied one by one in both).

On Milvus Lite, rows are inserted rather than upserted: Lite replaces a row whose primary key
exists on insert too (the newest write wins; its upsert only adds a read of the old row to
merge fields a partial update leaves out, and semsearch writes whole rows), which
``tests/milvus/test_columns_fake_vectors.py`` checks. A Milvus server keeps both rows on insert, so servers
get upserts. Partial updates (``set_status``) keep pymilvus' row path.

On Milvus Lite the insert is one blocking gRPC call, as ``MilvusClient.insert`` makes it for
rows (``handler._stub.Insert``). pymilvus' column path (``batch_insert``) sends it as a gRPC
future instead, and gRPC Python starts a thread for each future call: about 2 ms more per
call, measured (160 inserts of 256 small rows, interleaved: 0.95 s blocking against 1.29 s
future, loaded machine). A server keeps pymilvus' ``upsert``, with its retries.

On Milvus Lite the float vectors go into the request as one packed protobuf field built from
a float32 array (``FloatArray``'s wire form: tag, length, the little-endian floats), instead
of pymilvus flattening them into a list of Python floats and appending it: 0.05 against
2.8 ms per 256 rows of 384-d vectors (with the per-row ``tolist`` it no longer needs),
measured. Rows may carry their vector as a float32 numpy row or as a list.

pymilvus has no public column-wise write on ``MilvusClient``; this module reaches its
connection handler (``_get_connection``, ``_get_schema``, ``_prepare_batch_insert_request``,
``_stub``: the calls ``MilvusClient.insert`` makes) and falls back to the row API when those
are missing.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from semsearch.stores.milvus.layout import DUMMY_FIELD, DUMMY_VECTOR

__all__ = ["packed_floats", "write_rows"]


def write_rows(
    client: Any, name: str, rows: list[dict[str, Any]], lite: bool, partial: bool = False
) -> None:
    """Write rows to Milvus collection ``name`` in one request.

    Args:
        rows: whole rows (every input field of the collection's schema), inserted on Milvus
            Lite (``lite``) and upserted on a server (see the module docstring); with
            ``partial``, rows of some fields, a partial upsert through pymilvus' row API.
    Raises:
        pymilvus exceptions, as ``client.upsert`` does (callers translate them).
    """
    if not rows:
        return
    if partial:
        client.upsert(name, rows, partial_update=True)
        return
    handler = _handler(client)
    if handler is None:
        describe = getattr(client, "describe_collection", None)
        fields = {f["name"] for f in describe(name)["fields"]} if describe else set()
        rows = [_with_dummy(r) for r in rows] if DUMMY_FIELD in fields else rows
        (client.insert if lite else client.upsert)(name, rows)
        return
    context = client._generate_call_context()
    schema, _ = handler._get_schema(name, context=context)
    columns = [
        {"name": f["name"], "type": f["type"], "values": _values(f["name"], rows)}
        for f in schema["fields"]
        if not f.get("is_function_output") and not f.get("auto_id")
    ]
    if lite:
        _insert(handler, name, columns, schema, context)
    else:
        for col in columns:
            if _is_float_vector(col["type"]):
                col["values"] = [_as_list(v) for v in col["values"]]
        handler.upsert(name, columns, schema=schema, context=context)


def _values(field: str, rows: list[dict[str, Any]]) -> list[Any]:
    """One column's values; the constant dummy vector for ``_v`` (a chunk part without its
    dimension yet has it, and rows never carry it)."""
    if field == DUMMY_FIELD:
        return [DUMMY_VECTOR] * len(rows)
    return [row.get(field) for row in rows]


def _with_dummy(row: dict[str, Any]) -> dict[str, Any]:
    return row if DUMMY_FIELD in row else {**row, DUMMY_FIELD: DUMMY_VECTOR}


def _is_float_vector(kind: Any) -> bool:
    from pymilvus import DataType

    return bool(kind == DataType.FLOAT_VECTOR)


def _as_list(vector: Any) -> Any:
    return vector.tolist() if isinstance(vector, np.ndarray) else vector


def packed_floats(rows: list[Any]) -> tuple[int, bytes]:
    """(dim, the wire form of a protobuf ``FloatArray``) of float vectors ``rows`` (float32
    numpy rows or float lists, all of one length): field 1, length-delimited, little-endian
    float32 values row after row."""
    array = np.asarray(
        np.stack(rows) if rows and isinstance(rows[0], np.ndarray) else rows, dtype="<f4"
    )
    data = np.ascontiguousarray(array).tobytes()
    size, prefix = len(data), bytearray(b"\x0a")
    while True:  # the length as a base-128 varint
        prefix.append((size & 0x7F) | (0x80 if size > 0x7F else 0))
        size >>= 7
        if not size:
            break
    return int(array.shape[1]), bytes(prefix) + data


def _insert(handler: Any, name: str, columns: list[dict[str, Any]], schema: Any, ctx: Any) -> None:
    """One blocking Insert call of a column-wise request (see the module docstring)."""
    from pymilvus.client import ts_utils
    from pymilvus.client.call_context import _api_level_md
    from pymilvus.client.utils import check_status

    packed = {}
    for col in columns:
        if _is_float_vector(col["type"]) and col["values"]:
            packed[col["name"]] = packed_floats(col["values"])
            col["values"] = [()] * len(col["values"])  # rows counted, no floats appended
    request = handler._prepare_batch_insert_request(name, columns, schema=schema, context=ctx)
    for field in request.fields_data:
        if field.field_name in packed:
            dim, wire = packed[field.field_name]
            field.vectors.dim = dim
            field.vectors.float_vector.Clear()
            field.vectors.float_vector.MergeFromString(wire)
    response = handler._stub.Insert(request=request, metadata=_api_level_md(ctx))
    check_status(response.status)
    ts_utils.update_collection_ts(
        name, response.timestamp, handler.server_address, ctx.get_db_name()
    )


def _handler(client: Any) -> Any | None:
    get = getattr(client, "_get_connection", None)
    handler = get() if get is not None else None
    needed = ("_get_schema", "_prepare_batch_insert_request", "_stub", "upsert")
    if handler is None or not all(hasattr(handler, a) for a in needed):
        return None
    if not hasattr(client, "_generate_call_context"):
        return None
    return handler
