"""One error shape for the HTTP API, ``{error, message, hint}``, mapped from exceptions in one place.

Status codes: 400 bad input, 401 no or unknown API key, 403 the key's role is too low, 404 unknown
collection, record or route, 405 wrong method, 409 model or schema mismatch, 413 body or batch too
large, 421 a Host this server does not answer (DNS rebinding), 422 request validation, 429 the
key's rate limit (with ``Retry-After``), 503 embedder or backend unavailable, 500 anything unexpected (logged
server-side; the client sees no stack trace). Messages never carry absolute paths.

Routes under ``/v1/`` (the OpenAI-shaped ``/v1/embeddings``) answer the same fields in OpenAI's
error shape, ``{"error": {"message", "type", "code", "param", "hint"}}`` (``type`` and ``code``
are the error code above), because OpenAI clients read only ``error.message``; so do the answers
given before any route runs (Host/Origin guard, body limit): semsearch/server/error_shape.py.
"""

from __future__ import annotations

import logging
import os
import re
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.routing import Match

from semsearch.errors import (
    BackendUnavailable,
    DimensionMismatch,
    EmbedderUnavailable,
    IndexNotFound,
    IndexUnhealthy,
    ModelMismatch,
    SemsearchError,
    StoreCorrupted,
)
from semsearch.filters import MAX_FILTER_DEPTH
from semsearch.schema import SchemaConflict
from semsearch.server.error_shape import error_content
from semsearch.validation import MAX_VALUE_DEPTH, SURROGATE_HINT

__all__ = [
    "ApiError",
    "ErrorBody",
    "error_responses",
    "install_error_handlers",
    "redact_paths",
    "status_for",
]

log = logging.getLogger(__name__)


class ErrorBody(BaseModel):
    """Every error response: a stable machine-readable code, a sentence, and how to fix it."""

    error: str
    message: str
    hint: str | None = None


