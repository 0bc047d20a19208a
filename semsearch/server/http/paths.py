"""Ids inside URL paths: a route parameter that takes any characters, and the ids no URL can name.

Record ids may hold ``/`` and line breaks, so their route parameter uses the ``any_path``
convertor (``{record_id:any_path}``). Starlette's own ``path`` convertor (``.*``) stops at a
newline, and the route's closing ``$`` then matches before a trailing one, so
``GET …/records/x%0A`` would answer record ``x``. Conversation ids sit before ``/messages`` in
their routes, so they are single path segments (no ``/``).

Ids with a ``.`` or ``..`` path segment cannot be named in a URL at all: HTTP clients (httpx,
curl, browsers) remove dot segments before sending (RFC 3986, section 5.2.4), so
``DELETE /memory/conversations/..`` arrives as ``DELETE /memory``. The HTTP API refuses such ids,
and conversation ids with a ``/``, when they are written (:func:`refuse_unaddressable`).
"""

from __future__ import annotations

from collections.abc import Iterable

from starlette.convertors import PathConvertor, register_url_convertor

from semsearch.scope import has_dot_segment
from semsearch.server.http.errors import ApiError

__all__ = ["ANY_PATH", "has_dot_segment", "refuse_unaddressable"]

#: The convertor name for route parameters that take any characters (``{id:any_path}``).
ANY_PATH = "any_path"


class _AnyPathConvertor(PathConvertor):
    """Any characters, ``/`` and line breaks included (possibly none)."""

    regex = r"[\s\S]*"


register_url_convertor(ANY_PATH, _AnyPathConvertor())


def refuse_unaddressable(ids: Iterable[str], what: str, *, slashes: bool = True) -> None:
    """Raise a 400 ``invalid_record`` naming the first id no URL path can name: one with a
    ``.`` or ``..`` segment, or (``slashes=False``, a single-segment route parameter) a ``/``.

    Args:
        ids: the ids about to be written.
        what: what the ids name, for the message (``"record id"``, ``"conversation_id"``).
        slashes: whether the id's route parameter takes ``/`` (``any_path``).
    Raises:
        ApiError: 400; nothing has been written yet.
    """
    for identifier in ids:
        if not slashes and "/" in identifier:
            raise ApiError(
                400, "invalid_record",
                f"{what} {identifier!r} holds a '/', so it could never be read or deleted by "
                "its path",
                "use an id without '/' (e.g. a UUID); nothing was written",
            )  # fmt: skip
        if has_dot_segment(identifier):
            raise ApiError(
                400, "invalid_record",
                f"{what} {identifier!r} has a '.' or '..' path segment, which HTTP clients "
                "rewrite in URLs, so it could never be read or deleted by its path",
                "rename it (e.g. replace the dots); nothing was written",
            )  # fmt: skip
