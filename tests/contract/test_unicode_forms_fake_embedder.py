"""Keyword search finds a word whatever Unicode normal form it is typed in (every backend).

Text and queries are both put in NFC before they reach a store, so a query typed in decomposed
form (NFD: ``u`` + U+0308 COMBINING DIAERESIS, as macOS file names and PDF copy-paste give)
finds text stored composed, and the other way round. Ids and field values are kept exactly as
given: an NFD id and an NFC id are two records.
"""

from __future__ import annotations

import unicodedata

import pytest

from semsearch.embedders.fake import FakeEmbedder

WORDS = ["Zürich", "crêpe"]


def _nfc(s: str) -> str:
    return unicodedata.normalize("NFC", s)


def _nfd(s: str) -> str:
    return unicodedata.normalize("NFD", s)


@pytest.mark.parametrize("stored, typed", [(_nfc, _nfd), (_nfd, _nfc), (_nfd, _nfd)])
def test_keyword_search_matches_across_normal_forms_fake_embedder(store, stored, typed) -> None:
    assert _nfd("Zürich") != _nfc("Zürich")  # the two forms really differ in code points
    with store.connect() as db:
        coll = db.collection("u", embedder=FakeEmbedder(16))
        coll.upsert(
            [
                {"id": "city", "text": stored("Lunch in Zürich by the lake")},
                {"id": "food", "text": stored("A crêpe with sugar")},
                {"id": "other", "text": "Nothing to see here"},
            ]
        )
        for word, expected in zip(WORDS, ["city", "food"], strict=True):
            for mode in ("keyword", "hybrid"):
                result = coll.search(typed(word), mode=mode, limit=3)
                assert result.ids[:1] == [expected], (mode, word, result.ids)


def test_stored_text_is_nfc_and_ids_are_kept_as_given_fake_embedder(store) -> None:
    with store.connect() as db:
        coll = db.collection("u", embedder=FakeEmbedder(16))
        coll.upsert([{"id": _nfd("Zürich.md"), "text": _nfd("Zürich")}])
        assert coll.get(_nfc("Zürich.md")) == []
        assert [r.id for r in coll.get(_nfd("Zürich.md"))] == [_nfd("Zürich.md")]
        hit = coll.search(_nfd("Zürich"), mode="keyword", limit=1)[0]
        assert hit.chunk is not None and hit.chunk.text == _nfc("Zürich")
