"""One threshold rule on every face: the embedder's default min_score, and no silent ignoring.

Plumbing with the fake embedder. ``Strict`` carries its own ``default_min_score`` of 0.999: only
a text identical to the query reaches it, so a face that applied any other default (the old 0.3
of the API and MCP, 0.2 of the web page, 0.7 of the memory) would return the near misses too.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import semsearch
from semsearch.embedders.fake import FakeEmbedder
from semsearch.embedders.thresholds import default_min_score, model_default, threshold_is_guess
from semsearch.memory.conversation import ConversationMemory
from semsearch.server.mcp.service import McpConfig, McpService

TEXTS = {"a": "alpha owls at night", "b": "alpha owls at noon", "c": "beta bees"}


class Strict(FakeEmbedder):
    """The fake embedder with a model-specific default threshold."""

    default_min_score = 0.999


class Protocolish:
    """An embedder written against the protocol only (no default_min_score attribute)."""

    model_id = "sentence-transformers/all-MiniLM-L6-v2?precision=int8"


def test_model_defaults_are_looked_up_by_model_id_fake_embedder() -> None:
    assert model_default("sentence-transformers/all-MiniLM-L6-v2") == 0.34
    assert model_default("sentence-transformers/all-MiniLM-L6-v2?precision=int8") == 0.34
    assert model_default("openai:text-embedding-ada-002") == 0.70
    assert model_default("openai:text-embedding-3-small?dimensions=256") == 0.20
    assert model_default("ollama:nomic-embed-text") == 0.20
    assert default_min_score(Protocolish()) == 0.34
    assert default_min_score(Strict()) == 0.999
    assert FakeEmbedder().default_min_score == 0.30


@pytest.fixture
def coll(tmp_path: Path):
    with semsearch.connect(tmp_path / "t.embed.db") as db:
        coll = db.collection("t", embedder=Strict(32))
        coll.upsert([{"id": k, "text": v} for k, v in TEXTS.items()])
        yield coll


def _near_misses(coll) -> list[str]:
    """Ids whose cosine with the query is below 0.999 but above 0.3, computed from vectors."""
    emb = Strict(32)
    q = emb.embed_query(TEXTS["a"])
    docs = emb.embed_documents(list(TEXTS.values()))
    scores = dict(zip(TEXTS, (docs @ q).tolist(), strict=True))
    return [k for k, s in scores.items() if 0.3 <= s < 0.999]


def test_collection_search_uses_the_embedders_default_fake_embedder(coll) -> None:
    assert _near_misses(coll), "the data must have near misses for this test to mean anything"
    result = coll.search(TEXTS["a"])
    assert result.ids == ["a"] and result.min_score == 0.999 and result.notes == ()
    assert set(coll.search(TEXTS["a"], min_score=0.3).ids) >= {"a", *_near_misses(coll)}
    assert coll.search(TEXTS["a"], min_score=None).min_score is None


def test_a_threshold_is_not_applied_to_bm25_and_the_note_says_so_fake_embedder(coll) -> None:
    result = coll.search("alpha owls", mode="keyword", min_score=0.5)
    assert result.min_score is None
    assert result.notes == (
        "min_score=0.5 ignored: keyword scores are BM25, which has no fixed scale (the default "
        "floor is off; min_score applies to semantic and hybrid mode)",
    )
    assert set(result.ids) >= {"a", "b"}  # nothing was cut
    assert coll.search("alpha owls", mode="keyword").notes == ()  # the default is not a choice
    assert coll.search("alpha owls", mode="keyword", min_score=-1).notes == ()  # keeps all


def test_a_threshold_in_hybrid_mode_cuts_the_fused_score_fake_embedder(coll) -> None:
    everything = coll.search("alpha owls", mode="hybrid", min_score=None)
    cut = coll.search("alpha owls", mode="hybrid", min_score=0.3)
    assert cut.min_score == 0.3 and cut.notes == ()
    assert cut.ids == [h.id for h in everything if h.score >= 0.3]


def test_memory_search_uses_the_embedders_default_fake_embedder(tmp_path) -> None:
    memory = ConversationMemory(
        semsearch.connect(tmp_path / "m.embed.db"), embedder=Strict(32), background=False
    )
    for n, text in enumerate(TEXTS.values()):
        memory.add_message("u", f"c{n}", "user", text)
    memory.backfill()
    semantic = memory.search("u", TEXTS["a"], mode="semantic")
    assert [h.message.content for h in semantic] == [TEXTS["a"]]
    loose = memory.search("u", TEXTS["a"], min_score=0.3, mode="semantic")
    assert len(loose) > 1
    # hybrid (the default) keeps confident matches only: a cosine of 0.999 (Strict), or every
    # meaningful query word held. "at" is a stop word; "alpha" and "owls" are in 2 of the 3
    # messages (over half: not meaningful); "night" is in 1: only the message with "night"
    # passes, in keyword mode too; without the floor keyword mode finds both "alpha owls"
    hybrid = memory.search("u", TEXTS["a"])
    assert [h.message.content for h in hybrid] == [TEXTS["a"]]
    keyword = memory.search("u", TEXTS["a"], mode="keyword")
    assert [h.message.content for h in keyword] == [TEXTS["a"]]
    everything = memory.search("u", TEXTS["a"], mode="keyword", min_score=None)
    assert {h.message.content for h in everything} == {TEXTS["a"], TEXTS["b"]}
    memory.close()


def test_mcp_search_default_and_note_fake_embedder(tmp_path) -> None:
    path = str(tmp_path / "n.embed.db")
    with semsearch.connect(path) as db:
        db.collection("notes", embedder="fake:32").upsert(
            [{"id": k, "text": v} for k, v in TEXTS.items()]
        )
    service = McpService(McpConfig(location=path, model="fake:32"))
    try:
        hybrid = service.search("alpha owls", min_score=0.3)  # hybrid is the MCP default
        assert hybrid["min_score"] == 0.3 and hybrid["notes"] == []
        semantic = service.search(TEXTS["a"], mode="semantic")
        assert semantic["min_score"] == FakeEmbedder(32).default_min_score
        assert service.search("alpha owls")["notes"] == []
    finally:
        service.close()


# -- issue 46, item 15: thresholds by model, not by provider prefix ----------------------------


@pytest.mark.parametrize(
    ("model_id", "value", "guess"),
    [
        # ada-002 (OpenAI's guidance: cosines crowd into [0.7, 1]) however it is served
        ("openai:text-embedding-ada-002", 0.70, False),
        ("azure-openai:prod-embed?model=text-embedding-ada-002", 0.70, False),
        ("azure-openai:text-embedding-ada-002", 0.70, False),  # deployment named after it
        ("azure-openai:prod?model=text-embedding-3-small&dimensions=256", 0.20, False),
        (
            "sentence-transformers/all-MiniLM-L6-v2?precision=int8",
            0.34,
            False,
        ),  # measured (docs/retrieval.md)
        ("fake:32", 0.30, False),
        # nothing says which model: the 0.20 fallback, a guess
        ("azure-openai:prod-embed", 0.20, True),
        ("ollama:nomic-embed-text", 0.20, True),
        ("gemini:gemini-embedding-001?dimensions=768", 0.20, True),
    ],
)
def test_thresholds_follow_the_model_and_say_when_they_guess_fake_embedder(
    model_id: str, value: float, guess: bool
) -> None:
    assert model_default(model_id) == value

    class Named:
        """An embedder written against the protocol only, with this model id."""

        def __init__(self) -> None:
            self.model_id = model_id

    assert threshold_is_guess(Named()) is guess
    unknown = FakeEmbedder(32)
    unknown.model_id = model_id
    assert unknown.default_min_score == value and threshold_is_guess(unknown) is guess


def test_an_embedder_that_sets_its_own_threshold_never_guesses_fake_embedder() -> None:
    own = Strict(32)
    own.model_id = "mystery:model"
    assert default_min_score(own) == 0.999 and not threshold_is_guess(own)
