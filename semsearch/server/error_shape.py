"""The error bodies both local servers send, in one place.

Every error is ``{"error": code, "message": ..., "hint": ...}`` (the house shape), except on
routes under :data:`OPENAI_PREFIX` (the OpenAI-shaped ``/v1/embeddings``), which answer the same
fields in OpenAI's error shape, ``{"error": {"message", "type", "code", "param", "hint"}}``
(``type`` and ``code`` are the error code), because OpenAI clients read only ``error.message``.
The route handlers' errors (server/http/errors.py) and the answers given before any handler
runs (the Host/Origin guard, server/host_guard.py; the body limit, server/http/limits.py) all
take their body from :func:`error_content`.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

__all__ = ["OPENAI_PREFIX", "error_content", "send_error"]

#: Routes in OpenAI's API shape, whose errors take OpenAI's error shape.
OPENAI_PREFIX = "/v1/"


def error_content(path: str, code: str, message: str, hint: str | None) -> dict[str, Any]:
    """The JSON body of an error answered on ``path`` (a request's URL path): the house shape,
    or OpenAI's under :data:`OPENAI_PREFIX`."""
    if path.startswith(OPENAI_PREFIX):
        return {"error": {"message": message, "type": code, "code": code, "param": None,
                          "hint": hint}}  # fmt: skip
    return {"error": code, "message": message, "hint": hint}


async def send_error(
    send: Any,
    scope: Any,
    status: int,
    code: str,
    message: str,
    hint: str | None,
    headers: Sequence[tuple[bytes, bytes]] = (),
) -> None:
    """Answer an ASGI HTTP request (``scope``) with ``status`` and :func:`error_content`, as
    JSON, from a middleware (before any route handler runs)."""
    body = json.dumps(error_content(str(scope.get("path", "")), code, message, hint)).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
                *headers,
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})
