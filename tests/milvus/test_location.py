"""Parsing Milvus locations: Lite paths, server URLs, credentials that never show."""

from __future__ import annotations

import os

import pytest

from semsearch.errors import BackendUnavailable
from semsearch.stores.milvus.conn import parse_location


def test_lite_paths_absolute_and_relative() -> None:
    assert parse_location("milvus-lite:///data/notes.db").lite_path == "/data/notes.db"
    rel = parse_location("milvus-lite://notes.db")
    assert rel.lite_path == os.path.abspath("notes.db") and rel.uri is None


def test_server_credentials_database_and_index() -> None:
    t = parse_location("https://alice:s3cret@milvus.example:19530?db=search&index=ivf_flat")
    assert (t.uri, t.token, t.db_name, t.index) == (
        "https://milvus.example:19530", "alice:s3cret", "search", "IVF_FLAT",
    )  # fmt: skip
    assert "s3cret" not in t.display
    k = parse_location("http://localhost:19530?token=KEY123")
    assert (k.uri, k.token, k.index) == ("http://localhost:19530", "KEY123", "HNSW")
    assert "KEY123" not in k.display


@pytest.mark.parametrize("bad", ["milvus-lite://", "ftp://host", "http://h:1?index=DISKANN"])
def test_bad_locations(bad: str) -> None:
    with pytest.raises(BackendUnavailable):
        parse_location(bad)
