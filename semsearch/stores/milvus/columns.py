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

pymilvus has no public column-wise write on ``MilvusClient``; this module reaches its
connection handler (``_get_connection``, ``_get_schema``, ``_prepare_batch_insert_request``,
``_stub``: the calls ``MilvusClient.insert`` makes) and falls back to the row API when those
are missing.
"""

from __future__ import annotations

from typing import Any

__all__ = ["write_rows"]


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
        (client.insert if lite else client.upsert)(name, rows)
        return
    context = client._generate_call_context()
    schema, _ = handler._get_schema(name, context=context)
    columns = [
        {"name": f["name"], "type": f["type"], "values": [row.get(f["name"]) for row in rows]}
        for f in schema["fields"]
        if not f.get("is_function_output") and not f.get("auto_id")
    ]
    if lite:
        _insert(handler, name, columns, schema, context)
    else:
        handler.upsert(name, columns, schema=schema, context=context)


def _insert(handler: Any, name: str, columns: list[dict[str, Any]], schema: Any, ctx: Any) -> None:
    """One blocking Insert call of a column-wise request (see the module docstring)."""
    from pymilvus.client import ts_utils
    from pymilvus.client.call_context import _api_level_md
    from pymilvus.client.utils import check_status

    request = handler._prepare_batch_insert_request(name, columns, schema=schema, context=ctx)
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
