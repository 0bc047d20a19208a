"""semsearch's keyword BM25 on real SQLite files, against a BM25 written out in this file.

The reference is Robertson and Zaragoza's BM25 with Lucene's IDF (and logarithmic length above the average), ``log(1 + (N - n + 0.5) /
(n + 0.5))``, k1 = 1.2, b = 0.75, one column, each query word counted once per record that
holds it and weighted by the square root of how often the query says it; English stop words
are left out of the query unless it has nothing else. Every word used here is one token that the
porter stemmer maps alike in query and text, so splitting on spaces is the tokenisation. Both
ways the store ranks are checked: the keyword sidecar (posting arrays) and FTS5 asked one clause
at a time (the path that answers while the sidecar rebuilds). The fake embedder only chunks.
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest

import semsearch

FILLER = [
    "alpha",
    "beta",
    "gamma",
    "delta",
    "epsilon",
    "zeta",
    "eta",
    "theta",
    "iota",
    "kappa",
    "lambda",
    "mu",
]


def rel(ratio: float) -> float:
    """semsearch's relative length: |d| / avgdl up to 1.5 times the average, then growing
    with the logarithm: 1.5 * (1 + ln(ratio / 1.5))."""
    return ratio if ratio <= 1.5 else 1.5 * (1 + math.log(ratio / 1.5))


def reference(docs: dict[str, str], weights: dict[str, float]) -> list[tuple[str, float]]:
    """[(id, BM25)] best first, ties by id, for query words with their weights."""
    tokens = {i: t.lower().split() for i, t in docs.items()}
    avgdl = sum(len(t) for t in tokens.values()) / len(tokens)
    scores: dict[str, float] = {}
    for doc_id, words in tokens.items():
        total = 0.0
        for word, weight in weights.items():
            n = sum(1 for t in tokens.values() if word in t)
            f = words.count(word)
            if not f:
                continue
            idf = math.log(1 + (len(tokens) - n + 0.5) / (n + 0.5))
            total += weight * idf * f * 2.2 / (f + 1.2 * (0.25 + 0.75 * rel(len(words) / avgdl)))
        if total > 0:
            scores[doc_id] = total
    return sorted(scores.items(), key=lambda kv: (-kv[1], kv[0]))


def catalogue() -> dict[str, str]:
    """40 records: ``phone``/``for``/``the`` in 30, ``case`` in 24, ``holder`` in 6, ``car`` in
    10; record i has i % 12 filler words, so lengths differ."""
    records = {}
    for i in range(40):
        words = FILLER[: i % 12]
        if i % 4 != 0:
            words = [*words, "phone", "for", "the"]
        if i < 24:
            words.append("case")
        if i % 7 == 0:
            words.append("holder")
        if i % 4 == 1:
            words.append("car")
        records[f"r{i:02d}"] = " ".join(words) or "empty"
    return records


def both_paths(coll: semsearch.Collection, text: str, k: int) -> list[list[tuple[str, float]]]:
    """The store's ranking from the sidecar, then from FTS5 alone."""
    keywords = coll.store._keywords  # type: ignore[attr-defined]
    out = []
    for use_sidecar in (True, False):
        keywords.use_sidecar = use_sidecar
        out.append(
            [(h.record_id, h.score) for h in coll.store.keyword_search(coll.name, text, k, None)]
        )
    keywords.use_sidecar = True
    return out


def assert_ranked(got: list[tuple[str, float]], expected: list[tuple[str, float]]) -> None:
    assert [i for i, _ in got] == [i for i, _ in expected]
    assert [s for _, s in got] == pytest.approx([s for _, s in expected], rel=1e-9)


@pytest.fixture
def products(db: semsearch.Database, fake_embedder) -> semsearch.Collection:
    coll = db.collection("products", embedder=fake_embedder)
    coll.upsert([{"id": i, "text": t} for i, t in catalogue().items()])
    return coll


