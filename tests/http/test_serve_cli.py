"""`semsearch serve` as a real subprocess on a free loopback port (plumbing: SEMSEARCH_MODEL=fake:32)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time

import httpx
from typer.testing import CliRunner

from semsearch.cli.app import app
from tests.web.conftest import free_port

ADMIN = "cli-admin-key-0123"


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SEMSEARCH_")}
    env.update({"SEMSEARCH_MODEL": "fake:32", "HF_HUB_OFFLINE": "1", **extra})
    return env


def _serve(*args: str, env: dict[str, str]) -> subprocess.Popen[str]:
    cmd = [sys.executable, "-c", "from semsearch.cli.app import main; main()", "serve", *args]
    return subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _wait_healthy(url: str, proc: subprocess.Popen[str]) -> httpx.Response:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"server exited: {proc.stderr.read() if proc.stderr else ''}")
        try:
            return httpx.get(f"{url}/health", timeout=2)
        except httpx.TransportError:
            time.sleep(0.1)
    raise AssertionError("server did not answer within 60 s")


def test_serve_answers_and_enforces_keys(tmp_path) -> None:
    port = free_port()
    index = str(tmp_path / "cli.embed.db")
    proc = _serve(
        "--index", index, "--port", str(port), env=_env(SEMSEARCH_API_KEYS=f"{ADMIN}:admin")
    )
    url = f"http://127.0.0.1:{port}"
    try:
        assert _wait_healthy(url, proc).json()["status"] == "ok"
        assert httpx.get(f"{url}/collections").status_code == 401
        headers = {"X-API-Key": ADMIN}
        created = httpx.post(f"{url}/collections", json={"name": "notes"}, headers=headers)
        assert created.status_code == 201 and created.json()["model_id"] == "fake:32"
        added = httpx.post(
            f"{url}/collections/notes/records",
            json={"records": [{"id": "a", "text": "hello there"}]},
            headers=headers,
        )
        assert added.status_code == 200
        hits = httpx.post(
            f"{url}/collections/notes/search",
            json={"query": "hello", "mode": "keyword"},
            headers=headers,
        ).json()["hits"]
        assert [h["id"] for h in hits] == ["a"]
        assert "<title>semsearch</title>" in httpx.get(url).text
    finally:
        proc.terminate()
        proc.wait(20)


def test_serve_refuses_a_public_address_without_keys(tmp_path) -> None:
    proc = _serve("--index", str(tmp_path / "x.embed.db"), "--host", "0.0.0.0", env=_env())
    _, err = proc.communicate(timeout=60)
    assert proc.returncode != 0
    assert "refusing to bind 0.0.0.0 without API keys" in err
    assert not (tmp_path / "x.embed.db").exists()


def test_serve_with_two_workers_answers_from_both_processes_on_one_index(tmp_path) -> None:
    """--workers 2: two uvicorn processes share the port and the SQLite file; a record added
    through one is found through whichever process answers next."""
    port = free_port()
    index = str(tmp_path / "w.embed.db")
    env = _env(SEMSEARCH_API_KEYS=f"{ADMIN}:admin")
    proc = _serve("--index", index, "--port", str(port), "--workers", "2", env=env)
    url = f"http://127.0.0.1:{port}"
    headers = {"X-API-Key": ADMIN}
    try:
        assert _wait_healthy(url, proc).json()["status"] == "ok"
        assert httpx.post(f"{url}/collections", json={"name": "n"}, headers=headers).is_success
        records = [{"id": f"r{i}", "text": f"note number {i} about walruses"} for i in range(5)]
        added = httpx.post(
            f"{url}/collections/n/records", json={"records": records}, headers=headers
        )
        assert added.status_code == 200
        body = {"query": "walruses", "mode": "keyword", "limit": 10}
        for _ in range(20):  # new connections: the kernel spreads them over both workers
            with httpx.Client() as client:
                hits = client.post(f"{url}/collections/n/search", json=body, headers=headers)
            assert sorted(h["id"] for h in hits.json()["hits"]) == [f"r{i}" for i in range(5)]
        workers = [line for line in _children(proc.pid).splitlines() if "spawn_main" in line]
        assert len(workers) == 2  # two uvicorn worker processes
    finally:
        proc.terminate()
        proc.wait(30)


def _children(pid: int) -> str:
    # -ww: full command lines (without a terminal, ps cuts them at 80 columns)
    out = subprocess.run(
        ["ps", "-ww", "--ppid", str(pid), "-o", "args="], capture_output=True, text=True
    )
    return out.stdout


def test_serve_refuses_several_workers_for_milvus_lite(tmp_path) -> None:
    location = f"milvus-lite://{tmp_path / 'm.db'}"
    port = str(free_port())  # not the default 8000: another server may hold it
    proc = _serve("--location", location, "--workers", "2", "--port", port, env=_env())
    _, err = proc.communicate(timeout=60)
    assert proc.returncode != 0
    assert "Milvus Lite serves one process only" in err


def test_serve_refuses_a_port_out_of_range_with_a_usage_error(tmp_path) -> None:
    index = str(tmp_path / "x.embed.db")
    result = CliRunner().invoke(app, ["serve", "--port", "99999", "--index", index], env=_env())
    assert result.exit_code == 2  # typer's usage error, not an OverflowError traceback
    assert "--port" in result.output and "65535" in result.output
    assert not (tmp_path / "x.embed.db").exists()


def test_serve_on_a_port_in_use_exits_6_with_a_hint(tmp_path) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        proc = _serve("--port", str(port), "--index", str(tmp_path / "x.embed.db"), env=_env())
        _, err = proc.communicate(timeout=60)
    assert proc.returncode == 6  # docs/cli.md: backend unavailable
    assert f"cannot listen on 127.0.0.1:{port}" in err
    assert "another program listens on port" in err and "--port" in err
    assert "Traceback" not in err and "Errno" not in err
