"""Another index's chunk vectors reused by text (semsearch/embedders/cached.py): the texts an
index holds are not embedded again, the others go to the model, and the collection built with
them holds the source's vectors."""

from __future__ import annotations

import numpy as np

import semsearch
from semsearch.embedders.cached import TableEmbedder, vectors_by_text
from semsearch.embedders.fake import FakeEmbedder


class Counting(FakeEmbedder):
    """The fake model, counting the texts it embeds."""

    def __init__(self) -> None:
        super().__init__(16)
        self.texts: list[str] = []

    def embed_documents(self, texts):
        self.texts += list(texts)
        return super().embed_documents(texts)


RECORDS = [{"id": f"r{i}", "text": f"note {i} about otters and kelp"} for i in range(6)]


def test_vectors_of_one_index_are_reused_in_another(tmp_path) -> None:
    with semsearch.connect(tmp_path / "a.embed.db") as db:
        source = db.collection("c", embedder=FakeEmbedder(16), sentence_windows=False)
        source.upsert(RECORDS)
        table = vectors_by_text(source)
        stored = source.vectors([r["id"] for r in RECORDS])
    assert len(table) == len(RECORDS)  # one chunk each
    model = Counting()
    reusing = TableEmbedder(model, table)
    with semsearch.connect(tmp_path / "b.embed.db") as db:
        target = db.collection("c", embedder=reusing, sentence_windows=False)
        target.upsert([*RECORDS, {"id": "new", "text": "a record the source lacks"}])
        copied = target.vectors([r["id"] for r in RECORDS])
    assert model.texts == ["a record the source lacks"]
    assert (reusing.reused, reusing.embedded) == (len(RECORDS), 1)
    for rid, vectors in stored.items():
        np.testing.assert_allclose(copied[rid][0], vectors[0], atol=1e-3)
    assert reusing.model_id == "fake:16" and reusing.dim == 16
