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


def skip_without_windows(database) -> None:
    if not isinstance(database.store, SentenceWindows):
        pytest.xfail(f"{type(database.store).__name__} keeps no sentence windows yet")


@pytest.mark.parametrize("query", QUERIES)
def test_semantic_scores_and_highlights_match_the_mix_on_every_backend(database, query) -> None:
    skip_without_windows(database)
    coll = database.collection("notes", embedder=FakeEmbedder(32))
    coll.upsert([{"id": k, "text": v} for k, v in NOTES.items()])
    want = expected(query)
    hits = coll.search(query, limit=3, min_score=None, exact=True).hits
    assert [h.id for h in hits] == sorted(want, key=lambda r: (-want[r][0], r))
    for hit in hits:
        assert hit.score == pytest.approx(want[hit.id][0], abs=2e-3)  # float16 windows
        assert hit.highlight == want[hit.id][1]


def test_windows_go_with_their_record_on_every_backend(database) -> None:
    skip_without_windows(database)
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
    assert chunks["copy"].score == pytest.approx(float(docs[0] @ q), abs=1e-5)
