"""Keyword search finds Chinese, Japanese and Korean words, and word parts, by default (every
backend, default ``porter`` tokenizer, fake embedder).

The mixed corpus holds each query word inside running text with no spaces around it, as people
write these languages, next to English notes whose BM25 ranking must not change. The expected
ids are read off the texts below by eye: each query word occurs in exactly the records listed.
"""

from __future__ import annotations

import pytest

from semsearch.embedders.fake import FakeEmbedder

RECORDS = [
    {"id": "zh-library", "text": "我今天下午在图书馆看书，图书馆很安静。"},  # noqa: RUF001
    {"id": "zh-weather", "text": "明天的天气预报说会下雨。"},
    {"id": "zh-audit", "text": "本季度ITGC审计已经完成。"},
    {"id": "ja-tokyo", "text": "来週東京で会議があります。"},
    {"id": "ko-meeting", "text": "내일 오전에 회의가 있습니다."},
    {"id": "en-blazer", "text": "A navy school blazer was left in the gym."},
    {"id": "en-bikes", "text": "Bikes must be locked in the racks, not left in the gym."},
    {"id": "de-sign", "text": "ÜBERWEG GESPERRT: bitte die Brücke nehmen."},
]

CASES = [
    ("图书馆", ["zh-library"]),
    ("天气", ["zh-weather"]),
    ("東京", ["ja-tokyo"]),
    ("회의", ["ko-meeting"]),
    ("itgc", ["zh-audit"]),  # ASCII glued to Chinese: no word boundary in the text
    ("blaz", ["en-blazer"]),  # a word's beginning, as typed
    ("über", ["de-sign"]),  # a word's beginning with a non-ASCII letter, upper case in the text
]


@pytest.fixture(scope="module")
def coll(module_store):
    with module_store.connect() as db:
        coll = db.collection("mixed", embedder=FakeEmbedder(16))
        coll.upsert(RECORDS)
        yield coll


@pytest.mark.parametrize(("query", "expected"), CASES)
def test_default_keyword_search_finds_cjk_words_and_word_parts_fake_embedder(
    coll, query, expected
) -> None:
    assert coll.search(query, mode="keyword", limit=5).ids == expected


def test_english_words_still_rank_by_the_word_index_fake_embedder(coll) -> None:
    result = coll.search("blazer gym", mode="keyword", limit=5)
    assert result.ids[0] == "en-blazer" and set(result.ids) == {"en-blazer", "en-bikes"}
    assert coll.search("locked", mode="keyword", limit=5).ids == ["en-bikes"]  # stem of "lock"
    assert coll.search("zzzz", mode="keyword", limit=5).ids == []
