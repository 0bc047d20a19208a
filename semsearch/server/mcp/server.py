"""``semsearch mcp``: semsearch as an MCP server for AI agents, over stdio or streamable HTTP.

Built on the official ``mcp`` Python SDK (2.x, ``mcp.server.mcpserver.MCPServer``). The tools live
in :mod:`semsearch.server.mcp.tools`, their logic in :mod:`semsearch.server.mcp.service`.

HTTP security (the MCP spec's transport advice): the server binds 127.0.0.1 by default; the
Host and Origin headers are checked against DNS rebinding by the same check as ``semsearch
serve`` (:mod:`semsearch.server.host_guard`: a foreign Host gets 421, a foreign Origin 403);
with a token, every request needs ``Authorization: Bearer <token>`` (else 401). Binding
another address without a token is refused.
"""

from __future__ import annotations

import hmac
import ipaddress
import json
import os
import sys
from collections.abc import Sequence
from typing import Any

from semsearch import __version__
from semsearch.errors import SemsearchError
from semsearch.server.host_guard import HostGuard, HostPolicy
from semsearch.server.mcp.service import McpConfig, McpService

__all__ = [
    "DEFAULT_PORT",
    "ENV_TOKEN",
    "McpConfig",
    "McpService",
    "build_server",
    "http_app",
    "serve",
]

#: Environment variable holding the bearer token for the HTTP transport.
ENV_TOKEN = "SEMSEARCH_MCP_TOKEN"
DEFAULT_PORT = 8765
#: Shorter tokens are refused at start-up (they are guessable).
MIN_TOKEN_LENGTH = 16
MCP_PATH = "/mcp"

INSTRUCTIONS = """semsearch searches the user's own notes and records.
Start with `search` (hybrid by default); call `get` with a hit's id to read the whole record.
`list_collections` shows the collections and the fields usable in `where` filters; `stats`
says whether semantic search works. Hits come only from paths the user allowed."""


def build_server(service: McpService) -> Any:
    """An ``MCPServer`` named ``semsearch`` with the tools registered (writes only if allowed).

    Arguments that fail the tool's input schema get a short message naming each argument (see
    :func:`semsearch.server.mcp.tools.argument_errors`) instead of pydantic's raw text.
    """
    from mcp.server.mcpserver import MCPServer

    from semsearch.server.mcp.stdio import run_stdio
    from semsearch.server.mcp.tools import ArgumentErrors, register_tools

    class Server(ArgumentErrors, MCPServer):
        async def run_stdio_async(self) -> None:
            await run_stdio(self)  # answers tools/call lines holding a lone surrogate

    server: MCPServer = Server(
        "semsearch", version=__version__, instructions=INSTRUCTIONS, log_level="WARNING"
    )
    register_tools(server, service)
    return server


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def transport_security() -> Any:
    """The SDK's own DNS-rebinding check, turned off: :class:`HostGuard` does it, once for both
    servers (the SDK would otherwise apply its own allowlist behind ours)."""
    from mcp.server.transport_security import TransportSecuritySettings

    return TransportSecuritySettings(enable_dns_rebinding_protection=False)


class BearerToken:
    """ASGI middleware: HTTP requests need ``Authorization: Bearer <token>`` (else 401).

    The comparison is constant-time (``hmac.compare_digest``); lifespan events pass through.
    """

    def __init__(self, app: Any, token: str) -> None:
        self.app = app
        self._expected = token.encode()

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            given = dict(scope.get("headers") or []).get(b"authorization", b"")
            scheme, _, credentials = given.strip().partition(b" ")
            # the scheme name is case-insensitive (RFC 9110, section 11.1)
            valid = scheme.lower() == b"bearer" and hmac.compare_digest(
                credentials.strip(), self._expected
            )
            if not valid:
                await _unauthorized(send, "the bearer token is not valid" if given else None)
                return
        await self.app(scope, receive, send)


async def _unauthorized(send: Any, reason: str | None = None) -> None:
    """A 401: ``reason`` for a wrong token, else "a bearer token is required"."""
    description = reason or "a bearer token is required"
    body = json.dumps({"error": "invalid_token", "error_description": description}).encode()
    await send(
        {
            "type": "http.response.start",
            "status": 401,
            "headers": [
                (b"content-type", b"application/json"),
                (b"www-authenticate", b'Bearer error="invalid_token"'),
                (b"content-length", str(len(body)).encode()),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


def http_app(
    service: McpService,
    *,
    host: str = "127.0.0.1",
    token: str | None = None,
    allowed_origins: Sequence[str] = (),
    allowed_hosts: Sequence[str] = (),
) -> Any:
    """The streamable-HTTP ASGI app at ``/mcp``: the Host/Origin check first (loopback names,
    ``host`` when specific, ``allowed_hosts`` and ``SEMSEARCH_ALLOWED_HOSTS``; origins of
    those and ``allowed_origins``), then the bearer token."""
    server = build_server(service)
    app = server.streamable_http_app(
        streamable_http_path=MCP_PATH, transport_security=transport_security(), host=host
    )
    policy = HostPolicy.build(allowed_hosts, allowed_origins, bind=host)
    return HostGuard(BearerToken(app, token) if token else app, policy)


def serve(
    config: McpConfig,
    *,
    transport: str = "stdio",
    host: str = "127.0.0.1",
    port: int = DEFAULT_PORT,
    token: str | None = None,
    allowed_origins: Sequence[str] = (),
    allowed_hosts: Sequence[str] = (),
) -> None:
    """Run the server until the client disconnects (stdio) or the process is stopped (http).

    Raises:
        SemsearchError: an unknown transport, a token shorter than MIN_TOKEN_LENGTH, or a
            non-loopback HTTP bind without a token.
    """
    service = McpService(config)
    if config.is_file and not os.path.exists(config.location):
        print(  # stderr: stdout carries the stdio protocol
            f"semsearch mcp: no index at {config.location} yet; "
            "tools will answer with how to build it",
            file=sys.stderr,
        )
    try:
        if transport == "stdio":
            build_server(service).run("stdio")
        elif transport == "http":
            if token is not None and len(token) < MIN_TOKEN_LENGTH:
                raise SemsearchError(
                    f"the MCP token is shorter than {MIN_TOKEN_LENGTH} characters",
                    hint="use a long random token, e.g. "
                    "`python -c 'import secrets; print(secrets.token_urlsafe())'`",
                )
            if not token and not _is_loopback(host):
                raise SemsearchError(
                    f"refusing to serve MCP on {host} without a token",
                    hint=f"set --token or {ENV_TOKEN}, or bind 127.0.0.1",
                )
            app = http_app(service, host=host, token=token, allowed_origins=allowed_origins,
                           allowed_hosts=allowed_hosts)  # fmt: skip
            _run_http(app, host, port)
        else:
            raise SemsearchError(f"unknown transport {transport!r}", hint="use stdio or http")
    finally:
        service.close()


def _run_http(app: Any, host: str, port: int) -> None:
    import uvicorn

    uvicorn.Server(uvicorn.Config(app, host=host, port=port, log_level="warning")).run()