def test_scores_are_bm25_with_lucene_idf_stop_words_out_and_repeats_weighted(products) -> None:
    # "the" and "for" are stop words; "car" is said twice, so it weighs sqrt(2)
    expected = reference(catalogue(), {"phone": 1.0, "holder": 1.0, "car": math.sqrt(2)})
    for got in both_paths(products, "the phone holder for the car car", 12):
        assert_ranked(got, expected[:12])


def test_a_common_word_still_counts_a_little(products) -> None:
    # phone is in 30 of 40 records: Lucene's IDF is log(1 + 10.5 / 30.5) = 0.296, not 0 (FTS5's
    # own IDF is negative there and floored at 1e-6), so among records that hold "case", those
    # that also hold "phone" rank first
    expected = reference(catalogue(), {"phone": 1.0, "case": 1.0})
    assert math.isclose(math.log(1 + 10.5 / 30.5), 0.2958, abs_tol=1e-4)
    for got in both_paths(products, "phone case", 40):
        assert_ranked(got, expected)


def test_a_query_of_stop_words_only_keeps_them(db, fake_embedder) -> None:
    docs = {"hamlet": "to be or not to be that is the question", "other": "plain words here"}
    coll = db.collection("plays", embedder=fake_embedder)
    coll.upsert([{"id": i, "text": t} for i, t in docs.items()])
    # every word of the query is a stop word, so all of them count: to and be twice (sqrt 2)
    weights = {"to": math.sqrt(2), "be": math.sqrt(2), "or": 1.0, "not": 1.0}
    for got in both_paths(coll, "to be or not to be", 10):
        assert_ranked(got, reference(docs, weights))
    assert [h.id for h in coll.search("to be or not to be", mode="keyword")] == ["hamlet"]


def test_a_write_from_another_handle_moves_the_statistics(db, fake_embedder, db_path: Path) -> None:
    docs = {f"a{i}": f"apple pie number {i}" for i in range(6)}
    docs |= {"c1": "car", "c2": "car wash bay", "c3": "apple car park lot zone", "x1": "plain"}
    coll = db.collection("cars", embedder=fake_embedder)
    coll.upsert([{"id": i, "text": t} for i, t in docs.items()])
    for got in both_paths(coll, "apple car", 3):
        assert_ranked(got, reference(docs, {"apple": 1.0, "car": 1.0})[:3])
    more = {f"f{i:02d}": f"filler text {i}" for i in range(20)}
    with semsearch.connect(db_path) as other:
        other.collection("cars", embedder=fake_embedder).upsert(
            [{"id": i, "text": t} for i, t in more.items()]
        )
    # N, n(q) and avgdl are now those of 30 records: the scores a fresh count gives
    expected = reference(docs | more, {"apple": 1.0, "car": 1.0})[:3]
    for got in both_paths(coll, "apple car", 3):
        assert_ranked(got, expected)


def test_a_collection_without_stop_words_scores_every_word(db, fake_embedder) -> None:
    coll = db.collection("plain", embedder=fake_embedder, keyword_stopwords="none")
    coll.upsert([{"id": i, "text": t} for i, t in catalogue().items()])
    weights = {"the": math.sqrt(2), "phone": 1.0, "holder": 1.0, "for": 1.0, "car": 1.0}
    for got in both_paths(coll, "the phone holder for the car", 12):
        assert_ranked(got, reference(catalogue(), weights)[:12])
    # the list is query-side only: switching it back needs no rebuild
    coll = db.collection("plain", keyword_stopwords="english")
    weights = {"phone": 1.0, "holder": 1.0, "car": 1.0}
    for got in both_paths(coll, "the phone holder for the car", 12):
        assert_ranked(got, reference(catalogue(), weights)[:12])


def test_an_unknown_stop_word_list_is_refused(db, fake_embedder) -> None:
    with pytest.raises(semsearch.InvalidQuery, match="unknown keyword stop-word list 'french'"):
        db.collection("plain", embedder=fake_embedder, keyword_stopwords="french")
    assert "plain" not in db.collections()  # nothing was created
