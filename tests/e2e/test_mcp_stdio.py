"""`semsearch mcp` over stdio, end to end: the SDK's client spawns the real server on a real index.

The index holds the foam-docs vault (notes) and the SRD spells (records with declared fields),
embedded once per session with the real model (all-MiniLM-L6-v2).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

import semsearch
from semsearch.sources.vault import VAULT_SCHEMA, index_folder
from tests.conftest import shared_path
from tests.e2e.mcp_client import McpProcess, text_of

pytestmark = pytest.mark.slow

LINK_QUESTION = "how do I create links between notes"
WIKILINKS = "user/features/wikilinks.md"
SPELLS_SCHEMA = semsearch.Schema(
    fields=(semsearch.Field("level", "int"), semsearch.Field("school", "str", "school.name")),
    text=("name", "desc", "higher_level"),
)


@pytest.fixture(scope="session")
def spells_json() -> list[dict]:
    return json.loads(shared_path("dnd5e_srd", "5e-SRD-Spells.json").read_text())


@pytest.fixture(scope="session")
def mcp_index(tmp_path_factory, foam_docs: Path, spells_json: list[dict], minilm) -> Path:
    """notes (foam-docs) and spells (SRD) in one index file, built once with the real model."""
    path = tmp_path_factory.mktemp("mcp") / "vault.embed.db"
    with semsearch.connect(path) as db:
        notes = db.collection("notes", schema=VAULT_SCHEMA, embedder=minilm)
        report = index_folder(notes, foam_docs)
        assert report.new == 86 and report.chunks_pending == 0
        spells = db.collection("spells", schema=SPELLS_SCHEMA, embedder=minilm)
        spells.upsert([{"id": s["index"], **s} for s in spells_json])
    return path


@pytest.fixture(scope="module")
def server(mcp_index: Path, tmp_path_factory) -> Iterator[McpProcess]:
    log = tmp_path_factory.mktemp("mcp-log") / "stderr.txt"
    proc = McpProcess(["--index", str(mcp_index)], log)
    yield proc
    proc.close()


@pytest.fixture(scope="module")
def private_server(mcp_index: Path, tmp_path_factory) -> Iterator[McpProcess]:
    """Only user/ is readable, and user/features/ is excluded inside it."""
    log = tmp_path_factory.mktemp("mcp-log") / "stderr.txt"
    args = ["--index", str(mcp_index), "--read-paths", "user/*", "--exclude", "user/features"]
    proc = McpProcess(args, log)
    yield proc
    proc.close()


def test_tools_listed_with_described_bounded_schemas(server: McpProcess) -> None:
    tools = server.tools()
    assert set(tools) == {"search", "get", "list_collections", "stats"}  # read-only by default
    for tool in tools.values():
        assert tool.description and len(tool.description) > 40
        assert tool.annotations is not None and tool.annotations.read_only_hint is True
        for name, prop in tool.input_schema.get("properties", {}).items():
            assert prop.get("description"), f"{tool.name}.{name} has no description"
    props = tools["search"].input_schema["properties"]
    assert tools["search"].input_schema["required"] == ["query"]
    assert props["limit"]["default"] == 10
    assert (props["limit"]["minimum"], props["limit"]["maximum"]) == (1, 100)
    assert props["mode"]["default"] == "hybrid"
    assert set(props["mode"]["enum"]) == {"semantic", "keyword", "hybrid"}
    assert props["min_score"]["default"] == "default"  # the model's calibrated threshold
    assert {"folder", "collection", "where", "hypothetical_answer"} <= set(props)
    assert tools["get"].input_schema["required"] == ["id"]
    out = tools["search"].output_schema
    assert {"query", "mode", "hyde", "degraded", "degraded_reason", "hits"} <= set(
        out["properties"]
    )
    hit = out["properties"]["hits"]["items"]["properties"]  # definitions inlined (output.py)
    assert {"id", "title", "score", "text", "heading_path", "line_start", "components"} <= set(hit)
    assert hit["line_start"]["type"] == ["integer", "null"]
    assert "$defs" not in out and "anyOf" not in json.dumps(out)


def test_a_search_answers_structured_content_and_its_compact_json_text(server: McpProcess) -> None:
    result = server.call("search", {"query": LINK_QUESTION, "mode": "keyword"})
    assert not result.is_error and len(result.content) == 1
    view = result.structured_content
    assert view is not None and view["count"] == len(view["hits"]) == 10
    hit = view["hits"][0]
    assert hit["id"] and hit["score"] > 0 and hit["text"] and isinstance(hit["fields"], dict)
    assert text_of(result) == json.dumps(view, ensure_ascii=False, separators=(",", ":"))


def test_limit_above_100_is_a_tool_error(server: McpProcess) -> None:
    result = server.call("search", {"query": "links", "limit": 101})
    assert result.is_error
    assert "limit" in text_of(result)


def test_known_note_found_by_meaning(server: McpProcess) -> None:
    out = server.ok("search", {"query": LINK_QUESTION, "mode": "semantic", "limit": 5})
    assert out["mode"] == "semantic" and out["query"] == LINK_QUESTION
    ids = [h["id"] for h in out["hits"]]
    assert WIKILINKS in ids[:3]
    top = out["hits"][ids.index(WIKILINKS)]
    assert top["title"] == "Wikilinks"
    assert -1.0 <= top["score"] <= 1.0 and top["score"] >= 0.3
    assert 0 < len(top["text"]) <= 501
    assert top["heading_path"][0] == "Wikilinks"
    assert 1 <= top["line_start"] <= top["line_end"]
    assert top["fields"]["path"] == WIKILINKS
    assert top["components"] is None


def test_hybrid_is_the_default_and_reports_both_legs(server: McpProcess) -> None:
    out = server.ok("search", {"query": "wikilinks"})
    assert out["mode"] == "hybrid" and out["degraded"] is False
    assert 1 <= out["count"] == len(out["hits"]) <= 10
    ranks = [h["components"]["keyword"]["rank"] for h in out["hits"]]
    assert any(r is not None for r in ranks)
    assert all(set(h["components"]) == {"semantic", "keyword"} for h in out["hits"])
    assert WIKILINKS in [h["id"] for h in out["hits"][:3]]


def test_snippets_are_cut_to_about_500_chars(server: McpProcess) -> None:
    out = server.ok("search", {"query": "foam", "mode": "keyword", "limit": 50})
    assert all(len(h["text"]) <= 501 for h in out["hits"])
    assert any(h["truncated"] for h in out["hits"])  # foam-docs has chunks far longer than 500


def test_hypothetical_answer_sets_hyde_and_echoes_query(server: McpProcess) -> None:
    asked = {"query": "linking", "mode": "semantic"}
    plain = server.ok("search", asked)
    assert plain["hyde"] is False
    hyde = server.ok(
        "search",
        {**asked, "hypothetical_answer": "Type [[ and the note name to create a wikilink."},
    )
    assert hyde["hyde"] is True and hyde["query"] == "linking"
    assert WIKILINKS in [h["id"] for h in hyde["hits"][:3]]
    # keyword mode embeds nothing, so it never claims HyDE
    kw = server.ok("search", {"query": "linking", "mode": "keyword", "hypothetical_answer": "x"})
    assert kw["hyde"] is False


def test_folder_restricts_hits(server: McpProcess) -> None:
    out = server.ok("search", {"query": "note", "folder": "user/getting-started", "limit": 20})
    assert out["hits"] and all(h["id"].startswith("user/getting-started/") for h in out["hits"])


def test_get_returns_full_text_and_one_chunk(server: McpProcess, foam_docs: Path) -> None:
    full = server.ok("get", {"id": WIKILINKS})
    on_disk = (foam_docs / WIKILINKS).read_text()
    assert full["title"] == "Wikilinks" and full["truncated"] is False
    assert full["text"].strip() == on_disk.strip()
    assert full["chars"] == len(full["text"])
    hit = server.ok("search", {"query": LINK_QUESTION, "mode": "semantic", "limit": 1})["hits"][0]
    part = server.ok("get", {"id": hit["id"], "chunk": hit["chunk"]})
    assert part["chunk"]["heading_path"] == hit["heading_path"]
    assert part["chunk"]["line_start"] == hit["line_start"]
    assert part["text"].startswith(hit["text"].removesuffix("…")[:200])
    short = server.ok("get", {"id": WIKILINKS, "max_chars": 100})
    assert short["truncated"] is True and len(short["text"]) == 100


def test_list_collections_and_stats(server: McpProcess, spells_json: list[dict]) -> None:
    listed = {c["name"]: c for c in server.ok("list_collections")["collections"]}
    assert set(listed) == {"notes", "spells"}
    assert listed["notes"]["records"] == 86 and listed["notes"]["default"] is True
    assert listed["spells"]["records"] == len(spells_json) == 319
    assert listed["spells"]["fields"] == {"level": "int", "school": "str"}
    assert listed["spells"]["text_template"] == ["name", "desc", "higher_level"]
    assert all(
        c["model"] == "sentence-transformers/all-MiniLM-L6-v2?precision=int8"
        for c in listed.values()
    )
    assert all(c["pending_embeddings"] == 0 and c["dim"] == 384 for c in listed.values())
    stats = server.ok("stats")
    assert stats["index"] == "vault.embed.db" and stats["bytes"] > 0
    assert stats["healthy"] is True and stats["writes_allowed"] is False
    assert stats["last_indexed"] is not None
    assert all(c["semantic"]["usable"] for c in stats["collections"])


def test_spells_where_filter(server: McpProcess, spells_json: list[dict]) -> None:
    level3_evocation = {
        s["index"] for s in spells_json if s["level"] == 3 and s["school"]["name"] == "Evocation"
    }
    out = server.ok(
        "search",
        {
            "query": "a bead of flame that explodes into a huge ball of fire",
            "collection": "spells",
            "mode": "semantic",
            "where": {"level": 3, "school": "Evocation"},
            "min_score": -1,
            "limit": 20,
        },
    )
    ids = [h["id"] for h in out["hits"]]
    assert set(ids) == level3_evocation  # every match, and nothing else
    assert ids[0] == "fireball"
    assert out["hits"][0]["title"] == "Fireball"
    low = server.ok(
        "search",
        {"query": "damage", "collection": "spells", "mode": "keyword", "limit": 100,
         "where": {"level": {"$lte": 1}, "school": {"$in": ["Evocation", "Necromancy"]}}},
    )  # fmt: skip
    expected = {
        s["index"]
        for s in spells_json
        if s["level"] <= 1 and s["school"]["name"] in ("Evocation", "Necromancy")
    }
    assert low["hits"] and {h["id"] for h in low["hits"]} <= expected


def test_errors_are_tool_errors_a_model_can_act_on(server: McpProcess, mcp_index: Path) -> None:
    cases = {
        "empty": ({"query": "   "}, "query is empty"),
        "collection": ({"query": "x", "collection": "monsters"}, "existing collections: notes"),
        "field": ({"query": "x", "collection": "spells", "where": {"colour": "red"}}, "colour"),
        "operator": ({"query": "x", "collection": "spells", "where": {"level": {"$near": 3}}},
                     "$near"),
    }  # fmt: skip
    for name, (args, needle) in cases.items():
        result = server.call("search", args)
        assert result.is_error, name
        assert needle in text_of(result), (name, text_of(result))
        assert str(mcp_index.parent) not in text_of(result)
    missing = server.call("get", {"id": "no/such/note.md"})
    assert missing.is_error and "no record" in text_of(missing)
    # the server survives all of them
    assert server.ok("search", {"query": "wikilinks", "mode": "keyword"})["count"] >= 1


def test_a_semantic_query_runs_on_onnx_runtime_without_torch(server: McpProcess) -> None:
    """The engine in use is ONNX Runtime (a positive control for the import log), never torch."""
    server.ok("search", {"query": LINK_QUESTION, "mode": "semantic"})
    assert server.imported("onnxruntime")
    assert not server.torch_imported() and not server.imported("sentence_transformers")


def test_excluded_folder_never_appears(private_server: McpProcess) -> None:
    for mode in ("semantic", "keyword", "hybrid"):
        for query in (LINK_QUESTION, "wikilinks", "block anchors embeds footnotes"):
            out = private_server.ok(
                "search", {"query": query, "mode": mode, "limit": 100, "min_score": -1}
            )
            ids = [h["id"] for h in out["hits"]]
            assert ids, (mode, query)
            assert all(i.startswith("user/") for i in ids), ids
            assert not any(i.startswith("user/features/") for i in ids), ids
    hidden = private_server.call("get", {"id": WIKILINKS})
    outside = private_server.call("get", {"id": "dev/index.md"})
    nonexistent = private_server.call("get", {"id": "user/features/nope.md"})
    assert hidden.is_error and outside.is_error and nonexistent.is_error
    # a hidden note is indistinguishable from one that does not exist
    assert text_of(hidden).replace(WIKILINKS, "X") == text_of(nonexistent).replace(
        "user/features/nope.md", "X"
    )
    allowed = private_server.ok("get", {"id": "user/index.md"})
    assert allowed["id"] == "user/index.md"
    assert private_server.ok("stats")["path_filters_active"] is True
