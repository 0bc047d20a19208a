"""Milvus' keyword ranking on a small corpus, every score worked out by hand (and the SQLite
store, the reference ranking, checked against the same numbers, so the two agree).

The corpus (FTS5 porter terms; ``kind`` for filters; r1's ``title`` field opens its text, so
its first term is a title term, weighted 2.5):

    r1  title "Heron"  "Heron hunts fish"          heron(title) hunt fish              |d| = 3  bird
    r2                 "A heron and a heron nest"  a heron and a heron nest            |d| = 6  bird
    r3                 "Sparrows nest in reeds"    sparrow nest in reed                |d| = 4  song
    r4                 "Reeds by the river bank"   reed by the river bank              |d| = 5  place
    r5                 "The bank of the river"     the bank of the river               |d| = 5  place

N = 5, avgdl = 23 / 5 = 4.6; k1 = 1.2, b = 0.75; idf(n) = ln(1 + (N - n + 0.5) / (n + 0.5));
norm(|d|) = k1 * (1 - b + b * |d| / avgdl); part(f, |d|) = f * (k1 + 1) / (f + norm(|d|)).

    norm(3) = 1.2 * (0.25 + 0.75 * 3 / 4.6) = 0.886957     idf(1) = ln 4   = 1.386294
    norm(4) = 1.2 * (0.25 + 0.75 * 4 / 4.6) = 1.082609     idf(2) = ln 2.4 = 0.875469
    norm(5) = 1.2 * (0.25 + 0.75 * 5 / 4.6) = 1.278261
    norm(6) = 1.2 * (0.25 + 0.75 * 6 / 4.6) = 1.473913

    part(2.5, 3) = 5.5 / 3.386957 = 1.623871   (r1's heron: one title occurrence, f = 2.5)
    part(2, 6)   = 4.4 / 3.473913 = 1.266583   (r2's two herons)
    part(1, 5)   = 2.2 / 2.278261 = 0.965649
    part(1, 6)   = 2.2 / 2.473913 = 0.889279
    part(1, 4)   = 2.2 / 2.082609 = 1.056367
    part(2, 5)   = 4.4 / 3.278261 = 1.342175
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

import semsearch
from semsearch.embedders.fake import FakeEmbedder
from semsearch.filters import parse_filter
from semsearch.memory.conversation import ConversationMemory
from semsearch.schema import Schema
from semsearch.stores.keyword_capabilities import ScopedKeyword, refresh_keyword_index

SCHEMA = Schema.from_types({"title": "str", "kind": "str"})
CORPUS = [
    {"id": "r1", "title": "Heron", "text": "Heron hunts fish", "kind": "bird"},
    {"id": "r2", "text": "A heron and a heron nest", "kind": "bird"},
    {"id": "r3", "text": "Sparrows nest in reeds", "kind": "song"},
    {"id": "r4", "text": "Reeds by the river bank", "kind": "place"},
    {"id": "r5", "text": "The bank of the river", "kind": "place"},
]
IDF1, IDF2 = 1.386294, 0.875469
#: query -> [(record, score)] best first, from the parts above.
EXPECTED = {
    # idf(2) * part: r1 first only thanks to the title weight (with f = 1 it would score
    # part(1, 3) = 2.2 / 1.886957 = 1.165899 < r2's 1.266583)
    "heron": [("r1", IDF2 * 1.623871), ("r2", IDF2 * 1.266583)],
    # "the" is a stop word: left out, the same scores
    "the heron": [("r1", IDF2 * 1.623871), ("r2", IDF2 * 1.266583)],
    # a query of stop words only keeps them: "the" in r4 once, in r5 twice
    "the": [("r5", IDF2 * 1.342175), ("r4", IDF2 * 0.965649)],
    # two words, equal scores: ties by record id
    "river bank": [("r4", 2 * IDF2 * 0.965649), ("r5", 2 * IDF2 * 0.965649)],
    # a hyphenated piece adds the phrase "river bank" (n = 1, only r4 holds it in order)
    "river-bank": [("r4", (IDF1 + 2 * IDF2) * 0.965649), ("r5", 2 * IDF2 * 0.965649)],
    # "heron" twice in the query: weight sqrt(2)
    "heron heron nest": [
        ("r2", IDF2 * (2**0.5 * 1.266583 + 0.889279)),
        ("r1", IDF2 * 2**0.5 * 1.623871),
        ("r3", IDF2 * 1.056367),
    ],
}


@pytest.fixture(params=["milvus", "sqlite"])
def coll(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[semsearch.Collection]:
    location = (
        f"milvus-lite://{tmp_path / 'hand.db'}"
        if request.param == "milvus"
        else str(tmp_path / "hand.embed.db")
    )
    with semsearch.connect(location) as db:
        c = db.collection("hand", schema=SCHEMA, embedder=FakeEmbedder(8))
        c.upsert(CORPUS)
        yield c


def _scores(result: semsearch.SearchResult) -> list[tuple[str, float]]:
    return [(h.id, h.score) for h in result.hits]


@pytest.mark.parametrize("query", list(EXPECTED))
def test_scores_are_bm25_worked_out_by_hand_fake_vectors(
    coll: semsearch.Collection, query: str
) -> None:
    found = _scores(coll.search(query, mode="keyword", min_score=None))
    assert [i for i, _ in found] == [i for i, _ in EXPECTED[query]]
    assert [s for _, s in found] == pytest.approx([s for _, s in EXPECTED[query]], rel=1e-5)


def test_keyword_evidence_and_coverage_fake_vectors(coll: semsearch.Collection) -> None:
    hits = coll.store.keyword_search(coll.name, "heron reeds", 10, None)
    # both clauses meaningful (n = 2 <= N / 2); reference = idf(heron) + idf(reed) = 2 idf(2);
    # evidence = sum idf * part / reference, coverage = share of the reference held
    expected = {"r1": 1.623871 / 2, "r2": 1.266583 / 2, "r3": 1.056367 / 2, "r4": 0.965649 / 2}
    assert {h.record_id: h.evidence for h in hits} == pytest.approx(expected, rel=1e-5)
    assert {h.record_id: h.coverage for h in hits} == pytest.approx(dict.fromkeys(expected, 0.5))


def test_a_filter_applies_before_ranking_with_the_whole_collections_statistics_fake_vectors(
    coll: semsearch.Collection,
) -> None:
    # only r2 is a bird holding "nest": N, n and avgdl stay the collection's
    found = coll.search("nest", mode="keyword", where={"kind": "bird"}, min_score=None)
    assert found.ids == ["r2"]
    assert found.hits[0].score == pytest.approx(IDF2 * 0.889279, rel=1e-5)
    # min(limit, matches): a filter of 2 matching records and a limit of 10 gives both
    places = coll.search("river", mode="keyword", where={"kind": "place"}, limit=10)
    assert places.ids == ["r4", "r5"]
    # and a limit below the matches gives the best
    assert coll.search("river", mode="keyword", where={"kind": "place"}, limit=1).ids == ["r4"]


def test_scoped_statistics_count_inside_the_filter_only_fake_vectors(
    coll: semsearch.Collection,
) -> None:
    # within kind = bird: N = 2, n(heron) = 2, avgdl = (3 + 6) / 2 = 4.5; idf = ln 1.2;
    # norm(3) = 1.2 * (0.25 + 0.75 * 3 / 4.5) = 0.9, norm(6) = 1.2 * 1.25 = 1.5
    where = parse_filter({"kind": "bird"}, SCHEMA)
    refresh_keyword_index(coll.store, coll.name)  # SQLite: its sidecar answers scoped queries
    store = coll.store
    assert isinstance(store, ScopedKeyword)
    hits = store.keyword_search_scoped(coll.name, "heron", 10, where)
    assert hits is not None
    assert [h.record_id for h in hits] == ["r1", "r2"]
    assert [h.score for h in hits] == pytest.approx(
        [0.182322 * 5.5 / 3.4, 0.182322 * 4.4 / 3.5], rel=1e-5
    )


def test_the_best_chunk_is_shown_and_each_record_comes_once_fake_vectors(tmp_path: Path) -> None:
    # FakeEmbedder(8)'s small window cuts the long record into several chunks; only the last
    # one holds "zebra"
    long = " ".join(f"filler{i} words here" for i in range(60)) + " a zebra at the end"
    with semsearch.connect(f"milvus-lite://{tmp_path / 'chunks.db'}") as db:
        c = db.collection("c", schema=SCHEMA, embedder=FakeEmbedder(8))
        c.upsert([{"id": "long", "text": long}, {"id": "short", "text": "zebra stripes"}])
        assert c.stats().chunks > 2
        result = c.search("zebra", mode="keyword", min_score=None)
        assert sorted(result.ids) == ["long", "short"]
        shown = {h.id: h.chunk.text for h in result.hits}
        assert "zebra" in shown["long"] and shown["long"] != long


def test_eating_does_not_find_weather_fake_vectors(tmp_path: Path) -> None:
    """Issue 46 item 4: the stem of "eating", "eat", is inside "weather"; the substring scan
    looks for the piece as typed (and casefolded), as SQLite's does."""
    with semsearch.connect(f"milvus-lite://{tmp_path / 'eat.db'}") as db:
        c = db.collection("notes", schema=SCHEMA, embedder=FakeEmbedder(8))
        c.upsert([{"id": "w", "text": "The weather is nice today"}])
        assert c.search("eating", mode="keyword", min_score=None).hits == []
        c.upsert([{"id": "b", "text": "BLAZERS and Eating apples"}])
        # a word part is found as a casefolded substring; a stem by the word index
        assert c.search("blaz", mode="keyword", min_score=None).ids == ["b"]
        assert c.search("eating", mode="keyword", min_score=None).ids == ["b"]


def test_eating_does_not_find_weather_in_conversation_memory_fake_vectors(tmp_path: Path) -> None:
    memory = ConversationMemory(
        f"milvus-lite://{tmp_path / 'memory.db'}", embedder=FakeEmbedder(16), background=False
    )
    try:
        memory.add_message("u", "c", "user", "The weather is nice today")
        assert memory.search("u", "eating", mode="keyword", min_score=None) == []
        assert [h.message.content for h in memory.search("u", "weather", mode="keyword")] == [
            "The weather is nice today"
        ]
    finally:
        memory.close()
