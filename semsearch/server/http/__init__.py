"""The HTTP API (FastAPI) and the web page at ``/``.

What lives here, by job: ``app.py`` (``create_app``: routes for search, records and collections),
``state.py`` (what one server holds), ``auth.py`` and ``rate.py`` (API keys, roles, rate limits),
``limits.py`` (body size), ``errors.py`` (one error shape, mapped once), ``models.py`` (request and
response bodies), ``views.py`` (library results to bodies), ``paths.py`` (ids in URL paths),
``embeddings.py`` (``/v1/embeddings``), ``memory.py`` (``/memory``) and ``process.py`` (one
server process: threads, state, the uvicorn factory).

Who may import it: ``semsearch.cli.serve_cmd``. It shares only ``semsearch.server.host_guard``
with the MCP server and never imports ``semsearch.server.mcp`` (nor the other way round). The
old paths ``semsearch.server.http_auth`` and ``semsearch.server.http_state`` (docs/http.md) keep
working as re-exports.
"""

from semsearch.server.http.app import create_app
from semsearch.server.http.auth import KeyRing
from semsearch.server.http.state import ServerState

__all__ = ["KeyRing", "ServerState", "create_app"]
