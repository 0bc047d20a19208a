"""The two servers: the HTTP API with its web page (``http/``) and the MCP server (``mcp/``).

``host_guard.py`` is the one Host and Origin check both use, so that no web page can reach a
local server through DNS rebinding; ``error_shape.py`` the error body both send (OpenAI's shape
under ``/v1/``); ``web/`` holds the static page. Both servers are thin faces:
they parse, call the library and render. Who may import it: the CLI (``semsearch serve``,
``semsearch mcp``). The two servers never import each other.
"""
