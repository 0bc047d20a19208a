"""Opening Milvus (Milvus Lite data folder or a server URL) and translating its errors.

pymilvus exceptions never leave this package raw: :func:`translated` turns them into
:class:`~semsearch.errors.BackendUnavailable` (cannot reach or open the store) or
:class:`~semsearch.errors.StoreCorrupted` (the store answered, but not as a semsearch store
should), each with a hint. Messages carry no absolute paths.
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs, urlsplit, urlunsplit

from semsearch.errors import BackendUnavailable, NotAnIndex, SemsearchError, StoreCorrupted

__all__ = ["MilvusTarget", "close_client", "open_client", "parse_location", "translated"]

_INSTALL_HINT = "pip install 'semsearch[milvus]' (pymilvus and milvus-lite)"
_lite_users: dict[str, int] = {}
_lite_lock = threading.Lock()


@dataclass(frozen=True)
class MilvusTarget:
    """Where a Milvus store lives.

    Attributes:
        lite_path: the Milvus Lite data folder (absolute), or None for a server.
        uri: the server URI without credentials (``http(s)://host:port``), or None for Lite.
        token: ``user:password`` or an API key, or None.
        db_name: the Milvus database, or None for the default.
        index: vector index type (``HNSW``, ``IVF_FLAT``, ``AUTOINDEX``, ``FLAT``).
    """

    lite_path: str | None
    uri: str | None
    token: str | None = None
    db_name: str | None = None
    index: str = "HNSW"

    @property
    def display(self) -> str:
        """The location to show users (no password, no token)."""
        return f"milvus-lite://{self.lite_path}" if self.lite_path else str(self.uri)


def parse_location(location: str) -> MilvusTarget:
    """Parse ``milvus-lite:///path.db`` or ``http(s)://[user:pass@]host:port[?token=..&db=..]``.

    ``?index=HNSW|IVF_FLAT|AUTOINDEX|FLAT`` picks the vector index for new collections.
    Raises:
        BackendUnavailable: an empty path, an unknown scheme or an unknown index type.
    """
    parts = urlsplit(location)
    query = {k: v[-1] for k, v in parse_qs(parts.query).items()}
    index = query.get("index", "HNSW").upper()
    if index not in ("HNSW", "IVF_FLAT", "AUTOINDEX", "FLAT"):
        raise BackendUnavailable(
            f"unknown Milvus index type {index!r}", hint="use HNSW, IVF_FLAT, AUTOINDEX or FLAT"
        )
    if parts.scheme == "milvus-lite":
        path = (parts.netloc + parts.path) if parts.netloc else parts.path
        if not path:
            raise BackendUnavailable(
                "milvus-lite location without a path", hint="e.g. milvus-lite:///data/notes.db"
            )
        return MilvusTarget(os.path.abspath(path), None, index=index)
    if parts.scheme in ("http", "https"):
        token = query.get("token")
        if parts.username:
            token = f"{parts.username}:{parts.password or ''}"
        netloc = parts.hostname or ""
        if parts.port:
            netloc += f":{parts.port}"
        uri = urlunsplit((parts.scheme, netloc, "", "", ""))
        return MilvusTarget(None, uri, token, query.get("db"), index)
    raise BackendUnavailable(
        f"not a Milvus location: {parts.scheme}://...",
        hint="use milvus-lite:///path.db or http(s)://host:19530",
    )


def open_client(target: MilvusTarget) -> Any:
    """A connected ``pymilvus.MilvusClient``; for Milvus Lite, starts its in-process server.

    Raises:
        BackendUnavailable: pymilvus/milvus-lite missing, the server unreachable, or the Lite
            folder locked by another process.
        NotAnIndex: the Lite path is a folder that is not a Milvus Lite data folder.
        StoreCorrupted: the Lite path is a file, or its data cannot be read.
    """
    try:
        from pymilvus import MilvusClient
    except ImportError as exc:
        raise BackendUnavailable("pymilvus is not installed", hint=_INSTALL_HINT) from exc
    _no_client_string_scan()
    if target.lite_path is None:
        kwargs: dict[str, Any] = {"uri": target.uri, "timeout": 10}
        if target.token:
            kwargs["token"] = target.token
        if target.db_name:
            kwargs["db_name"] = target.db_name
        with translated(f"connecting to {target.display}"):
            return MilvusClient(**kwargs)
    path = target.lite_path
    _check_lite_path(path)
    logging.getLogger("pymilvus.client.iterator.query_iterator").addFilter(_quiet_lite)
    logging.getLogger("grpc._server").addFilter(_quiet_lite)
    logging.getLogger("milvus_lite.server_manager").addFilter(_quiet_lock)
    try:
        client = MilvusClient(path)
    except Exception as exc:
        raise _lite_open_error(path, exc) from exc
    with _lite_lock:
        _lite_users[path] = _lite_users.get(path, 0) + 1
    return client


def _no_client_string_scan() -> None:
    """Turn off pymilvus' client-side check of VARCHAR values (``CHECK_STR_ARRAY``).

    pymilvus 3.0.2 hands each row's string to ``convert_to_str_array``, which iterates over it
    as if it were a list of strings: a type check and a length check per *character*. That was
    the largest part of the client's time in a Milvus write (about 2.5 of 15 profiled seconds
    for 10,000 records of short text; it grows with the text). semsearch checks its own sizes
    before a write (``InvalidRecord``), and Milvus Lite and the server check max_length again.
    """
    from pymilvus.client import entity_helper

    if hasattr(entity_helper, "CHECK_STR_ARRAY"):
        entity_helper.CHECK_STR_ARRAY = False


def _quiet_lite(record: logging.LogRecord) -> bool:
    """Drop the two log lines of every Milvus Lite query iterator: pymilvus' warning that no MVCC
    timestamp came back, and the in-process server's error for the unimplemented AllocTimestamp
    call that causes it (both harmless: the iterator falls back to a client-side timestamp)."""
    message = record.getMessage()
    return "mvccTs" not in message and "Method not implemented" not in message


def _quiet_lock(record: logging.LogRecord) -> bool:
    """Drop Milvus Lite's log of a server it could not start because another process holds the
    store's lock (its traceback went to stderr through logging's last-resort handler): the
    lock is reported once, as :class:`BackendUnavailable` with a hint (:func:`_lite_open_error`).
    Its other failures are logged as before."""
    exc = record.exc_info[1] if record.exc_info else None
    while exc is not None:
        if type(exc).__name__ == "DataDirLockedError":
            return False
        exc = exc.__cause__ or exc.__context__
    return True


def close_client(target: MilvusTarget, client: Any) -> None:
    """Close the client; the last user of a Milvus Lite folder stops its server (frees the lock)."""
    with contextlib.suppress(Exception):  # closing must not raise; the client is done either way
        client.close()
    path = target.lite_path
    if path is None:
        return
    with _lite_lock:
        left = _lite_users.get(path, 1) - 1
        if left > 0:
            _lite_users[path] = left
            return
        _lite_users.pop(path, None)
    from milvus_lite.server_manager import server_manager_instance

    server_manager_instance.release_server(path)


def _check_lite_path(path: str) -> None:
    name = os.path.basename(path)
    parent = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(parent):  # Milvus Lite reports it as a store it cannot open
        raise BackendUnavailable(
            f"cannot create the Milvus Lite store {name}: its folder does not exist",
            hint="create the folder first, or choose a path in an existing folder",
        )
    if os.path.isfile(path):
        raise StoreCorrupted(
            f"{name} is a file; Milvus Lite 3 keeps its data in a folder",
            hint="files from milvus-lite 2.x cannot be read by milvus-lite 3: re-index into a "
            "new path (the file was left untouched)",
        )
    if os.path.isdir(path) and os.listdir(path):
        known = {"LOCK", "collections", "databases", ".database-staging"}
        if not known & set(os.listdir(path)):
            raise NotAnIndex(
                f"{name} is a folder that is not a Milvus Lite store",
                hint="the folder was left untouched; choose a new path such as data.db",
            )


def _lite_open_error(path: str, exc: Exception) -> SemsearchError:
    name = os.path.basename(path)
    if ImportError in type(exc).__mro__ or "milvus_lite" in str(exc):
        return BackendUnavailable("milvus-lite is not installed", hint=_INSTALL_HINT)
    if _locked(path):
        return BackendUnavailable(
            f"the Milvus Lite store {name} is open in another process",
            hint="Milvus Lite allows one process per store: close the other one, or run a "
            "Milvus server and connect to http://host:19530",
        )
    return StoreCorrupted(
        f"cannot open the Milvus Lite store {name}",
        hint="its files may be damaged; restore a backup or re-index into a new path",
    )


def _locked(path: str) -> bool:
    """True when another process holds Milvus Lite's LOCK file in ``path``."""
    lock = os.path.join(path, "LOCK")
    if not os.path.exists(lock):
        return False
    import fcntl

    fd = os.open(lock, os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return True
    else:
        fcntl.flock(fd, fcntl.LOCK_UN)
        return False
    finally:
        os.close(fd)


@contextmanager
def translated(action: str) -> Iterator[None]:
    """Turn pymilvus/gRPC exceptions raised inside the block into SemsearchErrors."""
    try:
        yield
    except SemsearchError:
        raise
    except Exception as exc:
        module = type(exc).__module__ or ""
        if not module.startswith(("pymilvus", "grpc", "milvus_lite")):
            raise
        message = str(getattr(exc, "message", "") or exc).splitlines()[0][:300]
        code = getattr(exc, "code", None)
        if "Connect" in type(exc).__name__ or code in (1, 2) or module.startswith("grpc"):
            raise BackendUnavailable(
                f"Milvus is unreachable while {action}: {message}",
                hint="check that the Milvus server is running and the URL and token are right",
            ) from exc
        raise StoreCorrupted(
            f"Milvus refused {action}: {message}",
            hint="the Milvus collections may have been changed outside semsearch; "
            "re-index into a new collection",
        ) from exc
