"""API keys and roles for the HTTP API.

Keys come from ``SEMSEARCH_API_KEYS`` (``"key1:read,key2:admin"``) and/or a keys file (one
``key:role`` per line, ``#`` comments). Roles are ordered: ``read`` < ``write`` < ``admin``; a key
may do everything its role and the lower roles may. Clients send ``Authorization: Bearer <key>``
or ``X-API-Key: <key>``. With no keys configured every request is trusted as admin, which is why
the server then refuses to bind anything but 127.0.0.1 (:func:`check_bind`).
"""

from __future__ import annotations

import hmac
import math
import os
import stat
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from enum import IntEnum
from pathlib import Path

from fastapi import Depends, Request
from fastapi.security import APIKeyHeader, HTTPAuthorizationCredentials, HTTPBearer

from semsearch.errors import SemsearchError
from semsearch.server.http.errors import ApiError

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

ENV_API_KEYS = "SEMSEARCH_API_KEYS"
ENV_API_KEYS_FILE = "SEMSEARCH_API_KEYS_FILE"
#: The only address the server binds when no API keys are configured.
LOOPBACK = "127.0.0.1"
#: Keys shorter than this are refused at startup (they are guessable).
MIN_KEY_LENGTH = 8


class Role(IntEnum):
    """What a key may do; a higher role includes the lower ones."""

    read = 1
    write = 2
    admin = 3


@dataclass(frozen=True)
class KeyRing:
    """The configured API keys and their roles. Empty means "local mode": no auth, loopback only."""

    keys: Mapping[str, Role]

    @classmethod
    def parse(cls, text: str, *, source: str = "keys") -> KeyRing:
        """Parse ``key:role`` entries separated by commas or newlines (``#`` starts a comment).

        Raises:
            SemsearchError: an entry without a role, an unknown role, a short or duplicate key.
        """
        keys: dict[str, Role] = {}
        for raw in text.replace(",", "\n").splitlines():
            entry = raw.split("#", 1)[0].strip()
            if not entry:
                continue
            key, sep, role = entry.rpartition(":")
            key, role = key.strip(), role.strip().lower()
            if not sep or role not in Role.__members__:
                raise SemsearchError(
                    f"bad API key entry in {source}: expected key:role",
                    hint="roles are read, write and admin, e.g. SEMSEARCH_API_KEYS='k3y-xyz:admin'",
                )
            if len(key) < MIN_KEY_LENGTH or key in keys:
                raise SemsearchError(
                    f"an API key in {source} is shorter than {MIN_KEY_LENGTH} characters or repeated",
                    hint="use long random keys, e.g. `python -c 'import secrets; print(secrets.token_urlsafe())'`",
                )
            keys[key] = Role[role]
        return cls(keys)

    @classmethod
    def load(cls, env_value: str | None = None, keys_file: str | Path | None = None) -> KeyRing:
        """Keys from the environment value and/or a keys file (both are merged).

        Raises:
            SemsearchError: the file cannot be read, is writable by its group or by others (see
                :func:`check_keys_file_mode`), or an entry is invalid.
        """
        keys: dict[str, Role] = {}
        if env_value:
            keys.update(cls.parse(env_value, source=ENV_API_KEYS).keys)
        if keys_file:
            check_keys_file_mode(keys_file)
            try:
                text = Path(keys_file).read_text(encoding="utf-8")
            except OSError as exc:
                raise SemsearchError(
                    f"cannot read the API keys file: {exc.strerror}",
                    hint="pass a readable file with one key:role per line",
                ) from exc
            keys.update(cls.parse(text, source="the keys file").keys)
        return cls(keys)

    @property
    def empty(self) -> bool:
        """True when no keys are configured (local mode)."""
        return not self.keys

    def role_for(self, key: str) -> Role | None:
        """The role of ``key``, compared in constant time, or None if unknown."""
        found = None
        for known, role in self.keys.items():
            if hmac.compare_digest(known.encode(), key.encode()):
                found = role
        return found


