"""Moved: API keys and roles live in :mod:`semsearch.server.http.auth` (docs/architecture.md).

This path stays so that code written against docs/http.md before the move keeps working.
"""

from semsearch.server.http.auth import (
    ENV_API_KEYS,
    ENV_API_KEYS_FILE,
    LOOPBACK,
    KeyRing,
    Role,
    check_bind,
    check_keys_file_mode,
    requires,
)

__all__ = [
    "ENV_API_KEYS",
    "ENV_API_KEYS_FILE",
    "LOOPBACK",
    "KeyRing",
    "Role",
    "check_bind",
    "check_keys_file_mode",
    "requires",
]
