"""An index embedded by the torch path (earlier versions) keeps working with the ONNX engine.

Same model id, no re-embedding: the ONNX engine's query vectors search the old document vectors.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import semsearch
from semsearch.embedders.local import DEFAULT_MODEL, LocalEmbedder
from semsearch.sources.vault import VAULT_SCHEMA, index_folder

pytest.importorskip("sentence_transformers")

QUESTIONS = [
    "how do I link two notes?",
    "create a daily note",
    "publish my notes as a website",
    "what are backlinks",
    "embed an image in a note",
    "use templates for new notes",
    "tags and how to search them",
    "graph visualisation of my notes",
]


@pytest.mark.slow
def test_torch_built_index_is_searched_by_the_onnx_engine_with_the_same_results(
    tmp_path: Path, foam_docs: Path
) -> None:
    index = tmp_path / "old.embed.db"
    torch_model = LocalEmbedder(engine="torch")
    with semsearch.connect(index) as db:
        old = db.collection("notes", schema=VAULT_SCHEMA, embedder=torch_model)
        index_folder(old, foam_docs)
        assert old.model_id == DEFAULT_MODEL
        before = {q: [h.id for h in old.search(q, limit=5)] for q in QUESTIONS}
    with semsearch.connect(index) as db:
        notes = db.collection("notes")  # the stored model id, resolved to the default engine
        assert isinstance(notes.embedder, LocalEmbedder) and notes.embedder.engine == "onnx"
        assert notes.embedder.precision == "fp32"  # the stored id names fp32 vectors
        pending = notes.stats().pending
        after = {q: [h.id for h in notes.search(q, limit=5)] for q in QUESTIONS}
    assert pending == 0  # nothing was re-embedded or invalidated
    with semsearch.connect(index) as db, pytest.raises(semsearch.ModelMismatch) as mixed:
        db.collection("notes", embedder="local:all-MiniLM-L6-v2?precision=int8")
    assert "precision=int8" in mixed.value.message  # int8 queries on fp32 documents: refused
    assert all(after[q][0] == before[q][0] for q in QUESTIONS), (before, after)
    overlap = sum(len(set(after[q]) & set(before[q])) for q in QUESTIONS) / (5 * len(QUESTIONS))
    assert overlap >= 0.9, overlap
