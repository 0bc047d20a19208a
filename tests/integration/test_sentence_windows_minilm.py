"""Sentence windows with the real default model: the buried-fact case of issue 20 and the
sentence each hit highlights (slow: embeds with all-MiniLM-L6-v2)."""

from __future__ import annotations

import pytest

from benchmarks import buried_facts_cases as cases
from benchmarks.buried_facts import notes_for

pytestmark = pytest.mark.slow

LIGHTHOUSE = next(c for c in cases.CASES if "lighthouse" in c[3])


@pytest.mark.parametrize("mode", ["semantic", "hybrid"])
def test_the_lighthouse_note_ranks_first_and_highlights_the_fact(db, minilm, mode) -> None:
    note_id, template, fact, query = LIGHTHOUSE
    coll = db.collection("notes", embedder=minilm)
    coll.upsert([{"id": k, "text": v} for k, v in notes_for(note_id, template, fact).items()])
    top = coll.search(query, mode=mode, limit=3, min_score=None)[0]
    assert top.id == note_id
    assert top.chunk is not None and top.highlight is not None
    start, end = top.highlight
    assert top.chunk.text[start:end] == fact.strip()


def test_the_windows_off_collection_misses_it(db, minilm) -> None:
    """The fault of issue 20 is back with windows off: a one-line note ranks first."""
    note_id, template, fact, query = LIGHTHOUSE
    coll = db.collection("plain", embedder=minilm, sentence_windows=False)
    coll.upsert([{"id": k, "text": v} for k, v in notes_for(note_id, template, fact).items()])
    assert coll.search(query, limit=3, min_score=None)[0].id != note_id


def test_semantic_highlight_is_the_sentence_about_the_query(db, minilm) -> None:
    note = (
        "Garden jobs for April. Sow the carrots and beetroot in the raised bed. "
        "The dentist moved my check-up to the ninth of May at half past three. "
        "Net the brassicas against pigeons and water the greenhouse every morning."
    )
    coll = db.collection("notes", embedder=minilm)
    coll.upsert([{"id": "garden", "text": note}])
    hit = coll.search("when is my dental appointment", limit=1, min_score=None)[0]
    start = note.index("The dentist")
    assert hit.highlight == (start, note.index("Net the") - 1)
