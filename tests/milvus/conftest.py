"""Fixtures for the Milvus backend tests: a real Milvus Lite store in a temporary folder."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

import semsearch

pytest.importorskip("pymilvus")
pytest.importorskip("milvus_lite")


@pytest.fixture
def lite_location(tmp_path: Path) -> str:
    """A fresh Milvus Lite location (the folder does not exist yet)."""
    return f"milvus-lite://{tmp_path / 'store.db'}"


@pytest.fixture
def mdb(lite_location: str) -> Iterator[semsearch.Database]:
    """A Database on a fresh Milvus Lite store, closed afterwards (which frees its lock)."""
    database = semsearch.connect(lite_location)
    yield database
    database.close()
