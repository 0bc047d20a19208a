"""Fixtures for the API-provider tests: fake servers on 127.0.0.1, keys, a fast retry policy.

Nothing here reaches the real services (there is no network): these tests prove our client's
contract with each documented API shape and our failure handling, not the services themselves.
"""

from __future__ import annotations

import random
from collections.abc import Iterator

import pytest

from semsearch.embedders.retry import RetryPolicy
from tests.providers.servers import (
    FakeServer,
    gemini_responder,
    ollama_responder,
    openai_responder,
    serve,
)

OPENAI_KEY = "sk-test-OPENAI-0123456789abcdef"
AZURE_KEY = "azure-test-KEY-fedcba9876543210"
GEMINI_KEY = "AIza-test-GEMINI-5555aaaa"


class Sleeps(list[float]):
    """Records the waits a policy asks for, instead of sleeping."""

    def __call__(self, seconds: float) -> None:
        self.append(seconds)


@pytest.fixture
def sleeps() -> Sleeps:
    return Sleeps()


@pytest.fixture
def policy(sleeps: Sleeps) -> RetryPolicy:
    """5 attempts, backoff caps 0.01, 0.02, 0.04, 0.08 s (recorded, not slept), 2 s timeout."""
    return RetryPolicy(
        attempts=5, initial_wait=0.01, max_wait=1.0, timeout=2.0, sleep=sleeps, rng=random.Random(7)
    )


@pytest.fixture
def keys(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", OPENAI_KEY)
    monkeypatch.setenv("AZURE_OPENAI_API_KEY", AZURE_KEY)
    monkeypatch.setenv("GEMINI_API_KEY", GEMINI_KEY)
    monkeypatch.delenv("GOOGLE_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    monkeypatch.delenv("OPENAI_API_VERSION", raising=False)


@pytest.fixture
def openai_server() -> Iterator[FakeServer]:
    yield from serve(openai_responder(1536))


@pytest.fixture
def gemini_server() -> Iterator[FakeServer]:
    yield from serve(gemini_responder(3072))


@pytest.fixture
def ollama_server() -> Iterator[FakeServer]:
    yield from serve(ollama_responder(768))
