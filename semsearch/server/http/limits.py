"""Request body size limit: a small ASGI middleware that answers 413 in the API's error shape
(OpenAI's under ``/v1/``: server/error_shape.py)."""

from __future__ import annotations

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from semsearch.server.error_shape import send_error

__all__ = ["BodyLimit"]


class BodyLimit:
    """Reject request bodies larger than ``max_bytes`` with 413, before the app parses them.

    A declared ``Content-Length`` is checked up front; a body sent without one (chunked) is
    read up to the limit and replayed to the app.

    Args:
        app: the ASGI app to wrap.
        max_bytes: the largest body accepted, in bytes.
    """

    def __init__(self, app: ASGIApp, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = dict(scope.get("headers") or [])
        declared = headers.get(b"content-length")
        if declared is not None:
            if not declared.isdigit() or int(declared) > self.max_bytes:
                await self._reject(scope, send)
                return
            await self.app(scope, receive, send)
            return
        messages: list[Message] = []
        size = 0
        while True:
            message = await receive()
            messages.append(message)
            if message["type"] != "http.request":
                break
            size += len(message.get("body", b""))
            if size > self.max_bytes:
                await self._reject(scope, send)
                return
            if not message.get("more_body", False):
                break

        async def replay() -> Message:
            return messages.pop(0) if messages else await receive()

        await self.app(scope, replay, send)

    async def _reject(self, scope: Scope, send: Send) -> None:
        records = str(scope.get("path", "")).endswith(("/records", "/messages"))
        hint = (
            "send fewer records per request"
            if records
            else f"send a smaller request (at most {self.max_bytes} bytes): shorten the query "
            "or the filter"
        )
        message = f"the request body is larger than {self.max_bytes} bytes"
        await send_error(send, scope, 413, "payload_too_large", message, hint)
