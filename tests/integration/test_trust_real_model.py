"""Nothing relevant returns nothing, on every face, and hybrid scores mean the same in every
query (real model: all-MiniLM-L6-v2, int8, the default).

A small vault of ordinary notes; off-topic questions (none of the notes is about them) must
come back empty in the default semantic and hybrid modes with a note saying "no confident
match", and on-topic questions must still find their note. The faces are the library (sync and
async), conversation memory, the CLI, HTTP and MCP.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path

import pytest

import semsearch
from semsearch.aio import aconnect
from semsearch.memory.conversation import ConversationMemory
from tests.e2e.mcp_client import McpProcess, text_of
from tests.http.conftest import make_client  # noqa: F401 (the HTTP test client fixture)

pytestmark = pytest.mark.slow

NOTES = {
    "lighthouse.md": "# The lighthouse\n\nThe spare key of the lighthouse door hangs on the hook "
    "behind the blue pot in the shed.",
    "keys.md": "# Where the keys are\n\nThe lighthouse key is in the shed behind the blue pot; "
    "the lighthouse door key and the lighthouse gate key hang on the same hook.",
    "sourdough.md": "# Sourdough\n\nFeed the starter with flour and water every morning and keep "
    "it in a warm place until it doubles.",
    "bike.md": "# Flat tyre\n\nTake the wheel off, find the hole in the inner tube, patch it and "
    "pump the tyre back up.",
    "taxes.md": "# VAT return\n\nThe quarterly VAT return is due one month after the quarter ends.",
    "garden.md": "# Tomatoes\n\nWater the tomato plants every evening and pinch out the side "
    "shoots so the fruit ripens.",
}
OFF_TOPIC = [
    "quantum chromodynamics of gluons",
    "how tall is Mount Everest",
    "rules of cricket",
    "do hedgehogs hibernate in winter",
    "who painted the Sistine Chapel ceiling",
]
ON_TOPIC = {"where is the spare key of the lighthouse": ("lighthouse.md", "keys.md")}
NO_MATCH = "no confident match"


@pytest.fixture(scope="module")
def index(tmp_path_factory, minilm) -> Path:
    path = tmp_path_factory.mktemp("trust") / "notes.embed.db"
    with semsearch.connect(path) as db:
        coll = db.collection("notes", embedder=minilm)
        coll.upsert([{"id": k, "text": v} for k, v in NOTES.items()])
    return path


@pytest.fixture(scope="module")
def notes(index: Path, minilm):
    with semsearch.connect(index) as db:
        yield db.collection("notes", embedder=minilm)


@pytest.mark.parametrize("mode", ["semantic", "hybrid"])
def test_off_topic_questions_return_nothing_with_a_note(notes, mode: str) -> None:
    for question in OFF_TOPIC:
        result = notes.search(question, mode=mode)
        assert result.hits == [], (question, [(h.id, h.score) for h in result])
        assert any(n.startswith(NO_MATCH) for n in result.notes), result.notes
        # the weaker hits are still there for whoever asks for them
        assert notes.search(question, mode=mode, min_score=None).hits


@pytest.mark.parametrize("mode", ["semantic", "keyword", "hybrid"])
def test_on_topic_questions_keep_their_answer(notes, mode: str) -> None:
    for question, answers in ON_TOPIC.items():
        result = notes.search(question, mode=mode)
        assert result.ids and result.ids[0] in answers, result.ids


def test_a_hybrid_hit_scores_the_same_whatever_else_the_query_found(notes) -> None:
    # Both lighthouse notes answer the question. Hiding the first leaves the second first: it
    # is the same hit, equally relevant, so its score must not move (the convex fusion of
    # before rescaled every score to the query's best, so it jumped to 1.0).
    question = "where is the spare key of the lighthouse"
    both = notes.search(question, mode="hybrid")
    assert {h.id for h in both.hits[:2]} == {"lighthouse.md", "keys.md"}
    alone = notes.search(question, mode="hybrid", exclude=[both[0].id])
    assert alone[0].id == both[1].id
    assert alone[0].score == pytest.approx(both[1].score, abs=1e-9)
    assert 0.5 <= alone[0].score < 1.0  # confident, and not rescaled to the top of the scale


def test_async_face(index: Path, minilm) -> None:
    async def run() -> tuple[list[str], tuple[str, ...]]:
        db = await aconnect(index)
        try:
            coll = await db.collection("notes", embedder=minilm)
            result = await coll.search(OFF_TOPIC[0], mode="hybrid")
            return result.ids, result.notes
        finally:
            await db.close()

    ids, notes = asyncio.run(run())
    assert ids == [] and any(n.startswith(NO_MATCH) for n in notes)


def test_conversation_memory(tmp_path: Path, minilm) -> None:
    with semsearch.connect(tmp_path / "m.embed.db") as db:
        memory = ConversationMemory(db, embedder=minilm)
        for text in NOTES.values():
            memory.add_message("ann", "c1", "user", text.split("\n\n", 1)[1])
        assert memory.wait_idle(120)
        for mode in ("hybrid", "semantic"):
            assert memory.search("ann", OFF_TOPIC[0], mode=mode) == []
        found = memory.search("ann", "where is the spare lighthouse key")
        assert found and "lighthouse" in found[0].message.content
        memory.close()


def test_cli_prints_no_confident_match_and_exits_0(index: Path) -> None:
    run = subprocess.run(
        [sys.executable, "-m", "semsearch.cli.app", "search", OFF_TOPIC[0], "--index",
         str(index), "--mode", "hybrid"],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    assert "0 hits" in run.stdout and NO_MATCH in run.stdout
    assert NO_MATCH in run.stderr  # the note, with how to see the weaker hits
    assert "--min-score -1" in run.stderr


def test_http_answers_no_hits_and_the_note(make_client, minilm) -> None:  # noqa: F811
    client, state = make_client(embedder=minilm)
    client.post("/collections", json={"name": "notes"})
    records = [{"id": k, "text": v} for k, v in NOTES.items()]
    assert client.post("/collections/notes/records", json={"records": records}).status_code == 200
    assert state.worker.wait_idle(120)
    body = client.post("/collections/notes/search", json={"query": OFF_TOPIC[0]}).json()
    assert body["mode"] == "semantic" and body["hits"] == []
    assert any(n.startswith(NO_MATCH) for n in body["notes"])
    body = client.post(
        "/collections/notes/search", json={"query": OFF_TOPIC[1], "mode": "hybrid"}
    ).json()
    assert body["hits"] == [] and any(n.startswith(NO_MATCH) for n in body["notes"])
    found = client.post(
        "/collections/notes/search", json={"query": "patch a flat bike tyre", "mode": "hybrid"}
    ).json()
    assert found["hits"][0]["id"] == "bike.md" and found["min_score"] == 0.5


def test_mcp_answers_no_hits_and_the_note(index: Path, tmp_path: Path) -> None:
    server = McpProcess(["--index", str(index), "--collection", "notes"], tmp_path / "err.log")
    try:
        tools = server.tools()
        assert "no confident match" in (tools["search"].description or "")
        result = server.call("search", {"query": OFF_TOPIC[0]})
        body = json.loads(text_of(result))
        assert body["hits"] == [] and any(n.startswith(NO_MATCH) for n in body["notes"])
        found = json.loads(text_of(server.call("search", {"query": "flat bike tyre repair"})))
        assert found["hits"][0]["id"] == "bike.md"
    finally:
        server.close()
