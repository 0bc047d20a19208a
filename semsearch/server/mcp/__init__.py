"""``semsearch mcp``: semsearch as an MCP server for AI agents, over stdio or streamable HTTP.

What lives here, by job: ``server.py`` (building and running the server on a transport),
``service.py`` (every tool's logic over one index, with privacy scope; no MCP types),
``tools.py`` (the typed tool signatures whose JSON Schemas agents see) and ``stdio.py`` (the stdio
transport, with a repair for lone surrogates). Who may import it: ``semsearch.cli.mcp_cmd``.
"""
