"""A query longer than the model's window is embedded in windows, not cut (real model).

The query is a ~500-token story about a family reunion with the real question at its very end.
all-MiniLM-L6-v2 reads 254 tokens; before windowing, the query embedded to the vector of its
opening part alone, and the note that answers the question ranked last. The notes are on
unrelated topics, none about the story, and one answers the question.
"""

from __future__ import annotations

import pytest

import semsearch

pytestmark = pytest.mark.slow

NOTES = {
    "passport": "Renewing a passport: fill in the renewal form, attach two new photos and the old "
    "passport, and send it at least six weeks before the passport expires.",
    "sourdough": "Sourdough starter: feed it flour and water every day and keep it warm.",
    "bicycle": "Fixing a flat bicycle tyre: remove the wheel, find the hole and patch the tube.",
    "plants": "Water succulents sparingly; let the soil dry out completely between waterings.",
    "taxes": "The quarterly VAT return is due one month after the end of each quarter.",
}
STORY = (
    "Last summer the whole family gathered for a reunion at my grandmother's cabin by the lake. "
    "My cousins drove up from the coast, my uncle brought his old guitar, and the children spent "
    "every afternoon swimming off the wooden dock while the adults argued about the barbecue. "
    "One evening a storm rolled over the hills and the power went out, so we lit candles and "
    "told stories about the summers we spent there as kids, when the road was still gravel and "
    "the nearest shop was an hour away on foot. "
)
QUESTION = "Anyway, my actual question is this: how do I renew my passport before it expires?"


@pytest.fixture(scope="module")
def notes(tmp_path_factory, minilm):
    with semsearch.connect(tmp_path_factory.mktemp("long") / "n.embed.db") as db:
        coll = db.collection("notes", embedder=minilm)
        coll.upsert([{"id": k, "text": v} for k, v in NOTES.items()])
        yield coll


@pytest.fixture(scope="module")
def long_query(minilm) -> str:
    story = STORY * 5
    text = story + QUESTION
    assert 450 <= len(minilm.token_spans(text)) <= 550, len(minilm.token_spans(text))
    assert len(minilm.token_spans(story)) > minilm.max_tokens  # the question is past the window
    return text


def test_question_at_the_end_of_a_long_query_is_found(notes, long_query, minilm) -> None:
    windows = -(-len(minilm.token_spans(long_query)) // minilm.max_tokens)  # ceil
    assert windows >= 2
    result = notes.search(long_query, limit=5, min_score=None)
    assert result.ids[0] == "passport", result.ids
    assert result.query_windows == windows
    assert any(f"embedded in {windows} windows" in n for n in result.notes)
    # no floor: the story is five windows of six, so the query's vector is mostly the reunion's
    # and no note reaches the model's threshold (the default floor would answer "no confident
    # match"); the question's words and its window still put the answer first
    hybrid = notes.search(long_query, mode="hybrid", limit=5, min_score=None)
    assert hybrid.ids[0] == "passport" and hybrid.query_windows == windows


def test_the_cut_query_alone_reads_only_the_story(long_query, minilm) -> None:
    """Why the test above needs windowing: the model reads only the first window, so the query
    embedded whole is the story's opening, and the question adds nothing to it."""
    from semsearch.long_query import embed_query_windows

    spans = minilm.token_spans(long_query)
    opening = long_query[: spans[minilm.max_tokens - 1][1]]
    whole = minilm.embed_query(long_query)
    assert float(whole @ minilm.embed_query(opening)) > 0.999  # the rest was cut
    passport = minilm.embed_documents([NOTES["passport"]])[0]
    windowed = embed_query_windows(minilm, long_query).vector
    assert float(passport @ windowed) > float(passport @ whole)


def test_a_query_that_fits_is_embedded_once(notes) -> None:
    result = notes.search(QUESTION, limit=1)
    assert result.ids == ["passport"] and result.query_windows == 1 and result.notes == ()
