"""Stop words, query weights and the default keyword floor behave the same on every store.

Plumbing with the fake embedder (its vectors carry no meaning, so only keyword mode and the
keyword side of the floor are asserted here; the semantic side is tested with the real model
in tests/integration/test_trust_real_model.py). Expected hits are worked out by hand from the
rule in semsearch/keyword_query.py: stop words leave the query unless it has nothing else, and
the default floor keeps a hit only when it holds a meaningful word (not a stop word, held by at
most half of the records).
"""

from __future__ import annotations

import pytest

from semsearch.embedders.fake import FakeEmbedder
from tests.contract.conftest import StoreUnderTest

NOTES = {
    "refund.md": "How do I get a refund? How do I ask? How do I know it worked?",
    "links.md": "Linking notes: type two brackets and the other note's name to make a link.",
    "tomato.md": "Water the tomatoes every morning and pinch the side shoots.",
    "hamlet.md": "To be or not to be, that is the question.",
    "tea.md": "The kettle boils water for tea in the morning.",
    "china.md": "我喜欢机器学习 and the morning tea",
}


@pytest.fixture
def notes(store: StoreUnderTest):
    db = store.connect()
    coll = db.collection("notes", embedder=FakeEmbedder(16))
    coll.upsert([{"id": i, "text": t} for i, t in NOTES.items()])
    yield coll
    db.close()


def test_question_words_do_not_decide_the_ranking(notes) -> None:
    # how, do, I, a, to are stop words: "make", "link", "another", "note" rank; only links.md
    # holds any of them, so the refund page full of "how do I" is not returned at all
    found = notes.search("how do I make a link to another note", mode="keyword")
    assert found.ids == ["links.md"]


def test_a_query_of_stop_words_only_still_finds_what_it_says(notes) -> None:
    assert notes.search("to be or not to be", mode="keyword").ids[0] == "hamlet.md"


def test_stop_words_mixed_with_rare_words_rank_by_the_rare_ones(notes) -> None:
    # "the" is in 3 notes and a stop word; "kettle" only in tea.md
    assert notes.search("the kettle", mode="keyword").ids == ["tea.md"]


def test_cjk_text_is_found_by_the_substring_scan(notes) -> None:
    assert notes.search("机器", mode="keyword").ids == ["china.md"]


def test_the_floor_drops_hits_that_hold_only_common_words(notes) -> None:
    # "morning" is in 3 of 6 notes (at most half: meaningful); "water" in 2; "pizza" in none
    assert set(notes.search("pizza morning", mode="keyword").ids) == {
        "tomato.md", "tea.md", "china.md",
    }  # fmt: skip
    # with a seventh note holding "morning", it is in 4 of 7: no longer meaningful, and a
    # query whose only other word matches nothing keeps every match (nothing is meaningful)
    notes.upsert([{"id": "alarm.md", "text": "the alarm rings every morning"}])
    assert len(notes.search("pizza morning", mode="keyword").ids) == 4
    # with "water" beside it, only the records holding "water" pass the floor
    assert set(notes.search("water morning", mode="keyword").ids) == {"tomato.md", "tea.md"}
    everything = notes.search("water morning", mode="keyword", min_score=None)
    assert set(everything.ids) == {"tomato.md", "tea.md", "china.md", "alarm.md"}


def test_a_collection_without_stop_words_ranks_them(store: StoreUnderTest) -> None:
    with store.connect() as db:
        coll = db.collection("plain", embedder=FakeEmbedder(16), keyword_stopwords="none")
        coll.upsert([{"id": i, "text": t} for i, t in NOTES.items()])
        # "how do I" now counts: the refund page says it three times
        found = coll.search("how do I make a link", mode="keyword", min_score=None)
        assert found.ids[0] == "refund.md"


def test_no_match_at_all_is_empty_without_a_floor_note(notes) -> None:
    # the floor removed nothing, so there is nothing to explain (a floor never empties keyword
    # mode: when no meaningful word is held by any record, every match counts)
    empty = notes.search("zebra", mode="keyword")
    assert empty.hits == [] and not empty.notes
