"""`semsearch mcp` failure paths over stdio: missing index, broken embedder. No model is loaded.

The degraded-search test builds its index with the real model's tokenizer (chunking only, no torch),
then removes the model folder so the server's embedder fails at its first query.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

import semsearch
from semsearch.embedders.local import LocalEmbedder, _packaged_model_path
from tests.e2e.mcp_client import REPO, McpProcess, server_env, text_of


@pytest.fixture
def missing_index_server(tmp_path: Path) -> Iterator[tuple[McpProcess, Path]]:
    index = tmp_path / "deep" / "nowhere" / "absent.embed.db"
    proc = McpProcess(["--index", str(index)], tmp_path / "stderr.txt")
    yield proc, index
    proc.close()


def test_missing_index_gives_guidance_without_importing_torch(missing_index_server) -> None:
    server, index = missing_index_server
    calls = {
        "search": {"query": "how do I link notes"},
        "get": {"id": "a.md"},
        "list_collections": {},
        "stats": {},
    }
    for name, args in calls.items():
        result = server.call(name, args)
        assert result.is_error, name
        message = text_of(result)
        assert "no semsearch index at absent.embed.db" in message
        assert "semsearch index <folder> --index absent.embed.db" in message
        assert str(index.parent) not in message and "/nowhere/" not in message
    assert not index.exists()  # reading never creates the index
    assert server.errlog.stat().st_size > 0  # the import log is being written ...
    assert not server.torch_imported()  # ... and torch is not in it


@pytest.fixture
def broken_model_index(tmp_path: Path) -> Path:
    """An index whose collection's model folder no longer exists (chunks stay keyword-searchable)."""
    model = tmp_path / "models" / "minilm-copy"
    model.mkdir(parents=True)
    for item in _packaged_model_path().iterdir():
        os.symlink(item, model / item.name)
    path = tmp_path / "broken.embed.db"
    with semsearch.connect(path) as db:
        notes = db.collection("notes", embedder=LocalEmbedder(str(model)))
        notes.upsert(
            [
                {"id": "garden/tomatoes.md", "text": "Water the tomatoes every morning."},
                {"id": "garden/roses.md", "text": "Prune the roses in early spring."},
                {"id": "work/plan.md", "text": "Quarterly plan and budget review."},
            ],
            embed=False,
        )
    for item in model.iterdir():
        item.unlink()
    model.rmdir()
    return path


def test_embedder_failure_falls_back_to_keyword_marked_degraded(
    broken_model_index: Path, tmp_path: Path
) -> None:
    server = McpProcess(["--index", str(broken_model_index)], tmp_path / "stderr.txt")
    try:
        for mode in ("semantic", "hybrid"):
            out = server.ok("search", {"query": "tomatoes", "mode": mode})
            assert out["degraded"] is True, mode
            assert [h["id"] for h in out["hits"]] == ["garden/tomatoes.md"]
            reason = out["degraded_reason"]
            assert "minilm-copy" in reason  # says which model failed ...
            assert str(tmp_path) not in reason and "/models/" not in reason  # ... without paths
        stats = server.ok("stats")
        semantic = stats["collections"][0]["semantic"]
        assert semantic["usable"] is False and semantic["reason"]
        assert str(tmp_path) not in str(stats)
        assert server.ok("get", {"id": "work/plan.md"})["text"].startswith("Quarterly plan")
        assert not server.torch_imported()
    finally:
        server.close()


def test_index_and_location_together_are_refused(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "semsearch.cli.app", "mcp",
         "--index", str(tmp_path / "a.embed.db"), "--location", str(tmp_path / "b.embed.db")],
        cwd=REPO, env=server_env(), capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode != 0
    assert "not both" in done.stderr


def test_location_serves_like_index(tmp_path: Path) -> None:
    """Plumbing with the fake embedder: --location takes any connect() location."""
    path = tmp_path / "loc.embed.db"
    with semsearch.connect(path) as db:
        db.collection("notes", embedder="fake:32").upsert([{"id": "a.md", "text": "alpha"}])
    server = McpProcess(["--location", str(path)], tmp_path / "stderr.txt")
    try:
        found = server.ok("search", {"query": "alpha", "mode": "keyword"})
        assert [h["id"] for h in found["hits"]] == ["a.md"]
    finally:
        server.close()
