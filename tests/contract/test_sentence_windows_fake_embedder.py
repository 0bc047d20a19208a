"""Sentence windows on every backend: the same corpus gives the same ids, mixed scores (to
float16 tolerance) and highlights, and windows go with their records (fake embedder).

Expected scores are worked out here from the fake embedder's vectors: 0.5 * cos(query, chunk) +
0.5 * the best cos(query, sentence), with the sentences split by hand.
"""

from __future__ import annotations

import numpy as np
import pytest

from semsearch.embedders.fake import FakeEmbedder
from semsearch.stores.base import SentenceWindows
from tests.contract.helpers import as_stored

NOTES = {
    "compost": (
        "Turn the compost heap every week with the fork. The lighthouse key is under the blue "
        "pot. Keep the lid on when it rains hard."
    ),
    "bread": "Bread wants a hot oven for forty minutes. Salt goes in at the very start.",
    "kitchen": "The kitchen tap drips when the blue washer wears out.",
}
SENTENCES = {
    "compost": [
        "Turn the compost heap every week with the fork.",
        "The lighthouse key is under the blue pot.",
        "Keep the lid on when it rains hard.",
    ],
    "bread": ["Bread wants a hot oven for forty minutes.", "Salt goes in at the very start."],
    "kitchen": [],  # one sentence: no windows
}
QUERIES = ("where is the lighthouse key", "blue pot", "hot oven salt")


def expected(query: str) -> dict[str, tuple[float, tuple[int, int] | None]]:
    emb = FakeEmbedder(32)
    q = emb.embed_query(query)
    out: dict[str, tuple[float, tuple[int, int] | None]] = {}
    for rid, text in NOTES.items():
        chunk = float(emb.embed_documents([text])[0] @ q)
        if not SENTENCES[rid]:
            out[rid] = (chunk, None)
            continue
        sims = emb.embed_documents(SENTENCES[rid]) @ q
        best = SENTENCES[rid][int(np.argmax(sims))]
        start = text.index(best)
        out[rid] = (0.5 * chunk + 0.5 * float(np.max(sims)), (start, start + len(best)))
    return out


@pytest.mark.parametrize("query", QUERIES)
def test_semantic_scores_and_highlights_match_the_mix_on_every_backend(database, query) -> None:
    coll = database.collection("notes", embedder=FakeEmbedder(32))
    coll.upsert([{"id": k, "text": v} for k, v in NOTES.items()])
    want = expected(query)
    hits = coll.search(query, limit=3, min_score=None, exact=True).hits
    assert [h.id for h in hits] == sorted(want, key=lambda r: (-want[r][0], r))
    for hit in hits:
        assert hit.score == pytest.approx(want[hit.id][0], abs=2e-3)  # float16 windows
        assert hit.highlight == want[hit.id][1]


def test_windows_go_with_their_record_on_every_backend(database) -> None:
    assert isinstance(database.store, SentenceWindows)
    coll = database.collection("notes", embedder=FakeEmbedder(32))
    coll.upsert([{"id": k, "text": v} for k, v in NOTES.items()])
    coll.upsert([{"id": "copy", "text": NOTES["compost"]}])  # same content: windows shared
    coll.delete(["compost"])
    [copy] = [h for h in coll.search("blue pot", limit=4, min_score=None) if h.id == "copy"]
    assert copy.highlight == expected("blue pot")["compost"][1]
    coll.upsert([{"id": "copy", "text": "Only one sentence about the blue pot now."}])
    coll.delete(["bread"])
    store = database.store
    assert isinstance(store, SentenceWindows)
    chunks = {h.id: h for h in coll.search("blue pot", limit=4, min_score=None)}
    assert chunks["copy"].highlight is None
    # every chunk left has one sentence: the store holds no windows for any of them
    q = FakeEmbedder(32).embed_query("blue pot")
    docs = FakeEmbedder(32).embed_documents(["Only one sentence about the blue pot now."])
    assert chunks["copy"].score == pytest.approx(float(as_stored(store, docs)[0] @ q), abs=1e-5)
    # no chunk holds the compost note's content now: its windows are gone from the store, so
    # the same text written again (not embedded) finds none under its content hash
    coll.upsert([{"id": "again", "text": NOTES["compost"]}], embed=False)
    [found] = store.keyword_search(coll.name, "lighthouse", 5, None)
    assert store.window_vectors(coll.name, [found.chunk_id]) == {}


P1 = (
    "The lighthouse key hangs on the hook behind the blue door of the shed. "
    "The spare one is with the neighbour at number twelve, who waters the plants. "
    "Both open the padlock on the gate as well as the shed itself at the back."
)


def test_a_rewritten_record_keeps_the_windows_of_its_unchanged_chunk(database) -> None:
    """Editing one paragraph re-chunks the record; the untouched paragraph's chunk reuses its
    vector by hash, and its windows with it."""
    coll = database.collection("notes", embedder=FakeEmbedder(32, max_tokens=48))
    old = P1 + "\n\n" + "Bread wants a hot oven for forty minutes. Salt goes in at the start."
    new = P1 + "\n\n" + "Soup wants a slow simmer for an hour. Pepper goes in at the very end."
    coll.upsert([{"id": "note", "text": old}])
    # the query is P1's first sentence: that window's cosine is 1, so P1's chunk wins by it
    query = "The lighthouse key hangs on the hook behind the blue door of the shed."
    first = coll.search(query, limit=1, min_score=None)[0]
    assert first.chunk is not None and first.chunk.text == P1
    assert first.highlight == (0, len(query))
    report = coll.upsert([{"id": "note", "text": new}])
    assert report.chunks_embedded == 1  # the edited paragraph only; P1 keeps its vector
    again = coll.search(query, limit=1, min_score=None)[0]
    assert again.highlight == first.highlight
    assert again.score == pytest.approx(first.score, abs=1e-6)
