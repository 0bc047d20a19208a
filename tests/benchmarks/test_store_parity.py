"""benchmarks/store_parity.py: the vector table it fills the other stores from holds every text
the model embedded for the SQLite index (chunks and sentence windows), so a second store is
filled without embedding anything; and the top-10 overlap on worked examples. (PostgreSQL and
Milvus Lite take minutes to fill SciFact; the script's own run covers them.)"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest
from numpy.typing import NDArray

from benchmarks import store_parity
from semsearch import connect
from semsearch.embedders.cached import vectors_by_text
from semsearch.embedders.fake import FakeEmbedder

RECORDS = [
    {
        "id": f"r{i}",
        "text": f"Record {i} opens with a sentence about lighthouses and their keepers. "
        f"It goes on with a second sentence about storms at sea number {i}. "
        "A third sentence closes the record with something about ships in harbour.",
    }
    for i in range(6)
] + [{"id": "short", "text": "One sentence only, so it has no windows."}]


class Recording(FakeEmbedder):
    """A FakeEmbedder that remembers every document text it was given."""

    def __init__(self) -> None:
        super().__init__(dim=16, max_tokens=48)  # records of 1-2 chunks of 1-3 sentences
        self.seen: list[str] = []

    def embed_documents(self, texts: Sequence[str]) -> NDArray[np.float32]:
        self.seen.extend(texts)
        return super().embed_documents(texts)


def test_the_table_holds_every_text_the_model_embedded(tmp_path: Path) -> None:
    model = Recording()
    with connect(tmp_path / "a.embed.db") as db:
        coll = db.collection("beir", embedder=model)
        coll.upsert(RECORDS)
        windows = store_parity.window_vectors_by_text(coll)
        table = vectors_by_text(coll) | windows
    assert windows, "multi-sentence chunks have windows"
    assert set(model.seen) <= set(table)
    # a second store filled through the table embeds nothing and gets the same vectors
    again = store_parity.QueryCache(Recording(), table)
    with connect(tmp_path / "b.embed.db") as db:
        db.collection("beir", embedder=again).upsert(RECORDS)
    assert (again.embedded, again.inner.seen) == (0, [])
    first = model.embed_documents([model.seen[0]])[0]
    np.testing.assert_allclose(table[model.seen[0]], first, atol=1e-3)  # float16 blocks


def test_query_vectors_are_embedded_once() -> None:
    cache = store_parity.QueryCache(FakeEmbedder(dim=8), {})
    calls = []
    cache.inner.embed_query = lambda text: calls.append(text) or np.ones(8, np.float32)  # type: ignore[method-assign]
    cache.embed_query("storms")
    cache.embed_query("storms")
    assert calls == ["storms"]


def test_overlap_worked_examples() -> None:
    sqlite = {"q1": ["a", "b", "c", "d"], "q2": ["a"], "q3": []}
    other = {"q1": ["a", "b", "x", "y"], "q2": ["a"], "q3": []}
    # q1: 2 of 4, q2: 1 of 1, q3: both empty counts as agreement: (0.5 + 1 + 1) / 3
    assert store_parity.overlap(sqlite, other) == pytest.approx(2.5 / 3)
    assert store_parity.overlap({"q": []}, {"q": ["a"]}) == 0.0
