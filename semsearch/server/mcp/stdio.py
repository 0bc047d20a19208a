"""The stdio transport of ``semsearch mcp``, with a repair for lone surrogates in requests.

JSON lets a client write half of a UTF-16 surrogate pair (``"\\ud800"``); the MCP SDK's parser
refuses such a line and drops it at debug level, so the client waited forever for an answer
to that ``tools/call``. Python's own ``json`` reads the line; when it is a ``tools/call``
request, it is handed on with its arguments replaced by :data:`LONE_SURROGATES` (the paths of
the bad arguments), which :class:`semsearch.server.mcp.tools.ArgumentErrors` answers with a
tool error and the surrogate hint. The call never runs, and the error never echoes the
surrogate (which the answer could not encode either).
"""

from __future__ import annotations

import json
import re
from typing import Any

from semsearch.validation import surrogate_at

__all__ = ["LONE_SURROGATES", "SurrogateRepair", "lone_surrogate_paths", "run_stdio"]

#: The one argument of a repaired ``tools/call``: the paths (``query``, ``where.path``) of the
#: arguments that held a lone surrogate.
LONE_SURROGATES = "semsearch/lone_surrogates"

_ESCAPE = re.compile(r"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")


def lone_surrogate_paths(value: Any, path: str = "") -> list[str]:
    """The dotted paths of the strings (values or keys) in ``value`` holding a lone surrogate."""
    if isinstance(value, str):
        return [path or "arguments"] if surrogate_at(value) is not None else []
    found: list[str] = []
    if isinstance(value, dict):
        for key, item in value.items():
            child = f"{path}.{key}" if path else str(key)
            if surrogate_at(str(key)) is not None:
                child = f"{path}.<key>" if path else "<key>"
                found.append(child)
            found += lone_surrogate_paths(item, child)
    elif isinstance(value, list):
        for i, item in enumerate(value):
            found += lone_surrogate_paths(item, f"{path}[{i}]")
    return found


def _repaired(exc: Exception) -> Any | None:
    """The SessionMessage for a ``tools/call`` line the SDK could not parse only because of
    lone surrogates, or None (the SDK's own handling then applies)."""
    from pydantic import ValidationError

    if not isinstance(exc, ValidationError):
        return None
    line = next((e.get("input") for e in exc.errors()), None)
    if not isinstance(line, str) or not _ESCAPE.search(line):
        return None
    try:
        raw = json.loads(line)
    except ValueError:
        return None
    if not isinstance(raw, dict) or raw.get("method") != "tools/call" or "id" not in raw:
        return None
    params = raw.get("params")
    if not isinstance(params, dict):
        return None
    paths = lone_surrogate_paths(params.get("arguments", {}))
    name = params.get("name")
    if not paths or not isinstance(name, str) or surrogate_at(name) is not None:
        return None
    from mcp.shared.message import SessionMessage
    from mcp.types import JSONRPCRequest

    fixed = {"name": name, "arguments": {LONE_SURROGATES: paths}}
    request = JSONRPCRequest(jsonrpc="2.0", id=raw["id"], method="tools/call", params=fixed)
    return SessionMessage(request)


class SurrogateRepair:
    """A read stream (the SDK's ``ReadStream`` protocol) that passes every item on, except a
    parse failure :func:`_repaired` can turn into a request."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner

    @property
    def last_context(self) -> Any:
        return getattr(self.inner, "last_context", None)

    async def receive(self) -> Any:
        item = await self.inner.receive()
        if isinstance(item, Exception):
            return _repaired(item) or item
        return item

    async def aclose(self) -> None:
        await self.inner.aclose()

    def __aiter__(self) -> SurrogateRepair:
        return self

    async def __anext__(self) -> Any:
        import anyio

        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None

    async def __aenter__(self) -> SurrogateRepair:
        await self.inner.__aenter__()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.inner.__aexit__(*exc)


async def run_stdio(server: Any) -> None:
    """Serve ``server`` (an ``MCPServer``) over stdio, as its ``run_stdio_async`` does, with
    :class:`SurrogateRepair` on the read side."""
    from mcp.server.stdio import stdio_server

    lowlevel = server._lowlevel_server
    async with stdio_server() as (read_stream, write_stream):
        options = lowlevel.create_initialization_options()
        await lowlevel.run(SurrogateRepair(read_stream), write_stream, options)
