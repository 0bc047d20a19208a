"""DNS rebinding: one Host/Origin check for ``semsearch serve`` and ``semsearch mcp --transport
http`` (issue 19, item 1), over real sockets: each server runs as its own process on 127.0.0.1
and raw HTTP requests carry the Host and Origin a rebinding web page would send.

Before, ``semsearch serve`` without API keys answered ``Host: evil.example:<port>`` with 200 and
a private note from ``POST /collections/notes/search``, and stored a record sent that way.
Real SQLite file; fake embedder (plumbing).
"""

from __future__ import annotations

import http.client
import json
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import semsearch
from semsearch.server.host_guard import HostPolicy
from tests.e2e.mcp_client import REPO, server_env

SECRET = "the safe code is 1234"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _start(args: list[str], port: int, log: Path, **env: str) -> subprocess.Popen[bytes]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "semsearch.cli.app", *args, "--port", str(port)],
        cwd=REPO, env=server_env(SEMSEARCH_MODEL="fake:32", **env),
        stdout=subprocess.DEVNULL, stderr=log.open("w"),
    )  # fmt: skip
    deadline = time.monotonic() + 60
    while True:
        assert proc.poll() is None, log.read_text()
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return proc
        except OSError:
            assert time.monotonic() < deadline, "the server did not start listening"
            time.sleep(0.2)


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("rebind") / "notes.embed.db"
    with semsearch.connect(path) as db:
        db.collection("notes", embedder="fake:32").upsert([{"id": "safe.md", "text": SECRET}])
    return path