def check_keys_file_mode(keys_file: str | Path) -> None:
    """Refuse a keys file that its group or other users may write, as ssh refuses a loose key
    file: any local user could add a ``key:admin`` line. No check on Windows (no mode bits).

    Raises:
        SemsearchError: the file is group- or world-writable (hint: ``chmod 600``), or it
            cannot be read.
    """
    if os.name == "nt":
        return
    try:
        mode = os.stat(keys_file).st_mode
    except OSError as exc:
        raise SemsearchError(
            f"cannot read the API keys file: {exc.strerror}",
            hint="pass a readable file with one key:role per line",
        ) from exc
    if mode & (stat.S_IWGRP | stat.S_IWOTH):
        who = "everyone" if mode & stat.S_IWOTH else "its group"
        raise SemsearchError(
            f"the API keys file can be changed by {who} (mode {stat.S_IMODE(mode):o}): anyone "
            "who can write it could add an admin key",
            hint=f"make it private to its owner: chmod 600 {Path(keys_file).name}",
        )


def request_key(request: Request) -> str | None:
    """The API key the request carries (``X-API-Key`` or ``Authorization: Bearer``), or None."""
    key = request.headers.get("x-api-key")
    if not key:
        scheme, _, credentials = request.headers.get("authorization", "").partition(" ")
        key = credentials.strip() if scheme.lower() == "bearer" else ""
    return key or None


def check_bind(host: str, ring: KeyRing) -> None:
    """Refuse to serve without API keys on anything but 127.0.0.1.

    Raises:
        SemsearchError: ``host`` is not 127.0.0.1 and no keys are configured.
    """
    if ring.empty and host != LOOPBACK:
        raise SemsearchError(
            f"refusing to bind {host} without API keys: anyone could read and change the index",
            hint=f"set {ENV_API_KEYS}='<key>:admin,<key2>:read' (or --keys-file), "
            f"or bind {LOOPBACK}",
        )


_bearer = HTTPBearer(auto_error=False, description="`Authorization: Bearer <key>`")
_header = APIKeyHeader(name="X-API-Key", auto_error=False, description="or `X-API-Key: <key>`")


def requires(role: Role) -> Callable[..., Awaitable[Role]]:
    """A FastAPI dependency that returns the caller's role, or raises 401/403/429.

    401 when keys are configured and the request carries none or an unknown one; 403 when the
    key's role is below ``role``; 429 when the key is over its rate limit (local mode: all
    callers share one bucket, off unless asked). In local mode (no keys) every caller is admin.
    """

    async def dependency(  # async: cheap, so it runs on the event loop, not in a thread
        request: Request,
        bearer: HTTPAuthorizationCredentials | None = Depends(_bearer),
        header_key: str | None = Depends(_header),
    ) -> Role:
        ring: KeyRing = request.app.state.semsearch.keys
        if ring.empty:
            _check_rate(request, "local")
            return Role.admin
        key = header_key or (bearer.credentials if bearer else None)
        if not key:
            raise ApiError(
                401, "unauthorized", "this endpoint needs an API key",
                "send `Authorization: Bearer <key>` or `X-API-Key: <key>`",
            )  # fmt: skip
        found = ring.role_for(key)
        if found is None:
            raise ApiError(401, "unauthorized", "unknown API key", "check the key and retry")
        if found < role:
            raise ApiError(
                403, "forbidden", f"this needs {'an' if role.name[0] in 'aeiou' else 'a'} {role.name} key; yours is {found.name}",
                "ask an administrator for a key with that role",
            )  # fmt: skip
        _check_rate(request, key)
        return found

    return dependency


def _check_rate(request: Request, caller: str) -> None:
    """Raise 429 with ``Retry-After`` when ``caller`` is over the server's rate limit."""
    limiter = request.app.state.semsearch.rate
    wait = limiter.retry_after(caller)
    if wait > 0:
        seconds = max(1, math.ceil(wait))  # at most a day (rate.py)
        raise ApiError(
            429, "rate_limited",
            f"too many requests for this key: the limit is {limiter.per_minute:g} per minute "
            f"(bursts of {limiter.burst})",
            f"retry after {seconds} s (Retry-After); an administrator sets the limit with "
            "--rate-limit / SEMSEARCH_RATE_LIMIT",
            headers={"Retry-After": str(seconds)},
        )  # fmt: skip
