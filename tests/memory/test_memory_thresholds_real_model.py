"""Default thresholds with the real model (all-MiniLM-L6-v2): paraphrases are recalled.

The memory used to default to ``min_score=0.7`` (a value for ada-002); with MiniLM, paraphrases
score well below it, so the memory's own use case found nothing. Each query below is answered by
one stored message that shares almost no words with it; a human judged each pair. The default
threshold now comes from the embedder (0.30 for MiniLM, calibrated on SciFact).
"""

from __future__ import annotations

import pytest

from semsearch.memory.conversation import ConversationMemory

pytestmark = pytest.mark.slow

PAIRS = {
    "insomnia problems": "I keep having sleepless nights",
    "where did I park the car": "I left the car on level 3 of the garage",
    "my dog's vet appointment": "Rex has a check-up at the animal clinic on Friday",
}
DISTRACTORS = ["The quarterly report is due on Monday", "Buy oat milk and bananas"]


@pytest.fixture(scope="module")
def memory(tmp_path_factory, minilm):
    path = tmp_path_factory.mktemp("thresholds") / "m.embed.db"
    mem = ConversationMemory(str(path), embedder=minilm, background=False)
    for n, text in enumerate([*PAIRS.values(), *DISTRACTORS]):
        mem.add_message("alice", f"c{n}", "user", text)
    assert mem.backfill().embedded == len(PAIRS) + len(DISTRACTORS)
    yield mem
    mem.close()


def test_the_default_threshold_is_the_embedders_calibrated_one(minilm) -> None:
    assert minilm.default_min_score == pytest.approx(0.34)


@pytest.mark.parametrize("query", list(PAIRS))
def test_memory_search_default_recalls_paraphrases(memory, query) -> None:
    hits = memory.search("alice", query)
    assert hits, f"nothing recalled for {query!r}"
    assert hits[0].message.content == PAIRS[query]
    # the old default found nothing by meaning
    assert memory.search("alice", query, min_score=0.7, mode="semantic") == []


def test_memory_context_default_includes_the_paraphrase(memory) -> None:
    ctx = memory.context("alice", "c-new", "insomnia problems", recent=0)
    assert PAIRS["insomnia problems"] in [item.content for item in ctx.items]