@pytest.fixture(scope="module")
def serve(index: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[int]:
    """``semsearch serve`` in local mode (no keys), also allowing the name notes.lan."""
    port = _free_port()
    log = tmp_path_factory.mktemp("serve-log") / "stderr.txt"
    proc = _start(["serve", "--index", str(index), "--allowed-host", "notes.lan"], port, log,
                  SEMSEARCH_ALLOWED_HOSTS="*.home.arpa")  # fmt: skip
    yield port
    proc.terminate()
    proc.wait(timeout=30)


def request(
    port: int, method: str, path: str, headers: dict[str, str], body: Any = None
) -> tuple[int, dict[str, Any]]:
    """One raw request to 127.0.0.1:port with exactly these headers (Host included)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    data = json.dumps(body).encode() if body is not None else None
    conn.putrequest(method, path, skip_host=True, skip_accept_encoding=True)
    for name, value in {"Content-Type": "application/json", **headers}.items():
        conn.putheader(name, value)
    if data is not None:
        conn.putheader("Content-Length", str(len(data)))
    conn.endheaders(data)
    response = conn.getresponse()
    raw = response.read()
    conn.close()
    try:
        return response.status, json.loads(raw)
    except ValueError:
        return response.status, {"raw": raw.decode(errors="replace")}


SEARCH = {"query": "safe code", "mode": "keyword"}


def test_serve_refuses_a_foreign_host_on_reads_and_writes(serve: int, index: Path) -> None:
    evil = {"Host": f"evil.example:{serve}"}
    status, body = request(serve, "POST", "/collections/notes/search", evil, SEARCH)
    assert status == 421 and body["error"] == "misdirected_request"
    assert set(body) == {"error", "message", "hint"} and "--allowed-host" in body["hint"]
    assert SECRET not in json.dumps(body)
    write = {"records": [{"id": "planted.md", "text": "planted by a web page"}]}
    assert request(serve, "POST", "/collections/notes/records", evil, write)[0] == 421
    assert request(serve, "GET", "/collections", evil)[0] == 421
    assert request(serve, "GET", "/", evil)[0] == 421
    assert request(serve, "GET", "/", {"Host": f"localhost.evil.example:{serve}"})[0] == 421
    assert request(serve, "GET", "/collections", {})[0] in (400, 421)  # no Host: uvicorn, or us
    with semsearch.connect(index) as db:  # nothing was stored
        assert [r.id for r in db.collection("notes", create=False).find(limit=10)] == ["safe.md"]


@pytest.mark.parametrize(
    "host", ["127.0.0.1:{port}", "localhost:{port}", "LOCALHOST", "[::1]:{port}",
             "notes.lan:{port}", "box.home.arpa:{port}"],
)  # fmt: skip
def test_serve_answers_loopback_and_allowed_names(serve: int, host: str) -> None:
    status, body = request(
        serve, "POST", "/collections/notes/search", {"Host": host.format(port=serve)}, SEARCH
    )
    assert status == 200, body
    assert [h["id"] for h in body["hits"]] == ["safe.md"]


def test_serve_refuses_state_changing_requests_from_a_foreign_origin(serve: int) -> None:
    host = {"Host": f"127.0.0.1:{serve}"}
    for origin in ("http://evil.example", f"http://localhost.evil.example:{serve}", "null",
                   f"file://127.0.0.1:{serve}"):  # fmt: skip
        status, body = request(
            serve, "POST", "/collections/notes/search", {**host, "Origin": origin}, SEARCH
        )
        assert status == 403, origin
        assert body["error"] == "forbidden_origin" and "--allow-origin" in body["hint"]
        deleted = request(serve, "DELETE", "/collections/notes/records/safe.md",
                          {**host, "Origin": origin})  # fmt: skip
        assert deleted[0] == 403
    # its own page, and reads with any Origin (a browser shows them to no other page)
    own = {**host, "Origin": f"http://127.0.0.1:{serve}"}
    assert request(serve, "POST", "/collections/notes/search", own, SEARCH)[0] == 200
    same_port = {**host, "Origin": f"http://localhost:{serve}"}
    assert request(serve, "POST", "/collections/notes/search", same_port, SEARCH)[0] == 200
    assert (
        request(serve, "GET", "/collections", {**host, "Origin": "http://evil.example"})[0] == 200
    )


def test_serve_refuses_a_form_post_from_another_local_port(serve: int) -> None:
    """A page another local server serves (``http://localhost:3000``) is another origin: a
    body-less form POST from it must not start a re-index (before: 202)."""
    other = serve + 1 if serve < 65535 else serve - 1
    for origin in (f"http://localhost:{other}", f"http://127.0.0.1:{other}", "http://localhost"):
        status, body = request(
            serve, "POST", "/collections/notes/reindex?wait=false",
            {"Host": f"127.0.0.1:{serve}", "Origin": origin,
             "Content-Type": "application/x-www-form-urlencoded"},
        )  # fmt: skip
        assert (status, body["error"]) == (403, "forbidden_origin"), origin


def test_serve_pages_cannot_be_framed_by_another_site(serve: int) -> None:
    conn = http.client.HTTPConnection("127.0.0.1", serve, timeout=30)
    conn.request("GET", "/", headers={"Host": f"127.0.0.1:{serve}"})
    response = conn.getresponse()
    response.read()
    conn.close()
    assert response.status == 200
    assert response.getheader("X-Frame-Options") == "DENY"
    assert response.getheader("Content-Security-Policy") == "frame-ancestors 'none'"


@pytest.mark.parametrize(
    "origin, host, allowed",
    [("http://127.0.0.1:8000", "127.0.0.1:8000", True),
     ("http://localhost:8000", "127.0.0.1:8000", True),  # the same server by another name
     ("http://localhost", "localhost", True), ("https://localhost", "localhost:443", True),
     ("http://localhost:3000", "127.0.0.1:8000", False),
     ("http://localhost", "127.0.0.1:8000", False), ("http://[::1]:9", "[::1]:8000", False),
     ("http://notes.lan:9000", "notes.lan:8000", True)],  # allowed by name: any port
)  # fmt: skip
def test_origin_policy_on_a_loopback_name_needs_the_request_port(
    origin: str, host: str, allowed: bool
) -> None:
    assert HostPolicy(("notes.lan",)).origin_allowed(origin, host) is allowed


@pytest.mark.parametrize("host", ["[::1]evil.example", "[::1]:80x", "[::1]]", "[::1"])
def test_a_bracketed_host_with_anything_but_a_port_after_it_is_refused(host: str) -> None:
    assert HostPolicy().host_allowed(host) is False


@pytest.mark.parametrize(
    "host", ["127.0.0.1:8000@evil.example", "localhost:abc", "localhost:80:80",
             "localhost:8000/evil", "user@localhost", "local host", "localhost:8000 x",
             "[evil.example]", "[evil.example]:8000", "127.0.0.1:8000#evil", ":8000",
             "localhost:\u00b2"],
)  # fmt: skip
def test_a_host_that_is_not_a_name_and_an_optional_numeric_port_is_refused(host: str) -> None:
    """RFC 9110 section 7.2: ``Host = uri-host [ ":" port ]``, ``port = *DIGIT`` (issue 46,
    item 8): anything else after the name is no port, and a name holds no ``@`` or ``/``."""
    assert HostPolicy(("notes.lan",)).host_allowed(host) is False


@pytest.mark.parametrize("host", ["localhost:", "LOCALHOST:8000", " localhost:8000 ", "[::1]:"])
def test_a_name_with_an_empty_or_numeric_port_is_a_host(host: str) -> None:
    assert HostPolicy().host_allowed(host) is True


def test_serve_refuses_a_loopback_name_followed_by_userinfo_or_a_bad_port(serve: int) -> None:
    for host in (f"127.0.0.1:{serve}@evil.example", "localhost:abc"):
        status, body = request(serve, "POST", "/collections/notes/search", {"Host": host}, SEARCH)
        assert status == 421 and body["error"] == "misdirected_request", (host, body)
        assert SECRET not in json.dumps(body)


@pytest.fixture(scope="module")
def mcp(index: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[int]:
    port = _free_port()
    log = tmp_path_factory.mktemp("mcp-log") / "stderr.txt"
    proc = _start(["mcp", "--index", str(index), "--transport", "http",
                   "--allowed-host", "notes.lan"], port, log)  # fmt: skip
    yield port
    proc.terminate()
    proc.wait(timeout=30)


INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "raw-test", "version": "1"}}}  # fmt: skip
ACCEPT = {"Accept": "application/json, text/event-stream"}


def test_mcp_over_http_gives_the_same_answers_as_serve(serve: int, mcp: int) -> None:
    refusals = []
    for port, path, body in ((serve, "/collections/notes/search", SEARCH), (mcp, "/mcp", INIT)):
        foreign_host = request(port, "POST", path, {**ACCEPT, "Host": "evil.example"}, body)
        foreign_origin = request(port, "POST", path,
                                 {**ACCEPT, "Host": f"127.0.0.1:{port}",
                                  "Origin": "http://evil.example"}, body)  # fmt: skip
        allowed = request(port, "POST", path, {**ACCEPT, "Host": f"notes.lan:{port}"}, body)
        assert allowed[0] == 200, allowed
        refusals.append((foreign_host, foreign_origin))
    assert refusals[0] == refusals[1]  # one check: same status, code, message and hint
    (host_refused, origin_refused), _ = refusals
    assert host_refused[0] == 421 and origin_refused[0] == 403


@pytest.mark.parametrize(
    ("policy", "host", "allowed"),
    [(HostPolicy(), "127.0.0.1:8000", True), (HostPolicy(), "127.5.6.7", True),
     (HostPolicy(), "[::1]", True), (HostPolicy(), "::1", True),
     (HostPolicy(), "evil.example", False), (HostPolicy(), "127.0.0.1.evil.example", False),
     (HostPolicy(), "", False), (HostPolicy(bind="0.0.0.0"), "0.0.0.0", False),
     (HostPolicy(bind="192.168.1.5"), "192.168.1.5:8000", True),
     (HostPolicy(("*.example.com",)), "a.example.com", True),
     (HostPolicy(("*.example.com",)), "example.com", False),
     (HostPolicy(("*.example.com",)), "evilexample.com", False),
     (HostPolicy(("*",)), "anything.at.all", True)],
)  # fmt: skip
def test_host_policy(policy: HostPolicy, host: str, allowed: bool) -> None:
    assert policy.host_allowed(host) is allowed


def test_host_policy_reads_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SEMSEARCH_ALLOWED_HOSTS", " a.lan, ,b.lan ")
    monkeypatch.setenv("SEMSEARCH_ALLOWED_ORIGINS", "https://App.example.com/")
    policy = HostPolicy.build(["c.lan"])
    assert policy.allowed_hosts == ("c.lan", "a.lan", "b.lan")
    assert policy.origin_allowed("https://app.example.com")
    assert policy.origin_allowed("http://b.lan:9000") and not policy.origin_allowed("http://d.lan")


def test_serve_workers_apply_the_same_policy(index: Path, tmp_path: Path) -> None:
    """``--workers 2``: each process gets the allowed hosts through the environment."""
    port = _free_port()
    proc = _start(["serve", "--index", str(index), "--workers", "2", "--allowed-host",
                   "notes.lan"], port, tmp_path / "log.txt")  # fmt: skip
    try:
        for _ in range(4):  # several connections, so both processes answer some
            assert request(port, "GET", "/collections", {"Host": f"notes.lan:{port}"})[0] == 200
            assert request(port, "GET", "/collections", {"Host": "evil.example"})[0] == 421
    finally:
        proc.terminate()
        proc.wait(timeout=30)
