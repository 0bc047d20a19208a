"""Fixtures of the integration adapters' tests: the contract suite's store fixture, reused."""

from __future__ import annotations

from tests.contract.conftest import postgres_url, store  # noqa: F401  (pytest fixtures)
