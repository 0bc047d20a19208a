"""Reranking on the CLI (search, eval) and the MCP service, with the fake embedder and reranker.

FakeReranker scores by the share of query words in a text; the expected orders are by hand.
"""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest
from typer.testing import CliRunner

import semsearch
from semsearch.cli.app import app
from semsearch.embedders.fake import FakeEmbedder
from semsearch.errors import RerankerUnavailable
from semsearch.server.mcp.service import McpConfig, McpService

runner = CliRunner()
DOCS = [
    {"id": "a.md", "text": "compost greens browns lighthouse"},
    {"id": "b.md", "text": "lighthouse key blue pot"},
    {"id": "c.md", "text": "kitchen onions lighthouse"},
    # notes without the query's words: "lighthouse" (in half the notes) stays evidence, so the
    # default floor keeps a.md and c.md (docs/retrieval.md, "the floor")
    {"id": "d.md", "text": "garden"},
    {"id": "e.md", "text": "weather report"},
    {"id": "f.md", "text": "tomato soup"},
]


@pytest.fixture
def index(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("SEMSEARCH_MODEL", "fake:32")
    monkeypatch.delenv("SEMSEARCH_RERANKER", raising=False)
    path = tmp_path / "notes.embed.db"
    db = semsearch.connect(path)
    db.collection("notes", embedder="fake:32", create=True).upsert(DOCS)
    db.close()
    return path


def test_cli_search_rerank_fake(index: Path) -> None:
    args = ["search", "lighthouse key pot", "--index", str(index), "--mode", "keyword", "--json"]
    done = runner.invoke(app, [*args, "--rerank", "fake:", "--rerank-top-n", "3"])
    assert done.exit_code == 0, done.output
    result = json.loads(done.stdout)
    assert result["reranked_by"] == "fake:"
    assert [h["id"] for h in result["hits"]] == ["b.md", "a.md", "c.md"]  # 3/3, 1/3, 1/3 by id
    assert result["hits"][0]["components"]["rerank"] == {"score": 1.0, "rank": 1}


def test_cli_search_reranker_from_the_environment_fake(
    index: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SEMSEARCH_RERANKER", "fake:fail")
    done = runner.invoke(app, ["search", "lighthouse key", "--index", str(index)])
    assert done.exit_code == 0, done.output
    assert "degraded:" in done.stdout and "results are not reranked" in done.stdout


def test_cli_search_unknown_reranker_is_bad_input(index: Path) -> None:
    done = runner.invoke(app, ["search", "key", "--index", str(index), "--rerank", "nope:x"])
    assert done.exit_code == 4 and "unknown reranker 'nope:x'" in done.stderr


def test_mcp_service_reranks_with_the_server_reranker_fake(index: Path) -> None:
    service = McpService(McpConfig(location=str(index), model="fake:32", reranker="fake:"))
    result = service.search("lighthouse key pot", mode="keyword")
    assert result["reranked_by"] == "fake:"
    assert [h["id"] for h in result["hits"]] == ["b.md", "a.md", "c.md"]
    off = service.search("lighthouse key pot", mode="keyword", rerank=False)
    assert off["reranked_by"] is None
    service.close()


def test_mcp_failed_reranking_does_not_mark_semantic_search_broken_fake(index: Path) -> None:
    service = McpService(McpConfig(location=str(index), model="fake:32", reranker="fake:fail"))
    result = service.search("lighthouse key", mode="semantic", min_score=None)
    assert result["degraded"] and len(result["hits"]) == len(DOCS)  # no floor: every note
    (row,) = service.stats()["collections"]
    assert row["semantic"] == {"usable": True, "reason": None}
    service.close()


def test_mcp_rerank_true_without_a_reranker_is_refused_fake(index: Path) -> None:
    service = McpService(McpConfig(location=str(index), model="fake:32"))
    with pytest.raises(semsearch.InvalidQuery, match="no reranker"):
        service.search("key", rerank=True)
    service.close()


def test_eval_rerank_fake(index: Path, tmp_path: Path) -> None:
    from tests.integration.scifact_slice import write_scifact_slice

    beir = write_scifact_slice(tmp_path / "beir" / "scifact50")
    args = ["eval", str(beir), "--modes", "keyword", "--limit", "20", "--json"]
    env = {"SEMSEARCH_CACHE_DIR": str(tmp_path / "cache")}
    done = runner.invoke(app, [*args, "--rerank", "fake:", "--rerank-top-n", "20"], env=env)
    assert done.exit_code == 0, done.output
    report = json.loads(done.stdout)
    assert report["reranker"] == "fake:" and report["modes"][0]["degraded"] == 0
    plain = json.loads(runner.invoke(app, args, env=env).stdout)
    assert plain["reranker"] is None
    assert plain["modes"][0]["ndcg_at_10"] != report["modes"][0]["ndcg_at_10"]  # it reranked


def test_serve_workers_read_the_reranker_from_the_environment_fake(
    index: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from semsearch.server.http.process import state_from_env

    monkeypatch.setenv("SEMSEARCH_SERVE_LOCATION", str(index))
    monkeypatch.setenv("SEMSEARCH_RERANKER", "fake:")
    monkeypatch.setenv("SEMSEARCH_RERANK_TOP_N", "7")
    state = state_from_env()
    assert state.reranker is not None and state.reranker.model_id == "fake:"
    assert state.rerank_top_n == 7
    state.worker.stop()
    state.db.close()


def test_serve_refuses_an_unknown_reranker_before_it_binds(index: Path) -> None:
    done = runner.invoke(app, ["serve", "--index", str(index), "--reranker", "nope:x"])
    assert done.exit_code == 4 and "unknown reranker 'nope:x'" in done.stderr


# -- issue 46, item 11: a local reranker without a model is refused when it is configured -------
#
# Each face names the reranker before it searches or serves: `search(rerank=)`, `semsearch search
# --rerank`, `semsearch serve --reranker`, `semsearch mcp --reranker`. A folder that does not
# exist, or exists without a cross-encoder's files, is a misconfiguration: RerankerUnavailable
# (exit code 4 on the CLI) before anything is embedded, bound or served, never a degraded search.

NO_MODEL = {"missing": "nowhere", "empty": "empty-ce"}
WHY = {"missing": "no cross-encoder folder", "empty": "missing config.json"}


def _spec(tmp_path: Path, kind: str) -> str:
    folder = tmp_path / NO_MODEL[kind]
    if kind == "empty":
        folder.mkdir()
    return f"local:{folder}"


@pytest.mark.parametrize("kind", list(NO_MODEL))
def test_python_search_refuses_a_local_reranker_without_a_model_fake(
    index: Path, tmp_path: Path, kind: str
) -> None:
    spec = _spec(tmp_path, kind)
    embedder = FakeEmbedder(32)
    with semsearch.connect(index) as db:
        notes = db.collection("notes", embedder=embedder)
        with pytest.raises(RerankerUnavailable, match=WHY[kind]) as info:
            notes.search("lighthouse key", rerank=spec)
    assert info.value.hint
    assert embedder.calls == 0  # refused before the query was embedded


@pytest.mark.parametrize("kind", list(NO_MODEL))
def test_cli_search_refuses_a_local_reranker_without_a_model_fake(
    index: Path, tmp_path: Path, kind: str
) -> None:
    done = runner.invoke(
        app, ["search", "lighthouse key", "--index", str(index), "--rerank", _spec(tmp_path, kind)]
    )
    assert done.exit_code == 4, done.output
    assert WHY[kind] in done.stderr and "degraded" not in done.stdout


@pytest.mark.parametrize("kind", list(NO_MODEL))
def test_serve_refuses_a_local_reranker_without_a_model_before_it_binds_fake(
    index: Path, tmp_path: Path, kind: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    import uvicorn

    started: list[object] = []
    monkeypatch.setattr(uvicorn, "run", lambda *a, **k: started.append(a))
    args = ["serve", "--index", str(index), "--port", str(_free_port())]
    done = runner.invoke(app, [*args, "--reranker", _spec(tmp_path, kind)])
    assert done.exit_code == 4, done.output
    assert WHY[kind] in done.stderr and started == []


@pytest.mark.parametrize("kind", list(NO_MODEL))
def test_mcp_refuses_a_local_reranker_without_a_model_before_it_serves_fake(
    index: Path, tmp_path: Path, kind: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from semsearch.server.mcp import server

    started: list[object] = []
    never = SimpleNamespace(run=lambda transport: None)  # a server that would return at once
    monkeypatch.setattr(server, "build_server", lambda service: started.append(service) or never)
    done = runner.invoke(app, ["mcp", "--index", str(index), "--reranker", _spec(tmp_path, kind)])
    assert done.exit_code == 4, done.output
    assert WHY[kind] in done.stderr and started == []


def _free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])
