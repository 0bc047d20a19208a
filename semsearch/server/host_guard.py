"""One Host and Origin check for both local servers (``semsearch serve`` and ``semsearch mcp
--transport http``), against DNS rebinding.

A web page the user visits can make its own domain resolve to 127.0.0.1 and then send requests
to a local server; the browser then sends that domain as ``Host``. So the servers answer only
Host names they know (a Host is read as RFC 9110 reads it: a name or IP literal and an optional
numeric port, nothing else): the loopback names (``127.0.0.1``, ``localhost``, ``[::1]``, any port),
the address they are bound to when it is a specific one, and the names given with
``--allowed-host`` or ``SEMSEARCH_ALLOWED_HOSTS`` (comma-separated; ``*.example.com`` matches
subdomains, ``*`` any name, as Starlette's ``TrustedHostMiddleware`` takes them). Any other Host
gets **421** ``misdirected_request``. A state-changing request (any method but GET, HEAD and
OPTIONS) whose ``Origin`` is not ``http(s)://`` one of those hosts, nor one given with
``--allow-origin`` / ``SEMSEARCH_ALLOWED_ORIGINS``, gets **403** ``forbidden_origin``; requests
without an ``Origin`` (curl, scripts, agents) are not affected. An Origin on a loopback name (or
the bound address) must also have the server's own port: another local server's page is another
origin. Both answers use the HTTP API's error shape ``{error, message, hint}`` (OpenAI's under
``/v1/``: server/error_shape.py). Every answer
carries :data:`NO_FRAMING`, so no other site can show the pages in a frame.
"""

from __future__ import annotations

import ipaddress
import os
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from semsearch.server.error_shape import send_error

__all__ = [
    "ENV_ALLOWED_HOSTS",
    "ENV_ALLOWED_ORIGINS",
    "LOOPBACK_NAMES",
    "NO_FRAMING",
    "HostGuard",
    "HostPolicy",
    "names_from_env",
]

ENV_ALLOWED_HOSTS = "SEMSEARCH_ALLOWED_HOSTS"
ENV_ALLOWED_ORIGINS = "SEMSEARCH_ALLOWED_ORIGINS"
#: Host names always answered (any port).
LOOPBACK_NAMES = ("127.0.0.1", "localhost", "::1")
_SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
_WILDCARD_BINDS = ("", "0.0.0.0", "::")
#: Sent with every answer: no other site may show these pages in a frame, where a user could be
#: tricked into clicking the page's buttons (clickjacking; the frame's requests carry the
#: server's own Origin). ``X-Frame-Options`` for older browsers, CSP ``frame-ancestors`` (CSP
#: Level 2) for current ones.
NO_FRAMING = (
    (b"x-frame-options", b"DENY"),
    (b"content-security-policy", b"frame-ancestors 'none'"),
)


def names_from_env(given: Iterable[str] = (), env: str = ENV_ALLOWED_HOSTS) -> tuple[str, ...]:
    """``given`` (repeated options) plus the comma-separated names of ``env``, blanks dropped."""
    names = [*given, *os.environ.get(env, "").split(",")]
    return tuple(n.strip() for n in names if n.strip())


#: RFC 3986 ``reg-name`` (and so an IPv4 address), lower-cased: unreserved characters,
#: percent-encodings and sub-delims; never ``@``, ``/``, ``:`` or whitespace.
_REG_NAME = re.compile(r"[a-z0-9\-._~%!$&'()*+,;=]+")
#: What may follow the name: nothing, or ``:`` and ASCII digits (RFC 3986 ``port = *DIGIT``).
_PORT = re.compile(r"(?::[0-9]*)?")


def _host_name(host: str) -> str:
    """The name of a ``Host`` value as RFC 9110 (section 7.2) reads it, ``uri-host [":" port]``
    with ``port = *DIGIT``: a registered name or IPv4 address, or an IPv6 literal in brackets
    (returned without them), lower-cased; "" for anything else (``127.0.0.1:80@evil.example``,
    ``localhost:abc``). A bare IPv6 address without a port (``::1``) is also taken."""
    host = host.strip().lower()
    if host.startswith("["):  # "[::1]" or "[::1]:8000"
        name, bracket, rest = host[1:].partition("]")
        return name if bracket and _PORT.fullmatch(rest) and _is_ipv6(name) else ""
    if host.count(":") > 1:
        return host if _is_ipv6(host) else ""
    name = host.partition(":")[0]
    ok = _REG_NAME.fullmatch(name) and _PORT.fullmatch(host[len(name) :])
    return name if ok else ""


def _pattern_name(pattern: str) -> str:
    """An ``--allowed-host`` name or the bound address without a port, lower-cased (``*``
    and ``*.domain`` kept); IPv6 without brackets."""
    pattern = pattern.strip().lower()
    if pattern.startswith("["):
        return pattern[1:].partition("]")[0]
    return pattern.rsplit(":", 1)[0] if pattern.count(":") == 1 else pattern