class ApiError(Exception):
    """An HTTP-level error raised by the server itself (auth, limits, unknown record)."""

    def __init__(
        self,
        status: int,
        error: str,
        message: str,
        hint: str | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.error = error
        self.message = message
        self.hint = hint
        self.headers = headers


#: Status per library error class; the first match along the class's MRO wins; otherwise 400.
STATUS: dict[type[SemsearchError], int] = {
    IndexNotFound: 404,
    ModelMismatch: 409,
    DimensionMismatch: 409,
    SchemaConflict: 409,
    EmbedderUnavailable: 503,
    BackendUnavailable: 503,
    IndexUnhealthy: 503,  # quarantined index: semantic refused until the next sync (health.py)
    StoreCorrupted: 500,
}

_STATUS_CODES = {
    400: "bad_request",
    401: "unauthorized",
    403: "forbidden",
    404: "not_found",
    405: "method_not_allowed",
    409: "conflict",
    413: "payload_too_large",
    415: "unsupported_media_type",
    422: "validation_error",
    429: "rate_limited",
    500: "internal_error",
    503: "unavailable",
}


def status_for(exc: SemsearchError) -> int:
    """The HTTP status for a library error (400 unless :data:`STATUS` says otherwise)."""
    for cls in type(exc).__mro__:
        if cls in STATUS:
            return STATUS[cls]
    return 400


def _snake(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


_ABS_PATH = re.compile(r"(^|[\s'\"(=\[])(/[^\s'\"()\[\],;]+)")


def redact_paths(text: str) -> str:
    """Replace absolute filesystem paths in ``text`` by their base name (``/a/b/x.db`` -> ``x.db``).

    A path counts as a filesystem path when its first segment is a directory on this machine
    (``/tmp/...``, ``/home/...``), so API routes such as ``/collections/x`` are left alone.
    """

    def repl(m: re.Match[str]) -> str:
        path = m.group(2)
        top = "/" + path.lstrip("/").split("/", 1)[0]
        if path.count("/") < 2 or not os.path.isdir(top):
            return m.group(0)
        return m.group(1) + (os.path.basename(path.rstrip("/")) or "…")

    return _ABS_PATH.sub(repl, text)


def _body(
    request: Request,
    status: int,
    error: str,
    message: str,
    hint: str | None,
    headers: dict[str, str] | None = None,
) -> JSONResponse:
    content = error_content(request.url.path, error, message, hint)
    return JSONResponse(content, status_code=status, headers=headers)


def error_responses(*statuses: int) -> dict[int | str, dict[str, Any]]:
    """OpenAPI ``responses=`` entries declaring the error shape for ``statuses``."""
    return {s: {"model": ErrorBody, "description": _STATUS_CODES.get(s, "error")} for s in statuses}


#: The hint for a body that cannot be parsed: not JSON, not UTF-8, or nested too deep to read.
_JSON_HINT = (
    "send a JSON body encoded as UTF-8 (Content-Type: application/json); record values nest at "
    f"most {MAX_VALUE_DEPTH} levels and filters at most {MAX_FILTER_DEPTH}"
)


def _not_json_typed(errors: Any, content_type: str | None) -> bool:
    """True when the body was not parsed because it was not sent as JSON: FastAPI then
    validates the raw bytes and reports that the body is not an object."""
    if content_type is not None and "json" in content_type.lower():
        return False
    return any(tuple(e.get("loc", ())) == ("body",) for e in errors)


def _validation_message(
    exc: RequestValidationError, path: str, content_type: str | None = None
) -> tuple[int, str, str, str | None]:
    """(status, error code, message, hint) for a body that does not match its model.

    A lone surrogate in a string is a 400 with the library's code and hint, as when the library
    itself finds one (``invalid_record`` on record routes, else ``invalid_query``). A body sent
    without a JSON ``Content-Type`` (``curl -d`` without ``-H``) is a 400 ``invalid_json`` that
    says so.
    """
    errors = exc.errors()
    if any(e.get("type") == "json_invalid" for e in errors):
        return 400, "invalid_json", "the request body is not valid JSON", _JSON_HINT
    if _not_json_typed(errors, content_type):
        sent = f"Content-Type {content_type}" if content_type else "no Content-Type"
        return (
            400,
            "invalid_json",
            f"the request body was sent with {sent}, not as JSON",
            "send Content-Type: application/json (with curl: -H 'Content-Type: application/json')",
        )
    parts = []
    for err in errors[:5]:
        loc = ".".join(str(p) for p in err.get("loc", ()) if p != "body") or "body"
        if err.get("type") == "string_unicode":
            code = "invalid_record" if path.endswith("/records") else "invalid_query"
            return 400, code, f"{loc} holds a lone surrogate", SURROGATE_HINT
        msg = "unknown key" if err.get("type") == "extra_forbidden" else err.get("msg", "invalid")
        parts.append(f"{loc}: {msg}")
    message = "; ".join(parts) or "the request is not valid"
    return 422, "validation_error", message, "see the request schema at /docs"


def _allowed_methods(request: Request) -> str:
    """Every method any route serves at this path (Starlette lists only the first route's)."""
    methods: set[str] = set()
    for route in request.app.router.routes:
        match, _ = route.matches(request.scope)
        if match != Match.NONE:
            methods |= set(getattr(route, "methods", None) or ())
    return ", ".join(sorted(methods))


def install_error_handlers(app: FastAPI) -> None:
    """Register the handlers that turn every exception into the one error shape."""

    @app.exception_handler(SemsearchError)
    async def _semsearch(request: Request, exc: SemsearchError) -> JSONResponse:
        hint = redact_paths(exc.hint) if exc.hint else None
        status = status_for(exc)
        if status >= 500:
            log.warning("%s on %s: %s", type(exc).__name__, request.url.path, exc.message)
        return _body(request, status, _snake(type(exc).__name__), redact_paths(exc.message), hint)

    @app.exception_handler(ApiError)
    async def _api(request: Request, exc: ApiError) -> JSONResponse:
        return _body(request, exc.status, exc.error, exc.message, exc.hint, exc.headers)

    @app.exception_handler(RequestValidationError)
    async def _validation(request: Request, exc: RequestValidationError) -> JSONResponse:
        content_type = request.headers.get("content-type")
        status, code, message, hint = _validation_message(exc, request.url.path, content_type)
        return _body(request, status, code, message, hint)

    @app.exception_handler(StarletteHTTPException)
    async def _http(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        code = _STATUS_CODES.get(exc.status_code, "error")
        message = exc.detail if isinstance(exc.detail, str) else code.replace("_", " ")
        hint = "see the API at /docs" if exc.status_code in (404, 405) else None
        if exc.status_code == 400 and message == "There was an error parsing the body":
            # FastAPI's answer to a body that is not UTF-8 or nests too deep for json.loads
            code, message, hint = (
                "invalid_json",
                "the request body cannot be read as JSON",
                _JSON_HINT,
            )
        headers = dict(getattr(exc, "headers", None) or {})
        if exc.status_code == 405:
            headers["Allow"] = _allowed_methods(request)
        return _body(request, exc.status_code, code, message, hint, headers or None)

    @app.exception_handler(Exception)
    async def _unexpected(request: Request, exc: Exception) -> JSONResponse:
        log.exception("unexpected error on %s %s", request.method, request.url.path)
        return _body(
            request,
            500,
            "internal_error",
            "the server hit an unexpected error",
            "see the server log",
        )
