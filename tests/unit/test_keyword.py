"""Keyword search on a real SQLite file: every query shape from issue 3, hand-chosen expected ids.

The fake embedder only does the plumbing (chunking, vectors nobody reads here); the keyword
index and its BM25 are SQLite's own FTS5.
"""

from __future__ import annotations

import pytest

import semsearch
from semsearch.schema import Field, Schema
from semsearch.stores.sqlite.sql import fts_query, trigram_query

DOCS = {
    "adr": "ADR-0042 records the decision to keep one SQLite file per vault.",
    "adr-apart": "The ADR index lists decision 0042 among others.",
    "sota": "A state-of-the-art method for ranking passages.",
    "art": "The state museum shows modern art.",
    "cpp": "Templates in C++ are resolved at compile time.",
    "dont": "Why you don't need a server for search.",
    "near": "The bakery is near the station.",
    "logic": "Boolean logic: true AND false OR maybe.",
    "quote": 'She wrote "hello world" on the board.',
    "cafe": "Meet me at the café on Monday.",
    "twin-b": "Identical twin sentence.",
    "twin-a": "Identical twin sentence.",
}
SCHEMA = Schema((Field("kind", "str"),))


@pytest.fixture
def coll(db: semsearch.Database, fake_embedder) -> semsearch.Collection:
    c = db.collection("kw", schema=SCHEMA, embedder=fake_embedder)
    kind = {i: ("twin" if i.startswith("twin") else "doc") for i in DOCS}
    c.upsert([{"id": i, "text": t, "kind": kind[i]} for i, t in DOCS.items()])
    return c


def kw(coll: semsearch.Collection, query: str, **kwargs) -> list[str]:
    result = coll.search(query, mode="keyword", limit=20, **kwargs)
    scores = [h.score for h in result]
    assert all(s > 0 for s in scores), scores  # negated bm25(): positive, higher is better
    assert scores == sorted(scores, reverse=True)
    return result.ids


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("C++", ["cpp"]),
        ("don't", ["dont"]),
        ("NEAR", ["near"]),
        ("AND", ["logic"]),
        ("OR", ["logic"]),
        ("true AND false", ["logic"]),
        ('"hello world"', ["quote"]),
        ('"hello', ["quote"]),
        ("decisions", ["adr", "adr-apart"]),  # porter: decisions -> decis <- decision
        ("ranked", ["sota"]),  # porter: ranked, ranking -> rank
        ("cafe", ["cafe"]),  # diacritics removed: café == cafe
    ],
)
def test_query_shape_finds_the_documents_with_those_words(coll, query, expected) -> None:
    assert sorted(kw(coll, query)) == sorted(expected)


def test_hyphenated_identifier_ranks_the_exact_identifier_first(coll) -> None:
    ids = kw(coll, "ADR-0042")
    assert ids == ["adr", "adr-apart"]  # both hold "adr" and "0042"; only one as ADR-0042


def test_hyphenated_phrase_ranks_the_phrase_first(coll) -> None:
    ids = kw(coll, "state-of-the-art")
    assert ids[:2] == ["sota", "art"]  # art has state, the, art apart; others only "the"


@pytest.mark.parametrize("query", ['"', "''", "++", "-", "*", "( )", '" "'])
def test_text_without_words_returns_nothing_and_never_raises(coll, query) -> None:
    assert kw(coll, query) == []


@pytest.mark.parametrize(
    "query", ["title:foo", "(bar", "baz*", "^qux", "NOT", "a NEAR/2 b", "x AND", "OR OR", "-y"]
)
def test_fts5_syntax_in_user_text_never_raises(coll, query) -> None:
    kw(coll, query)


def test_stop_word_only_query_finds_documents_with_those_words(coll) -> None:
    with_the_or_of = {"adr", "adr-apart", "sota", "art", "near", "quote", "cafe"}
    assert set(kw(coll, "the of")) == with_the_or_of


def test_equal_scores_break_ties_by_id(coll) -> None:
    result = coll.search("identical twin", mode="keyword")
    assert result.ids == ["twin-a", "twin-b"]
    assert result.hits[0].score == result.hits[1].score


