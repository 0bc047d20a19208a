"""Semantic search over a real markdown vault (foam-docs, 86 files) with the real model."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

import semsearch
from semsearch.sources.vault import VAULT_SCHEMA, index_folder

pytestmark = pytest.mark.slow

QUESTION = "how do I create links between notes?"
WIKILINKS = "user/features/wikilinks.md"


@pytest.fixture(scope="module")
def notes(foam_index: Path, minilm) -> semsearch.Collection:
    return semsearch.connect(foam_index).collection("notes", create=False, embedder=minilm)


def test_a_question_about_links_finds_the_wikilinks_note(notes: semsearch.Collection) -> None:
    result = notes.search(QUESTION, limit=3)
    assert WIKILINKS in result.ids
    top = next(hit for hit in result if hit.id == WIKILINKS)
    assert top.chunk is not None and top.chunk.heading_path[0] == "Wikilinks"
    assert -1.0 <= top.score <= 1.0 and top.score >= 0.3


def test_excluding_the_folder_removes_it_and_refills(notes: semsearch.Collection) -> None:
    result = notes.search(QUESTION, limit=10, exclude=["user/features/*"])
    assert len(result) == 10
    assert not any(hit.id.startswith("user/features/") for hit in result)


def test_folder_scope(notes: semsearch.Collection) -> None:
    result = notes.search(QUESTION, limit=5, folder="user/recipes")
    assert result.ids and all(i.startswith("user/recipes/") for i in result.ids)


def test_reindex_reports_everything_unchanged(
    foam_index: Path, foam_docs: Path, minilm, tmp_path: Path
) -> None:
    copy = tmp_path / "copy.embed.db"
    shutil.copy(foam_index, copy)
    with semsearch.connect(copy) as db:
        coll = db.collection("notes", schema=VAULT_SCHEMA, embedder=minilm)
        report = index_folder(coll, foam_docs)
    assert (report.new, report.changed, report.removed, report.skipped) == (0, 0, 0, [])
    assert report.unchanged == 86
    assert report.chunks_embedded == 0


def test_every_chunk_fits_the_model_window(notes: semsearch.Collection, minilm) -> None:
    from semsearch.chunking import embedding_text

    for record in notes.get(notes.ids()):
        for chunk in notes.chunk(record.text, record.fields):
            ids = minilm.tokenizer.encode(embedding_text(chunk.text, chunk.heading_path)).ids
            assert len(ids) <= 256  # max_seq_length, special tokens included


def test_last_sentence_of_a_2000_word_note_is_retrievable(db: semsearch.Database, minilm) -> None:
    filler = " ".join(
        f"Section {i} discusses quarterly budget spreadsheets and invoice totals."
        for i in range(250)
    )
    marker = "The lighthouse keeper feeds seven orange cats every morning."
    coll = db.collection("long", embedder=minilm)
    # The control note sorts first by id, so only the marker's own chunk can put long.md on top.
    coll.upsert(
        [{"id": "long.md", "text": filler + " " + marker}, {"id": "a-control.md", "text": filler}]
    )
    assert len(filler.split()) >= 2000
    hit = coll.search("who feeds the cats at the lighthouse?", limit=1, min_score=None).hits[0]
    assert hit.id == "long.md"
    assert hit.chunk is not None and marker in hit.chunk.text
