"""LangChain's own standard VectorStore tests (``langchain-tests``), unmodified, on every store.

``VectorStoreIntegrationTests`` gives the store LangChain's ``DeterministicFakeEmbedding``
(a fake: vectors from a hash of the text); the adapter wraps it as a semsearch embedder with a
model id. Nothing is skipped: ``has_sync``, ``has_async`` and ``has_get_by_ids`` keep their
defaults (the async tests run LangChain's default executor versions of the sync methods).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from langchain_core.vectorstores import VectorStore
from langchain_tests.integration_tests import VectorStoreIntegrationTests

from semsearch.integrations.langchain import SemsearchVectorStore
from tests.contract.conftest import StoreUnderTest

# The suite's async tests are bare ``async def`` (LangChain runs pytest-asyncio in auto mode):
# marked here, for this module only (pytest-asyncio then warns about the sync ones: ignored).
pytestmark = [
    pytest.mark.asyncio,
    pytest.mark.filterwarnings(
        "ignore:The test <Function .* is marked with '@pytest.mark.asyncio'"
    ),
]


class TestSemsearchVectorStoreStandard(VectorStoreIntegrationTests):
    """The standard suite on a fresh collection of each backend (fake embeddings)."""

    @pytest.fixture
    def vectorstore(self, store: StoreUnderTest) -> Iterator[VectorStore]:
        vs = SemsearchVectorStore.open(store.location, "lc", embedding=self.get_embeddings())
        try:
            yield vs
        finally:
            vs.close()
