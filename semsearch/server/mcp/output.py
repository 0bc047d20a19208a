"""How MCP tool results go on the wire: structured content, a compact text copy, lean schemas.

A tool with an output schema returns ``structuredContent``; the spec asks for a text copy too
(for clients that ignore structured content). The SDK's copy is the JSON indented by 2, about
a fifth larger than the same JSON without the indent, and it is escaped again inside the
JSON-RPC line: :func:`tool_result` writes it compact (``json.loads`` of the text still equals
the structured content).

Clients validate ``structuredContent`` against ``outputSchema`` (the MCP SDK's client with the
pure-Python ``jsonschema``, on every call). The schema pydantic derives spells each optional
value as ``anyOf: [{type: X}, {type: null}]`` and each nested TypedDict as a ``$ref`` into
``$defs``: a failed ``anyOf`` branch builds an error object, and a ``$ref`` is resolved per
hit. :func:`lean_schema` writes the same schema as ``type: [X, "null"]`` with the definitions
inlined, which accepts and refuses the same documents (tests/unit/test_mcp_output.py) and
validates a search result of 10 hits in about two thirds of the time (2.3 -> 1.5 ms,
benchmarks/mcp_latency.py measures the round trip).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pydantic_core
from mcp.types import CallToolResult, TextContent

__all__ = ["lean_output_schemas", "lean_schema", "tool_result"]

#: Keywords of a schema branch that constrain only instances of its own ``type``, so the branch
#: can share a ``type`` list with ``{"type": "null"}`` (null is not an object, array or string).
_TYPED_KEYWORDS = frozenset(
    {"type", "properties", "additionalProperties", "required", "items", "minItems", "maxItems",
     "minLength", "maxLength", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"}
)  # fmt: skip


def tool_result(view: Mapping[str, Any]) -> CallToolResult:
    """A tool's answer: ``view`` (JSON-ready) as structured content, and its compact JSON text.

    The SDK still validates ``view`` against the tool's output type (a tool annotated
    ``Annotated[CallToolResult, SomeTypedDict]``). Values JSON cannot hold are written as
    their ``str()``, as the SDK's own text copy does.
    """
    text = pydantic_core.to_json(view, fallback=str).decode()
    return CallToolResult(
        content=[TextContent(type="text", text=text)], structured_content=dict(view)
    )


def lean_schema(schema: Mapping[str, Any]) -> dict[str, Any]:
    """``schema`` with its local ``$ref``s (``#/$defs/Name``) inlined and every ``anyOf`` of
    one branch and ``{"type": "null"}`` written as a ``type`` list: the same documents pass.

    A branch is merged only when all its keywords constrain its own type
    (:data:`_TYPED_KEYWORDS`); others stay ``anyOf``. A schema whose definitions refer to
    themselves (a recursive type), or with a ``$ref`` beside other keywords, keeps its
    ``$ref``s and ``$defs``. The input is not changed.
    """
    defs = schema.get("$defs")
    if isinstance(defs, Mapping) and defs:
        try:
            inlined = _inline(schema, defs, ())
        except _Recursive:
            inlined = dict(schema)
        if _refers(inlined):  # a $ref beside other keywords: it needs the definitions
            inlined = dict(schema)
    else:
        inlined = dict(schema)
    out: dict[str, Any] = _nullable(inlined)
    return out


class _Recursive(Exception):
    """A definition refers to itself: it cannot be inlined."""


def _inline(node: Any, defs: Mapping[str, Any], seen: tuple[str, ...]) -> Any:
    if isinstance(node, list):
        return [_inline(item, defs, seen) for item in node]
    if not isinstance(node, Mapping):
        return node
    body = {k: v for k, v in node.items() if k != "$defs"}
    ref = body.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/") and len(body) == 1:
        name = ref.removeprefix("#/$defs/")
        if name in seen:
            raise _Recursive
        if name in defs:
            return _inline(defs[name], defs, (*seen, name))
    return {k: _inline(v, defs, seen) for k, v in body.items()}


def _refers(node: Any) -> bool:
    """Whether ``node`` still holds a ``$ref`` to a local definition."""
    if isinstance(node, list):
        return any(_refers(item) for item in node)
    if not isinstance(node, Mapping):
        return False
    ref = node.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/"):
        return True
    return any(_refers(v) for v in node.values())


def _nullable(node: Any) -> Any:
    if isinstance(node, list):
        return [_nullable(item) for item in node]
    if not isinstance(node, Mapping):
        return node
    out = {k: _nullable(v) for k, v in node.items()}
    branches = out.get("anyOf")
    if not isinstance(branches, list) or len(branches) != 2 or "type" in out:
        return out
    others = [b for b in branches if b != {"type": "null"}]
    if len(others) != 1 or not isinstance(others[0], dict):
        return out
    other = others[0]
    kind = other.get("type")
    if not isinstance(kind, str) or kind == "null" or not set(other) <= _TYPED_KEYWORDS:
        return out
    del out["anyOf"]
    return {**out, **other, "type": [kind, "null"]}


def lean_output_schemas(server: Any) -> None:
    """Replace each registered tool's published output schema by its :func:`lean_schema` (the
    SDK reads ``FuncMetadata.output_schema`` anew on each ``tools/list`` and call). Nothing
    changes when the SDK keeps its tools elsewhere than ``server._tool_manager``."""
    manager = getattr(server, "_tool_manager", None)
    for tool in manager.list_tools() if manager is not None else ():
        meta = getattr(tool, "fn_metadata", None)
        if meta is not None and meta.output_schema is not None:
            meta.output_schema = lean_schema(meta.output_schema)
