"""`semsearch mcp` failure paths over stdio: missing index, broken embedder. No model is loaded.

The degraded-search test builds its index with the real model's tokenizer (chunking only, no torch),
then removes the model folder so the server's embedder fails at its first query.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

import semsearch
from semsearch.embedders.fake import FakeEmbedder
from semsearch.embedders.local import LocalEmbedder, _packaged_model_path
from semsearch.validation import surrogate_at
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


def test_a_lone_surrogate_in_arguments_is_a_tool_error_not_a_hang_fake_embedder(
    tmp_path: Path,
) -> None:
    """The SDK could not parse such a line and dropped it, so the client waited forever.

    Raw JSON-RPC lines over the real stdio server, as a JavaScript client writes them: the SDK's
    Python client cannot send a lone surrogate at all (its JSON encoder refuses it)."""
    index = tmp_path / "notes.embed.db"
    with semsearch.connect(index) as db:
        db.collection("notes", embedder=FakeEmbedder(dim=32)).upsert([{"id": "a", "text": "owl"}])
    calls = [
        (2, {"query": "\\ud800"}),
        (3, {"query": "x", "where": {"path": "\\udfff"}}),
        (4, {"query": "owl"}),  # still serving afterwards
    ]
    lines = [
        '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18",'
        '"capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}',
        '{"jsonrpc":"2.0","method":"notifications/initialized"}',
    ]
    for id_, args in calls:  # json.dumps would escape the backslash: build the text by hand
        text = json.dumps(args).replace("\\\\", "\\")
        lines.append(
            f'{{"jsonrpc":"2.0","id":{id_},"method":"tools/call",'
            f'"params":{{"name":"search","arguments":{text}}}}}'
        )
    answers = _raw_stdio(index, lines, want=4)
    for id_, path in ((2, "`query`"), (3, "`where.path`")):
        result = answers[id_]["result"]
        assert result["isError"] is True
        message = result["content"][0]["text"]
        assert f"argument {path} holds a lone surrogate" in message
        assert "hint: the text holds half of a UTF-16 surrogate pair" in message
        assert surrogate_at(message) is None and "\\ud" not in message  # not echoed
    assert json.loads(answers[4]["result"]["content"][0]["text"])["hits"][0]["id"] == "a"


def _raw_stdio(index: Path, lines: list[str], want: int) -> dict[int, dict[str, object]]:
    """Write ``lines`` to a real `semsearch mcp` over stdio and read answers until ``want`` of
    them (by id) have come; a missing answer fails at the timeout instead of hanging."""
    argv = [sys.executable, "-m", "semsearch.cli.app", "mcp", "--index", str(index)]
    env = server_env(SEMSEARCH_MODEL="fake:32", PYTHONPATH=str(REPO))
    proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                            env=env, cwd=str(REPO), stderr=subprocess.DEVNULL)  # fmt: skip
    try:
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write("\n".join(lines) + "\n")
        proc.stdin.flush()
        answers: dict[int, dict[str, object]] = {}
        timer = threading.Timer(120, proc.kill)  # an unanswered call ends the read, not the run
        timer.start()
        try:
            while len(answers) < want and (line := proc.stdout.readline()):
                message = json.loads(line)
                if "id" in message:
                    answers[message["id"]] = message
        finally:
            timer.cancel()
        assert len(answers) == want, f"answered only {sorted(answers)}"
        return answers
    finally:
        proc.kill()
        proc.wait(timeout=30)