def test_filter_applies_before_ranking_with_the_same_scores(coll) -> None:
    plain = coll.search("ADR-0042 twin", mode="keyword", limit=20)
    docs = coll.search("ADR-0042 twin", mode="keyword", limit=20, where={"kind": "doc"})
    assert docs.ids == ["adr", "adr-apart"]
    assert set(plain.ids) == {"adr", "adr-apart", "twin-a", "twin-b"}
    by_id = {h.id: h.score for h in plain}
    assert all(by_id[h.id] == pytest.approx(h.score) for h in docs)


def test_fts_query_quotes_every_token() -> None:
    assert fts_query("ADR-0042 C++") == '"adr 0042" OR "adr" OR "0042" OR "c"'
    assert fts_query('say "NEAR" AND') == '"say" OR "near" OR "and"'
    assert fts_query('" ++ -') is None


def test_trigram_query_splits_long_and_short_pieces() -> None:
    assert trigram_query("机器学习 東京 「日本の」") == ('"机器学习" OR "日本の"', ["東京"])
    assert trigram_query('a"b"c') == ('"a""b""c"', [])
    assert trigram_query('" 。') == (None, [])


# -- Chinese, Japanese, Korean: the trigram tokenizer ------------------------------------------

CJK = {
    "zh": "我喜欢机器学习和自然语言处理",
    "ja": "東京は日本の首都です",
    "ko": "한국어 자연어 처리를 배웁니다",
    "en": "Machine learning on a small laptop",
}


@pytest.fixture
def cjk(db: semsearch.Database, fake_embedder) -> semsearch.Collection:
    c = db.collection("cjk", embedder=fake_embedder, keyword_tokenizer="trigram")
    c.upsert([{"id": i, "text": t} for i, t in CJK.items()])
    return c


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("机器", ["zh"]),  # 2 characters: substring scan
        ("机器学", ["zh"]),  # 3 characters: trigram index
        ("语言", ["zh"]),
        ("東京", ["ja"]),
        ("日本の", ["ja"]),
        ("首都", ["ja"]),
        ("자연", ["ko"]),
        ("자연어", ["ko"]),
        ("learning", ["en"]),
        ("LAPTOP", ["en"]),
        ("机器学习 AI", ["zh"]),  # a 3+ piece present: the index answers, "AI" is not scanned
        ("東京 首都", ["ja"]),
        ("北京", []),
    ],
)
def test_cjk_substrings_of_two_or_three_characters(cjk, query, expected) -> None:
    assert kw(cjk, query) == expected


def test_short_substring_scores_count_occurrences(db, fake_embedder) -> None:
    c = db.collection("cjk2", embedder=fake_embedder, keyword_tokenizer="trigram")
    c.upsert([{"id": "once", "text": "東京に行く"}, {"id": "twice", "text": "東京と東京駅"}])
    result = c.search("東京", mode="keyword")
    # keyword_text.scan_score: 3 whole word (CJK beside) + .5 title line + .25 opens with it,
    # + .2 * n / (n + 1) for n occurrences: twice 3.75 + .4 / 3, once 3.75 + .1
    expected = [("twice", pytest.approx(3.75 + 0.4 / 3)), ("once", pytest.approx(3.85))]
    assert [(h.id, h.score) for h in result] == expected


def test_porter_collections_find_cjk_words_inside_runs(db, fake_embedder) -> None:
    c = db.collection("plain", embedder=fake_embedder)
    c.upsert([{"id": i, "text": t} for i, t in CJK.items()])
    # the porter index holds the whole run as one token; a CJK query is a substring scan
    assert kw(c, "机器") == ["zh"]
    assert kw(c, "我喜欢机器学习和自然语言处理") == ["zh"]


def test_tokenizer_is_kept_and_cannot_change(db, fake_embedder) -> None:
    from semsearch.schema import SchemaConflict

    db.collection("t", embedder=fake_embedder, keyword_tokenizer="trigram")
    again = db.collection("t", embedder=fake_embedder)
    assert again.info.options == {"keyword_tokenizer": "trigram"}
    with pytest.raises(SchemaConflict) as info:
        db.collection("t", embedder=fake_embedder, keyword_tokenizer="porter")
    assert info.value.hint


def test_unknown_tokenizer_is_refused(db, fake_embedder) -> None:
    with pytest.raises(semsearch.InvalidQuery) as info:
        db.collection("u", embedder=fake_embedder, keyword_tokenizer="ngram")
    assert "trigram" in (info.value.hint or "")
    assert db.collections() == []
