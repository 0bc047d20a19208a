"""The record terms every store indexes (stores/record_terms.py) are the SQLite store's columns:
its title and body SQL evaluated by SQLite on the same rows, and FTS5's phrase counting worked
out by hand."""

from __future__ import annotations

import json
import sqlite3

import pytest

from semsearch.keyword_query import TITLE_WEIGHT
from semsearch.stores.fts5_tokens import PieceTokenizer
from semsearch.stores.record_terms import phrase_frequency, record_body, record_terms, record_title
from semsearch.stores.sqlite.record_fts import BODY_SQL, TITLE_SQL
from semsearch.stores.sqlite.schema import FTS_TOKENIZER

CASES = [
    ({"title": "Kiwi"}, "Kiwi orchard notes"),
    ({"title": "Kiwi"}, "Kiwi\n\n  orchard notes"),
    ({"title": "Pear"}, "Kiwi orchard notes"),  # the text does not open with it
    ({"name": "Fireball"}, "Fireball A bright streak"),
    ({"title": "", "name": "Fireball"}, "Fireball A bright streak"),
    ({"title": 3}, "3 apples"),  # not a string
    ({}, "no title at all"),
    ({"title": "Kiwi", "name": "Other"}, "Other text"),  # title wins, and is not in the text
]


@pytest.mark.parametrize(("fields", "text"), CASES)
def test_title_and_body_are_the_sqlite_columns(fields: dict, text: str) -> None:
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE TABLE records (fields TEXT, text TEXT)")
    conn.execute("INSERT INTO records VALUES (?, ?)", (json.dumps(fields), text))
    title, body = conn.execute(f"SELECT {TITLE_SQL}, {BODY_SQL} FROM records r").fetchone()
    assert (record_title(fields, text), record_body(fields, text)) == (title, body)


def test_terms_weigh_the_title_and_count_every_token() -> None:
    tok = PieceTokenizer(FTS_TOKENIZER)
    terms = record_terms(tok, "Kiwi harvest", "the kiwi harvest of kiwis")
    # porter: kiwis -> kiwi; title tokens kiwi, harvest; body: the kiwi harvest of kiwi
    assert terms.tf == {
        "kiwi": TITLE_WEIGHT + 2.0,
        "harvest": TITLE_WEIGHT + 1.0,
        "the": 1.0,
        "of": 1.0,
    }
    assert (terms.length, terms.title_length) == (7, 2)
    assert terms.positions["kiwi"] == [0, 3, 6]


def test_a_phrase_counts_inside_one_column_only() -> None:
    tok = PieceTokenizer(FTS_TOKENIZER)
    # "t cell" once in the title, twice in the body; "cell t" across the column edge is no match
    terms = record_terms(tok, "T cell", "cell t cell and T-cell")
    assert phrase_frequency(terms.positions, ("t", "cell"), terms.title_length) == TITLE_WEIGHT + 2
    assert phrase_frequency(terms.positions, ("cell", "t"), terms.title_length) == 1.0
    assert phrase_frequency(terms.positions, ("t", "absent"), terms.title_length) == 0.0


def test_shown_terms_are_the_terms_and_the_cache_stays_bounded(monkeypatch) -> None:
    from semsearch.stores import fts5_tokens

    monkeypatch.setattr(fts5_tokens, "SHOWN_CACHED", 2)
    tokenizer = fts5_tokens.PieceTokenizer(fts5_tokens.PORTER)
    texts = ["Running dogs, running!", "Café au lait", "ADR-0042 says so", "Running dogs, running!"]
    expected = [
        ["run", "dog", "run"], ["cafe", "au", "lait"], ["adr", "0042", "sai", "so"],
        ["run", "dog", "run"],
    ]  # fmt: skip
    assert [tokenizer.shown_terms(t) for t in texts] == expected
    assert len(tokenizer._shown) == 2  # the oldest text was dropped past the bound


def test_shown_counts_tokenize_a_search_s_new_texts_in_one_round(monkeypatch) -> None:
    from semsearch.stores import fts5_tokens

    tokenizer = fts5_tokens.PieceTokenizer(fts5_tokens.PORTER)
    rounds: list[int] = []
    tokenize = tokenizer._tokenize
    monkeypatch.setattr(tokenizer, "_tokenize", lambda batch: (rounds.append(1), tokenize(batch)))
    texts = ["Running dogs, running!", "Café au lait", "Running dogs, running!", "dogs run"]
    found = tokenizer.shown_counts_of(texts)
    assert len(rounds) == 1  # one FTS5 round for the pieces of all three distinct texts
    assert [terms for terms, _ in found] == [
        ["run", "dog", "run"], ["cafe", "au", "lait"], ["run", "dog", "run"], ["dog", "run"],
    ]  # fmt: skip
    assert [bag for _, bag in found] == [
        {"run": 2, "dog": 1}, {"cafe": 1, "au": 1, "lait": 1}, {"run": 2, "dog": 1},
        {"dog": 1, "run": 1},
    ]  # fmt: skip
    assert tokenizer.shown_terms_of(texts[:2]) == [["run", "dog", "run"], ["cafe", "au", "lait"]]
    assert len(rounds) == 1  # kept: nothing tokenized again


def test_best_chunk_from_kept_counts_is_the_hand_worked_bm25_winner() -> None:
    import math

    from semsearch.stores.record_terms import best_chunk, chunk_score

    # N = 10 chunks, "b" in 2 of them, avgdl 2.5; BM25 k1 = 1.2, b = 0.75 (FTS5's)
    chunks = [(7, ["a", "b"]), (9, ["b", "b", "c"])]
    bags = [{"a": 1, "b": 1}, {"b": 2, "c": 1}]
    idf = math.log((10 - 2 + 0.5) / (2 + 0.5))
    one = idf * 1 * 2.2 / (1 + 1.2 * (0.25 + 0.75 * 2 / 2.5))  # 1.0891 idf
    two = idf * 2 * 2.2 / (2 + 1.2 * (0.25 + 0.75 * 3 / 2.5))  # 1.3018 idf: chunk 9 wins
    for counts in (None, bags):
        got = [chunk_score(t, [["b"]], [idf], 2.5, counts[i] if counts else None)
               for i, (_, t) in enumerate(chunks)]  # fmt: skip
        assert got == pytest.approx([one, two], rel=1e-12)
        assert best_chunk(chunks, [["b"]], [2], 10, 2.5, counts) == 9
    # a phrase is counted in the terms, not looked up: "a b" occurs in chunk 7 only
    assert best_chunk(chunks, [["a", "b"]], [1], 10, 2.5, bags) == 7
    assert best_chunk(chunks, [["z"]], [1], 10, 2.5, bags) is None
