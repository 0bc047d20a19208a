"""ConversationMemory caches query embeddings (a long-running process); health still probes
the model itself (fake embedder counting its calls)."""

from __future__ import annotations

from pathlib import Path

from semsearch.embedders.fake import FakeEmbedder
from semsearch.memory.conversation import ConversationMemory


def test_repeated_memory_search_embeds_the_query_once_fake(tmp_path: Path) -> None:
    embedder = FakeEmbedder(32)
    memory = ConversationMemory(tmp_path / "m.embed.db", embedder=embedder, background=False)
    memory.add_message("alice", "c1", "user", "the pharmacy closes at six")
    memory.backfill()
    before = embedder.calls
    first = memory.search("alice", "pharmacy hours", min_score=None)
    second = memory.search("alice", "pharmacy hours", min_score=None)
    assert embedder.calls == before + 1
    assert [h.message.id for h in first] == [h.message.id for h in second]
    assert memory.query_cache is not None and memory.query_cache.stats().hits == 1
    memory.health()
    memory.health()
    assert embedder.calls == before + 3  # each health check calls the model, not the cache
    memory.close()


def test_memory_query_cache_can_be_turned_off_fake(tmp_path: Path) -> None:
    embedder = FakeEmbedder(32)
    memory = ConversationMemory(
        tmp_path / "m.embed.db", embedder=embedder, background=False, query_cache=False
    )
    memory.add_message("alice", "c1", "user", "hello")
    memory.backfill()
    before = embedder.calls
    memory.search("alice", "hello")
    memory.search("alice", "hello")
    assert embedder.calls == before + 2 and memory.query_cache is None
    memory.close()