def _port(netloc: str, scheme: str) -> int | None:
    """The port of a ``host[:port]`` value, the scheme's default when it has none; None when
    the port is malformed."""
    try:
        port = urlsplit(f"//{netloc.strip()}").port
    except ValueError:
        return None
    return port if port is not None else (443 if scheme == "https" else 80)


@dataclass(frozen=True)
class HostPolicy:
    """Which Host names and browser Origins a server answers.

    Args:
        allowed_hosts: names beyond the loopback ones (``name``, ``*.domain`` or ``*``); a
            port is ignored.
        allowed_origins: full origins beyond ``http(s)://<allowed host>[:port]``, e.g.
            ``https://app.example.com``.
        bind: the address the server listens on; a specific one is allowed as a Host name.
    """

    allowed_hosts: tuple[str, ...] = ()
    allowed_origins: tuple[str, ...] = ()
    bind: str = "127.0.0.1"

    @classmethod
    def build(
        cls, hosts: Sequence[str] = (), origins: Sequence[str] = (), bind: str = "127.0.0.1"
    ) -> HostPolicy:
        """A policy from options plus ``SEMSEARCH_ALLOWED_HOSTS`` / ``..._ORIGINS``."""
        return cls(
            allowed_hosts=names_from_env(hosts, ENV_ALLOWED_HOSTS),
            allowed_origins=tuple(o.rstrip("/").lower()
                                  for o in names_from_env(origins, ENV_ALLOWED_ORIGINS)),
            bind=bind,
        )  # fmt: skip

    def host_allowed(self, host: str) -> bool:
        """True when a ``Host`` header value (with or without port) names this server."""
        name = _host_name(host)
        if not name:
            return False
        if self._local(name):
            return True
        for allowed in self.allowed_hosts:
            pattern = _pattern_name(allowed)
            if pattern == "*" or pattern == name:
                return True
            if pattern.startswith("*.") and name.endswith(pattern[1:]):
                return True
        return False

    def origin_allowed(self, origin: str, host: str | None = None) -> bool:
        """True when a browser ``Origin`` is this server's own or one allowed explicitly.

        With the request's ``host`` (its ``Host`` header), an Origin on a loopback name or on
        the bound address must also have the request's port: a page that another local server
        serves (``http://localhost:3000``) is another origin, and must not start work here
        with a form post. Names allowed with ``--allowed-host`` match on any port.
        """
        origin = origin.strip().rstrip("/").lower()
        if origin in self.allowed_origins:
            return True
        parts = urlsplit(origin)
        if parts.scheme not in ("http", "https") or not parts.netloc or parts.path:
            return False  # "null" (sandboxed frames, file://) and anything malformed
        if not self.host_allowed(parts.netloc):
            return False
        if host is None or not self._local(_host_name(parts.netloc)):
            return True
        return _port(parts.netloc, parts.scheme) == _port(host, parts.scheme)

    def _local(self, name: str) -> bool:
        """True for a loopback name or the specific address the server is bound to."""
        if name in LOOPBACK_NAMES or _is_loopback_ip(name):
            return True
        return self.bind not in _WILDCARD_BINDS and name == _pattern_name(self.bind)

    def refusal(self, method: str, headers: dict[bytes, bytes]) -> tuple[int, str, str, str] | None:
        """(status, code, message, hint) when a request must be refused, else None."""
        host = headers.get(b"host", b"").decode("latin-1")
        if not self.host_allowed(host):
            return (
                421, "misdirected_request",
                f"this server does not answer to the Host {host[:100]!r}",
                "use http://127.0.0.1:<port>, or allow the name with --allowed-host NAME or "
                f"{ENV_ALLOWED_HOSTS} (protection against DNS rebinding)",
            )  # fmt: skip
        origin = headers.get(b"origin")
        if origin is not None and method.upper() not in _SAFE_METHODS:
            text = origin.decode("latin-1")
            if not self.origin_allowed(text, host):
                return (
                    403, "forbidden_origin",
                    f"requests that change or query data are not accepted from the web page "
                    f"at {text[:100]!r}",
                    "open the page this server serves, or allow the origin with --allow-origin "
                    f"ORIGIN or {ENV_ALLOWED_ORIGINS}",
                )  # fmt: skip
        return None


def _is_ipv6(name: str) -> bool:
    try:
        ipaddress.IPv6Address(name)
    except ValueError:
        return False
    return True


def _is_loopback_ip(name: str) -> bool:
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


class HostGuard:
    """ASGI middleware applying a :class:`HostPolicy` before anything else runs.

    Args:
        app: the ASGI app to wrap.
        policy: the allowed hosts and origins.
    """

    def __init__(self, app: Any, policy: HostPolicy) -> None:
        self.app = app
        self.policy = policy

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = dict(scope.get("headers") or [])
        refused = self.policy.refusal(scope.get("method", "GET"), headers)
        if refused is not None:
            await send_error(send, scope, *refused)
            return

        async def send_unframeable(message: Any) -> None:
            if message["type"] == "http.response.start":
                message = {**message, "headers": [*message.get("headers", []), *NO_FRAMING]}
            await send(message)

        await self.app(scope, receive, send_unframeable)
