"""``semsearch mcp``: semsearch as an MCP server for AI agents, over stdio or streamable HTTP.

What lives here, by job: ``server.py`` (building and running the server on a transport),
``service.py`` (every tool's logic over one index, with privacy scope; no MCP types),
``views.py`` (what tools return: results as JSON-ready dicts, errors as text without absolute
paths), ``tools.py`` (the typed tool signatures whose JSON Schemas agents see) and ``stdio.py``
(the stdio transport, with a repair for lone surrogates).

Who may import it: ``semsearch.cli.mcp_cmd``. It shares only ``semsearch.server.host_guard`` with
the HTTP server and never imports ``semsearch.server.http`` (nor the other way round).
"""

from semsearch.moved import forward

# The names of the module this package replaced (server/mcp.py).
__getattr__ = forward(
    __name__,
    {
        "DEFAULT_PORT": "semsearch.server.mcp.server",
        "ENV_TOKEN": "semsearch.server.mcp.server",
        "McpConfig": "semsearch.server.mcp.server",
        "McpService": "semsearch.server.mcp.server",
        "build_server": "semsearch.server.mcp.server",
        "http_app": "semsearch.server.mcp.server",
        "serve": "semsearch.server.mcp.server",
    },
)
