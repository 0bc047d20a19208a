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


_WRITER = """
import sys
import semsearch
from semsearch.embedders.fake import FakeEmbedder
with semsearch.connect(sys.argv[1]) as db:
    db.collection("birds", embedder=FakeEmbedder(16)).upsert(
        [{"id": sys.argv[2], "text": sys.argv[3]}]
    )
"""


def _write_elsewhere(server_url: str, rid: str, text: str) -> None:
    """Write one record from another process (its own keyword index and stamp)."""
    root = str(Path(__file__).resolve().parents[2])
    done = subprocess.run(
        [sys.executable, "-c", _WRITER, server_url, rid, text],
        capture_output=True, text=True, timeout=300, cwd=root,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]


def _ranked(coll: semsearch.Collection, query: str) -> list[tuple[str, float]]:
    return [
        (h.id, round(h.score, 9)) for h in coll.search(query, mode="keyword", min_score=None).hits
    ]


def test_another_processs_writes_reach_the_keyword_ranking_on_a_server(server_url: str) -> None:
    """Each process keeps its own keyword index; another process's committed write moves its
    stamp, and the next search (after the stamps' cache, META_TTL) or write builds the index
    again: the same ranking as a process that reads everything afresh."""
    from semsearch.stores.milvus.state import META_TTL

    with semsearch.connect(server_url) as db:
        coll = db.collection("birds", embedder=FakeEmbedder(16))
        coll.upsert([
            {"id": "a", "text": "heron wading in reeds"},
            {"id": "b", "text": "sparrow on a fence"},
        ])  # fmt: skip
        assert _ranked(coll, "heron")[0][0] == "a"
        _write_elsewhere(server_url, "c", "heron heron heron nest")
        time.sleep(META_TTL + 0.1)
        seen = _ranked(coll, "heron")
        assert [i for i, _ in seen] == ["c", "a"]
        _write_elsewhere(server_url, "d", "a heron by the fence")
        coll.upsert([{"id": "e", "text": "heron"}])  # this write finds the other stamp moved
        mine = _ranked(coll, "heron fence")
    with semsearch.connect(server_url) as fresh:  # a process with no index yet
        assert mine == _ranked(fresh.collection("birds", create=False), "heron fence")
        assert fresh.collections() == ["birds"]  # the writers' stamp rows are no collections
    assert {i for i, _ in mine} == {"a", "b", "c", "d", "e"}
