"""Moved: the server's state lives in :mod:`semsearch.server.http.state` (docs/architecture.md).

This path stays so that code written against docs/http.md before the move keeps working.
"""

from semsearch.server.http.state import MEMORY_COLLECTION, Limits, ServerState, describe

__all__ = ["MEMORY_COLLECTION", "Limits", "ServerState", "describe"]
