"""The default model indexes and searches on every face with torch absent.

A subprocess hides torch, transformers and sentence-transformers (an import hook makes them raise
ImportError, as on a machine without the torch extra), then drives the CLI (index, semantic
search), the Python API (semantic and hybrid), the HTTP API, the MCP tools and conversation
memory with the real packaged model on ONNX Runtime, and reports what it found and imported.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

PROBE = r"""
import importlib.abc, json, sys

HIDDEN = ("torch", "transformers", "sentence_transformers")

class HideTorch(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in HIDDEN:
            raise ImportError(f"No module named {name!r} (hidden by the test)")
        return None

sys.meta_path.insert(0, HideTorch())
folder, index = sys.argv[1], sys.argv[2]
out = {}

from semsearch.cli.app import app
for name, args in {
    "cli_index": ["index", folder, "--index", index],
    "cli_search": ["search", "where is the lighthouse key", "--index", index, "--json"],
}.items():
    try:
        app(args)
    except SystemExit as exc:
        out[name] = exc.code or 0

import semsearch
db = semsearch.connect(index)
notes = db.collection("notes")
out["api_semantic"] = [h.id for h in notes.search("where is the lighthouse key", limit=2)]
out["api_hybrid"] = [h.id for h in notes.search("lighthouse key", mode="hybrid", limit=2)]

from fastapi.testclient import TestClient
from semsearch.server.http.app import create_app
from semsearch.server.http.state import ServerState
with TestClient(create_app(ServerState(db)), base_url="http://127.0.0.1") as client:
    reply = client.post("/collections/notes/search",
                        json={"query": "where is the lighthouse key", "mode": "semantic", "limit": 1})
    out["http"] = [h["id"] for h in reply.json()["hits"]]

from semsearch.server.mcp.service import McpConfig, McpService
service = McpService(McpConfig(location=index))
found = service.search("where is the lighthouse key", mode="semantic", limit=1)
out["mcp"] = [h["id"] for h in found["hits"]]
service.close()

from semsearch.memory.conversation import ConversationMemory
memory = ConversationMemory(db, background=False)
memory.add_message("u1", "c1", "user", "I keep having sleepless nights")
memory.backfill()
out["memory"] = [h.message.content for h in memory.search("u1", "insomnia", min_score=0.2)]
memory.close()

out["loaded"] = sorted({m.split(".")[0] for m in sys.modules} & {*HIDDEN, "onnxruntime"})
print("RESULT " + json.dumps(out))
"""


@pytest.mark.slow
def test_default_model_works_on_every_face_without_torch(tmp_path: Path) -> None:
    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "garden.md").write_text(
        "# Garden\n\nThe lighthouse key is under the blue pot by the shed door.\n"
    )
    (folder / "kitchen.md").write_text("# Kitchen\n\nBuy flour, eggs and a new kettle.\n")
    (folder / "travel.md").write_text("# Travel\n\nTrain tickets for Zürich are in the drawer.\n")
    index = tmp_path / "notes.embed.db"
    env = {**os.environ, "SEMSEARCH_CACHE_DIR": str(tmp_path / "cache")}
    env.pop("SEMSEARCH_MODEL", None)
    proc = subprocess.run(
        [sys.executable, "-c", PROBE, str(folder), str(index)],
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
    )
    line = next((x for x in proc.stdout.splitlines() if x.startswith("RESULT ")), None)
    assert line, proc.stdout[-2000:] + proc.stderr[-4000:]
    out = json.loads(line.removeprefix("RESULT "))
    assert out["cli_index"] == 0 and out["cli_search"] == 0
    assert out["api_semantic"][0] == "garden.md"
    assert out["api_hybrid"][0] == "garden.md"
    assert out["http"] == ["garden.md"] and out["mcp"] == ["garden.md"]
    assert out["memory"] == ["I keep having sleepless nights"]
    assert out["loaded"] == ["onnxruntime"]  # the engine ran; torch & co never imported
    assert proc.stderr.count("preparing the model all-MiniLM-L6-v2 for ONNX Runtime") == 1
