"""The keyword terms fed to Milvus' BM25 function: accent-folded, lowercased Porter stems."""

from __future__ import annotations

from semsearch.stores.milvus_terms import keyword_terms


def test_words_are_stemmed_with_porter() -> None:
    # Porter (1980): "healing" and "heals" -> "heal"; "ponies" -> "poni"; "caresses" -> "caress".
    assert keyword_terms("healing heals ponies caresses") == "heal heal poni caress"


def test_accents_case_and_punctuation_fold_away() -> None:
    assert keyword_terms("Café-CRÈME, naïve!") == "cafe creme naiv"


def test_text_without_words_has_no_terms() -> None:
    assert keyword_terms('" ( ) * -- ++') == ""


def test_query_syntax_is_plain_text() -> None:
    assert keyword_terms("flame OR -flame* (flame)") == "flame or flame flame"
