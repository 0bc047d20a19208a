"""Moved: API keys and roles live in :mod:`semsearch.server.http.auth` (docs/architecture.md).

This path stays so that code written against docs/http.md before the move keeps working.
"""

from semsearch.server.http.auth import KeyRing, Role

__all__ = ["KeyRing", "Role"]
