"""The Milvus keyword index kept by a process's writes ranks as one built afresh from the head
rows' ``kw`` column, through updates, deletes and base rebuilds; records whose chunks cut a word
keep their terms by deriving them from the text. Real Milvus Lite, fake 8-d vectors."""

from __future__ import annotations

import hashlib
import random
from pathlib import Path

import pytest

from semsearch.results import Chunk
from semsearch.stores.base import ChunkWrite, RecordWrite
from semsearch.stores.milvus import keyword_index
from semsearch.stores.milvus.keyword_columns import (
    DERIVE,
    RecordKeyword,
    decode,
    encode,
    record_keyword,
)
from semsearch.stores.milvus.store import MilvusStore
from tests.milvus.helpers import fake8_store, one_chunk_record

WORDS = ["heron", "reed", "river", "bank", "nest", "fish", "sparrow", "song", "marsh", "tide"]
QUERIES = ["heron", "river bank", "river-bank", "nest fish heron heron", "stone marsh", "the"]


def _ranking(store: MilvusStore, name: str, query: str) -> list[tuple[str, float, float | None]]:
    return [
        (h.record_id, round(h.score, 9), None if h.coverage is None else round(h.coverage, 9))
        for h in store.keyword_search(name, query, 50, None)
    ]


def test_the_index_kept_by_writes_ranks_as_a_fresh_build_fake_vectors(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(keyword_index, "FOLD_AFTER", 7)  # rebuild the base often
    rng = random.Random(7)

    def text() -> str:
        return " ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 12)))

    with fake8_store(tmp_path, "kw") as store:
        for step in range(6):
            batch = [one_chunk_record(f"r{rng.randint(0, 30)}", text()) for _ in range(8)]
            store.write_records("kw", list({r.id: r for r in batch}.values()))
            store.delete_records("kw", [f"r{rng.randint(0, 30)}" for _ in range(2)])
            if step % 2:  # searches between writes: a delta, then a folded base
                _ranking(store, "kw", "heron")
        kept = {q: _ranking(store, "kw", q) for q in QUERIES}
        assert any(kept.values())
    store = MilvusStore(f"milvus-lite://{tmp_path / 'kw.db'}")  # a new process state: built
    try:
        assert {q: _ranking(store, "kw", q) for q in QUERIES} == kept
    finally:
        store.close()


def _cut_in_a_word() -> RecordWrite:
    """ "alphabet soup" in two chunks that touch inside "alphabet" (as a chunker cutting a long
    sentence on token boundaries may): its terms are not its chunks' terms joined."""
    text = "alphabet soup"
    chunks = [
        ChunkWrite(Chunk("alpha", 0, 0, 5), "alpha", hashlib.sha256(b"alpha").hexdigest()),
        ChunkWrite(Chunk("bet soup", 1, 5, 13), "bet soup", hashlib.sha256(b"bs").hexdigest()),
    ]
    return RecordWrite("cut", {}, {}, text, hashlib.sha256(text.encode()).hexdigest(), chunks)


def test_terms_of_chunks_cut_inside_a_word_come_from_the_text_fake_vectors(
    tmp_path: Path,
) -> None:
    keyword = record_keyword(
        {}, "alphabet soup", [(1, Chunk("alpha", 0, 0, 5)), (2, Chunk("bet soup", 1, 5, 13))]
    )
    assert (keyword.terms, keyword.aligned) == (("alphabet", "soup"), False)
    assert keyword.chunk_terms == (("alpha",), ("bet", "soup"))
    assert encode(keyword) == DERIVE and decode(DERIVE) is None
    with fake8_store(tmp_path, "cut") as store:
        store.write_records("cut", [_cut_in_a_word(), one_chunk_record("other", "soup of the day")])
        assert [h.record_id for h in store.keyword_search("cut", "alphabet", 5, None)] == ["cut"]
        # no chunk of "cut" holds "alphabet" on its own: no best chunk, its first one is shown
        assert store.keyword_chunks("cut", "alphabet", ["cut"]) == {}
        kept = _ranking(store, "cut", "alphabet soup")
    store = MilvusStore(f"milvus-lite://{tmp_path / 'cut.db'}")  # built: "!" derived from text
    try:
        assert _ranking(store, "cut", "alphabet soup") == kept
        # "alpha" is no term of any record: the substring scan finds it in the text, as SQLite
        scanned = store.keyword_search("cut", "alpha", 5, None)
        # keyword_text.scan_score: whole word of its chunk 3 + title line .5 + opens .25 + .1
        hits = [(h.record_id, h.score, h.provisional) for h in scanned]
        assert hits == [("cut", pytest.approx(3.85), False)]
    finally:
        store.close()


def test_kw_values_round_trip_and_a_title_counts_its_terms() -> None:
    chunks = [(11, Chunk("Heron Book: herons", 0, 0, 18)), (12, Chunk("fish daily", 1, 19, 29))]
    keyword = record_keyword({"title": "Heron Book:"}, "Heron Book: herons fish daily", chunks)
    assert keyword == RecordKeyword(
        ("heron", "book", "heron", "fish", "daili"),
        2,
        (11, 12),
        (("heron", "book", "heron"), ("fish", "daili")),
        True,
    )
    assert decode(encode(keyword)) == keyword
    assert encode(keyword) == "2 11:3 12:2\theron book heron fish daili"
    # a title that ends inside a word ("Her" of "Heron") is no whitespace cut: derived
    inside = record_keyword({"title": "Her"}, "Heron", [(1, Chunk("Heron", 0, 0, 5))])
    assert (inside.terms, inside.title, inside.aligned) == (("her", "on"), 1, False)
    assert decode("not a kw value") is None
