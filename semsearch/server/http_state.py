"""Moved: the server's state lives in :mod:`semsearch.server.http.state` (docs/architecture.md).

This path stays so that code written against docs/http.md before the move keeps working.
"""

from semsearch.server.http.state import ServerState

__all__ = ["ServerState"]
