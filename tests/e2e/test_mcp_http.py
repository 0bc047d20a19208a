"""`semsearch mcp --transport http`: bearer token, Host/Origin checks, and the SDK client over HTTP.

Plumbing: the index uses the deterministic fake embedder (fake:32), so no model is loaded.
"""

from __future__ import annotations

import asyncio
import json
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

import semsearch
from tests.e2e.mcp_client import REPO, server_env, text_of

TOKEN = "s3cret-token-for-tests"
INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "raw-test", "version": "1"},
    },
}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def fake_index(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("mcp-http") / "fake.embed.db"
    with semsearch.connect(path) as db:
        notes = db.collection("notes", embedder="fake:32")
        notes.upsert(
            [
                {"id": "garden/tomatoes.md", "text": "Water the tomatoes every morning."},
                {"id": "private/diary.md", "text": "Tomatoes and secrets."},
            ]
        )
    return path


@pytest.fixture(scope="module")
def http_server(fake_index: Path, tmp_path_factory) -> Iterator[str]:
    port = _free_port()
    log = (tmp_path_factory.mktemp("mcp-http-log") / "stderr.txt").open("w")
    args = ["--index", str(fake_index), "--transport", "http", "--port", str(port)]
    proc = subprocess.Popen(
        [sys.executable, "-m", "semsearch.cli.app", "mcp", *args, "--exclude", "private"],
        cwd=REPO,
        env=server_env(SEMSEARCH_MCP_TOKEN=TOKEN),
        stdout=subprocess.DEVNULL,
        stderr=log,
    )
    deadline = time.monotonic() + 60
    while True:
        assert proc.poll() is None, "the server exited early"
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            break
        except OSError:
            assert time.monotonic() < deadline, "the server did not start listening"
            time.sleep(0.2)
    yield f"http://127.0.0.1:{port}/mcp"
    proc.terminate()
    proc.wait(timeout=30)
    log.close()


def _post(url: str, headers: dict[str, str]) -> int:
    request = urllib.request.Request(
        url,
        data=json.dumps(INIT).encode(),
        method="POST",
        headers={
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
            **headers,
        },
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return int(response.status)
    except urllib.error.HTTPError as exc:
        return int(exc.code)


def test_no_token_or_wrong_token_is_401(http_server: str) -> None:
    assert _post(http_server, {}) == 401
    assert _post(http_server, {"Authorization": "Bearer wrong"}) == 401
    assert _post(http_server, {"Authorization": TOKEN}) == 401  # scheme is required


def _refusal(url: str, headers: dict[str, str]) -> str:
    request = urllib.request.Request(url, data=json.dumps(INIT).encode(), method="POST",
                                     headers={"Content-Type": "application/json", **headers})  # fmt: skip
    with pytest.raises(urllib.error.HTTPError) as caught:
        urllib.request.urlopen(request, timeout=30)
    assert caught.value.code == 401
    return str(json.loads(caught.value.read())["error_description"])


def test_a_wrong_token_is_told_apart_from_a_missing_one(http_server: str) -> None:
    assert _refusal(http_server, {}) == "a bearer token is required"
    assert (
        _refusal(http_server, {"Authorization": "Bearer wrong"}) == "the bearer token is not valid"
    )


def test_token_lets_a_raw_initialize_through(http_server: str) -> None:
    assert _post(http_server, {"Authorization": f"Bearer {TOKEN}"}) == 200
    # the scheme name is case-insensitive (RFC 9110, section 11.1); the token is not
    assert _post(http_server, {"Authorization": f"bearer {TOKEN}"}) == 200
    assert _post(http_server, {"Authorization": f"BEARER  {TOKEN}"}) == 200
    assert _post(http_server, {"Authorization": f"Bearer {TOKEN.upper()}x"}) == 401
    assert _post(http_server, {"Authorization": f"Basic {TOKEN}"}) == 401


def test_foreign_origin_and_host_are_refused(http_server: str) -> None:
    auth = {"Authorization": f"Bearer {TOKEN}"}
    assert _post(http_server, {**auth, "Origin": "http://evil.example"}) == 403
    assert _post(http_server, {**auth, "Origin": "http://localhost.evil.example:80"}) == 403
    assert _post(http_server, {**auth, "Host": "evil.example"}) == 421
    port = http_server.rsplit(":", 1)[1].split("/")[0]
    assert _post(http_server, {**auth, "Origin": f"http://localhost:{port}"}) == 200


def test_sdk_client_over_http_with_token(http_server: str) -> None:
    async def session() -> tuple[set[str], dict, str]:
        headers = {"Authorization": f"Bearer {TOKEN}"}
        http = create_mcp_http_client(headers=headers)
        async with http, Client(streamable_http_client(http_server, http_client=http)) as client:
            tools = {t.name for t in (await client.list_tools()).tools}
            hit = await client.call_tool("search", {"query": "tomatoes", "mode": "keyword"})
            hidden = await client.call_tool("get", {"id": "private/diary.md"})
            return tools, hit.structured_content or {}, text_of(hidden)

    tools, found, hidden = asyncio.run(session())
    assert tools == {"search", "get", "list_collections", "stats"}
    assert [h["id"] for h in found["hits"]] == ["garden/tomatoes.md"]  # private/ is excluded
    assert "no record" in hidden


def test_non_loopback_bind_without_token_is_refused(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "semsearch.cli.app", "mcp", "--transport", "http",
         "--host", "0.0.0.0", "--index", str(tmp_path / "x.embed.db")],
        cwd=REPO, env=server_env(), capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode != 0
    assert "without a token" in done.stderr


def test_short_token_is_refused(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "semsearch.cli.app", "mcp", "--transport", "http",
         "--token", "short", "--index", str(tmp_path / "x.embed.db")],
        cwd=REPO, env=server_env(), capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode != 0
    assert "shorter than 16" in done.stderr
