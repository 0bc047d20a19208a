"""A fake Hugging Face Hub on localhost, for the `models pull` tests.

It serves one model repository from a folder under the Hub's URL layout, with the headers
huggingface_hub reads:

- ``GET /api/models/<org>/<name>/revision/<rev>?blobs=true``: the repo listing (``sha``, and per
  file ``rfilename``, ``size``, ``blobId``, and ``lfs.sha256`` for LFS files); an unknown
  revision answers 404 with ``X-Error-Code: RevisionNotFound``, an unknown repo ``RepoNotFound``;
- ``HEAD`` / ``GET /<org>/<name>/resolve/<rev>/<file>``: ``X-Repo-Commit``, ``ETag`` (the Git
  blob id, or the sha256 for LFS files, which also get ``X-Linked-Etag`` / ``X-Linked-Size``),
  ``Content-Length``, ``Accept-Ranges``; a ``Range: bytes=N-`` GET answers 206 with
  ``Content-Range``.

Knobs: ``corrupt`` (names served with one byte changed, while the listing and ETag advertise
the true digest), ``stall_after`` (name -> bytes sent before a GET without Range stops
sending until ``release`` is set: a download that a test can kill mid-file). ``requests``
records (method, path, Range header) of every request.
"""

from __future__ import annotations

import hashlib
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import TracebackType
from urllib.parse import unquote, urlparse

LFS_SUFFIXES = (".safetensors", ".bin", ".onnx")


def blob_id(data: bytes) -> str:
    """Git's blob id: SHA-1 of ``b"blob <size>\\0" + data``."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


class FakeHub:
    """One repository ``repo_id`` at commit ``commit`` with the files of ``folder`` (+ ``extra``).

    Use as a context manager; ``url`` is the endpoint to put in ``HF_ENDPOINT``.
    """

    def __init__(
        self,
        repo_id: str,
        folder: Path,
        commit: str = "0123456789abcdef0123456789abcdef01234567",
        extra: dict[str, bytes] | None = None,
    ) -> None:
        self.repo_id, self.commit = repo_id, commit
        self.files = {
            p.relative_to(folder).as_posix(): p.read_bytes()
            for p in sorted(folder.rglob("*"))
            if p.is_file()
        }
        self.files.update(extra or {})
        self.corrupt: set[str] = set()
        self.stall_after: dict[str, int] = {}
        self.release = threading.Event()
        self.requests: list[tuple[str, str, str | None]] = []
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self._server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"

    def __enter__(self) -> FakeHub:
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.release.set()
        self._server.shutdown()
        self._server.server_close()

    def is_lfs(self, name: str) -> bool:
        return name.endswith(LFS_SUFFIXES)

    def etag(self, name: str) -> str:
        data = self.files[name]
        return hashlib.sha256(data).hexdigest() if self.is_lfs(name) else blob_id(data)

    def listing(self) -> dict[str, object]:
        siblings: list[dict[str, object]] = []
        for name, data in self.files.items():
            entry: dict[str, object] = {"rfilename": name, "size": len(data)}
            entry["blobId"] = blob_id(data)  # for an LFS file, the pointer's (never checked)
            if self.is_lfs(name):
                entry["lfs"] = {"size": len(data), "sha256": self.etag(name), "pointerSize": 134}
            siblings.append(entry)
        return {"id": self.repo_id, "sha": self.commit, "siblings": siblings}

    def served(self, name: str) -> bytes:
        data = self.files[name]
        if name in self.corrupt:
            middle = len(data) // 2
            data = data[:middle] + bytes([data[middle] ^ 0xFF]) + data[middle + 1 :]
        return data


def _handler(hub: FakeHub) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: object) -> None:  # quiet
            pass

        def do_GET(self) -> None:
            self._answer(body=True)

        def do_HEAD(self) -> None:
            self._answer(body=False)

        def _answer(self, body: bool) -> None:
            path = unquote(urlparse(self.path).path)
            hub.requests.append((self.command, path, self.headers.get("Range")))
            api = f"/api/models/{hub.repo_id}/revision/"
            resolve = f"/{hub.repo_id}/resolve/"
            if path.startswith(api):
                self._listing(path.removeprefix(api))
            elif path.startswith(resolve):
                rev, _, name = path.removeprefix(resolve).partition("/")
                self._file(rev, name, body)
            else:
                self._error(404, "RepoNotFound")

        def _error(self, status: int, code: str) -> None:
            self.send_response(status)
            self.send_header("X-Error-Code", code)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def _listing(self, rev: str) -> None:
            if rev not in (hub.commit, "main"):
                self._error(404, "RevisionNotFound")
                return
            data = json.dumps(hub.listing()).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def _file(self, rev: str, name: str, body: bool) -> None:
            if rev not in (hub.commit, "main"):
                self._error(404, "RevisionNotFound")
                return
            if name not in hub.files:
                self._error(404, "EntryNotFound")
                return
            data = hub.served(name)
            start = 0
            ranged = self.headers.get("Range")
            if ranged and body:
                start = int(ranged.removeprefix("bytes=").split("-")[0])
            self.send_response(206 if start else 200)
            self.send_header("X-Repo-Commit", hub.commit)
            self.send_header("ETag", f'"{hub.etag(name)}"')
            if hub.is_lfs(name):
                self.send_header("X-Linked-Etag", f'"{hub.etag(name)}"')
                self.send_header("X-Linked-Size", str(len(data)))
            self.send_header("Accept-Ranges", "bytes")
            self.send_header("Content-Length", str(len(data) - start))
            if start:
                self.send_header("Content-Range", f"bytes {start}-{len(data) - 1}/{len(data)}")
            self.end_headers()
            if body:
                self._send(name, data[start:], stall=not start)

        def _send(self, name: str, data: bytes, stall: bool) -> None:
            limit = hub.stall_after.get(name) if stall else None
            try:
                if limit is None:
                    self.wfile.write(data)
                    return
                self.wfile.write(data[:limit])
                self.wfile.flush()
                hub.release.wait(60)
                self.wfile.write(data[limit:])
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client was killed: what a test wants

    return Handler
