"""Fixtures for conversation-memory tests.

The contract suite's parametrised ``store`` fixture (every backend: SQLite, PostgreSQL, ...) is
re-exported here so the memory property test runs on each backend without a second factory;
so is the HTTP suite's ``make_client`` (the real app on a real SQLite file).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from semsearch.embedders.fake import FakeEmbedder
from semsearch.memory.conversation import ConversationMemory
from tests.contract.conftest import database, postgres_url, store  # noqa: F401  (fixtures)
from tests.http.conftest import make_client  # noqa: F401  (fixture: the real app)


@pytest.fixture
def fake_memory(tmp_path: Path) -> Iterator[ConversationMemory]:
    """A memory on a real SQLite file with the deterministic fake embedder (plumbing only),
    without a background worker: tests call ``backfill`` to embed."""
    memory = ConversationMemory(
        str(tmp_path / "memory.embed.db"), embedder=FakeEmbedder(32), background=False
    )
    yield memory
    memory.close()
