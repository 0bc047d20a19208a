"""Which backend a location string names, checked by its form without touching it.

``semsearch.connect(location)`` and every face (CLI, HTTP, MCP) check the form first, so a
location that can never be an index is refused with the list of supported forms before anything
is opened. Messages never show a password (:func:`redact`).
"""

from __future__ import annotations

import os
import re

from semsearch.errors import BackendUnavailable

__all__ = ["SUPPORTED_LOCATIONS", "check_location", "redact"]


SUPPORTED_LOCATIONS = (
    "a path ending in .embed.db, ':memory:', postgresql://..., milvus-lite:///path.db, "
    "http(s)://host:19530 (Milvus)"
)


def check_location(location: object) -> tuple[str, str]:
    """Check a location's form without touching it: (location as text, backend name).

    Every face checks the form before the existence (``semsearch mcp --index notes.db`` says
    "unsupported location", not "no index at notes.db" with a hint that cannot work), and the
    servers refuse to start on a location that can never be an index.

    Returns:
        The location as a string and ``"sqlite"``, ``"postgres"`` or ``"milvus"``.
    Raises:
        BackendUnavailable: not a path or URL, or a form no backend takes (the message lists
            the supported ones).
    """
    if not isinstance(location, str | os.PathLike):
        raise BackendUnavailable(
            f"a location must be a path or URL, got {type(location).__name__}",
            hint=f"supported locations: {SUPPORTED_LOCATIONS}",
        )
    loc = os.fspath(location)
    if isinstance(loc, bytes):
        loc = os.fsdecode(loc)
    if loc == ":memory:" or loc.endswith(".embed.db"):
        return loc, "sqlite"
    if loc.startswith(("postgresql://", "postgres://")):
        return loc, "postgres"
    if loc.startswith(("milvus-lite://", "http://", "https://")):
        return loc, "milvus"
    name = redact(loc) if "://" in loc else os.path.basename(loc) or loc
    hint = f"supported locations: {SUPPORTED_LOCATIONS}"
    if "://" not in loc:
        stem = name.removesuffix(".db").removesuffix(".sqlite")
        hint = f"an index file name ends in .embed.db, e.g. {stem}.embed.db; {hint}"
    raise BackendUnavailable(f"unsupported location {name!r}", hint=hint)


def redact(location: str) -> str:
    return re.sub(r"//([^:/@]+):[^@]*@", r"//\1:***@", location)
