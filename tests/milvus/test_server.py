"""The http:// branch: a Milvus server reached over gRPC, here `milvus-lite server` in a subprocess.

A real Milvus cluster is not available on this machine; Milvus Lite's standalone gRPC server speaks
the same protocol through the same pymilvus client, so this test drives every server code path
(URL parsing, connect, load, flush, search) except authentication.
"""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

import semsearch
from semsearch.embedders.fake import FakeEmbedder
from semsearch.schema import Schema


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def server_url(tmp_path: Path) -> Iterator[str]:
    port = _free_port()
    cli = Path(sys.executable).with_name("milvus-lite")
    proc = subprocess.Popen(
        [str(cli), "server", "--data-dir", str(tmp_path / "srv"), "--host", "127.0.0.1",
         "--port", str(port)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", port)) == 0:
                    break
            time.sleep(0.2)
        else:
            pytest.fail("milvus-lite server did not start within 60 s")
        yield f"http://127.0.0.1:{port}"
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def test_a_server_serves_two_clients_like_one_store(server_url: str) -> None:
    schema = Schema.from_types({"level": "int"})
    with semsearch.connect(server_url) as writer:
        coll = writer.collection("notes", schema=schema, embedder=FakeEmbedder(16))
        coll.upsert([
            {"id": "a", "text": "heron wading in reeds", "level": 1},
            {"id": "b", "text": "sparrow on a fence", "level": 2},
        ])  # fmt: skip
        # A second client (as another process would) sees the flushed data at once.
        with semsearch.connect(server_url) as reader:
            other = reader.collection("notes", create=False)
            assert other.model_id == "fake:16" and other.count() == 2
            assert other.search("heron", mode="keyword").ids == ["a"]
            assert other.search("sparrow fence", min_score=None, where={"level": 2}).ids == ["b"]
    assert "127.0.0.1" in writer.location
