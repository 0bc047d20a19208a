"""Local stand-ins for the embedding APIs, served on 127.0.0.1 by a threaded http.server.

Each fake implements the documented request and response shapes of one API (OpenAI
``/v1/embeddings``, Azure ``/openai/deployments/{d}/embeddings``, Gemini
``:batchEmbedContents``, Ollama ``/api/embed``) and records every request it receives. A test
scripts failures for the next requests with :meth:`FakeServer.push`: an HTTP status with
headers (429 + Retry-After, 500, 401 ...), a hang longer than the client's timeout, a malformed
body, or vectors of the wrong dimension. Unscripted requests get a correct answer.

The vectors are deterministic and deliberately NOT unit length (every component is scaled by
3), so tests can check that semsearch normalises them itself.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

import numpy as np


def raw_vector(text: str, dim: int) -> list[float]:
    """A fixed pseudo-random vector for ``text`` with norm 3 (so not unit length)."""
    seed = int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "little")
    vec = np.random.default_rng(seed).standard_normal(dim)
    return (3.0 * vec / np.linalg.norm(vec)).tolist()


@dataclass
class Seen:
    """One request the fake received."""

    method: str
    path: str
    query: dict[str, list[str]]
    headers: dict[str, str]
    body: Any


@dataclass
class Action:
    """What to do with one request: answer normally, fail, hang, or send a bad body."""

    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    body: Any = None  # None: the API's normal answer
    hang: float = 0.0
    dim: int | None = None  # answer with vectors of this dimension
    raw: bytes | None = None  # send these bytes as the body


Responder = Callable[[Seen, Action], tuple[int, dict[str, str], bytes]]


class FakeServer:
    """A threaded HTTP server on 127.0.0.1 with a script of actions for the next requests."""

    def __init__(self, respond: Responder) -> None:
        self.requests: list[Seen] = []
        self.script: deque[Action] = deque()
        self._respond = respond
        self._lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                parts = urlsplit(self.path)
                try:
                    body = json.loads(raw) if raw else None
                except ValueError:
                    body = raw
                headers = {k.lower(): v for k, v in self.headers.items()}
                seen = Seen("POST", parts.path, parse_qs(parts.query), headers, body)
                with server._lock:
                    server.requests.append(seen)
                    action = server.script.popleft() if server.script else Action()
                if action.hang:
                    time.sleep(action.hang)
                status, headers, payload = server._respond(seen, action)
                try:
                    self.send_response(status)
                    headers = {"Content-Type": "application/json", **headers}
                    for key, value in headers.items():
                        self.send_header(key, value)
                    self.send_header("Content-Length", str(len(payload)))
                    self.end_headers()
                    self.wfile.write(payload)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (timeout test)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self._thread = threading.Thread(
            target=self.httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )

    def push(self, *actions: Action) -> None:
        """Script the next requests, in order."""
        self.script.extend(actions)

    def bodies(self) -> list[Any]:
        """The JSON bodies received so far."""
        return [r.body for r in self.requests]

    def __enter__(self) -> FakeServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def _reply(action: Action, normal: Any) -> tuple[int, dict[str, str], bytes]:
    if action.raw is not None:
        return action.status, action.headers, action.raw
    body = action.body if action.body is not None else normal
    return action.status, action.headers, json.dumps(body).encode()


def openai_responder(default_dim: int) -> Responder:
    """OpenAI / Azure OpenAI: ``{"object": "list", "data": [{"index", "embedding"}], ...}``."""

    def respond(seen: Seen, action: Action) -> tuple[int, dict[str, str], bytes]:
        texts = seen.body["input"]
        texts = [texts] if isinstance(texts, str) else texts
        dim = action.dim or seen.body.get("dimensions") or default_dim
        data = [
            {"object": "embedding", "index": i, "embedding": raw_vector(t, dim)}
            for i, t in enumerate(texts)
        ]
        normal = {
            "object": "list",
            "data": data,
            "model": seen.body["model"],
            "usage": {"prompt_tokens": 1, "total_tokens": 1},
        }
        return _reply(action, normal)

    return respond


def gemini_responder(default_dim: int) -> Responder:
    """Gemini ``batchEmbedContents``: ``{"embeddings": [{"values": [...]}, ...]}``."""

    def respond(seen: Seen, action: Action) -> tuple[int, dict[str, str], bytes]:
        out = []
        for req in seen.body["requests"]:
            text = "".join(p["text"] for p in req["content"]["parts"])
            dim = action.dim or req.get("outputDimensionality") or default_dim
            out.append({"values": raw_vector(text, dim)})
        return _reply(action, {"embeddings": out})

    return respond


def ollama_responder(default_dim: int) -> Responder:
    """Ollama ``/api/embed``: ``{"model": ..., "embeddings": [[...], ...]}``."""

    def respond(seen: Seen, action: Action) -> tuple[int, dict[str, str], bytes]:
        texts = seen.body["input"]
        texts = [texts] if isinstance(texts, str) else texts
        dim = action.dim or seen.body.get("dimensions") or default_dim
        normal = {"model": seen.body["model"], "embeddings": [raw_vector(t, dim) for t in texts]}
        return _reply(action, normal)

    return respond


def serve(respond: Responder) -> Iterator[FakeServer]:
    """Fixture helper: a started server, shut down afterwards."""
    with FakeServer(respond) as server:
        yield server
