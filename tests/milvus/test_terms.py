"""The keyword terms fed to Milvus' BM25 function: accent-folded, lowercased Porter stems."""

from __future__ import annotations

from semsearch.stores.milvus.terms import keyword_terms


def test_words_are_stemmed_with_porter() -> None:
    # Porter (1980): "healing" and "heals" -> "heal"; "ponies" -> "poni"; "caresses" -> "caress".
    assert keyword_terms("healing heals ponies caresses") == "heal heal poni caress"


def test_accents_case_and_punctuation_fold_away() -> None:
    assert keyword_terms("Café-CRÈME, naïve!") == "cafe creme naiv"


def test_text_without_words_has_no_terms() -> None:
    assert keyword_terms('" ( ) * -- ++') == ""


def test_query_syntax_is_plain_text() -> None:
    assert keyword_terms("flame OR -flame* (flame)") == "flame or flame flame"


def test_numbers_are_kept_as_the_stemmer_would_keep_them() -> None:
    # numbers skip the stemmer; Porter itself leaves a word without letters as it is
    import snowballstemmer

    porter = snowballstemmer.stemmer("porter")
    words = [str(n) for n in range(0, 100_000, 37)] + ["007", "3" * 40, "١٢٣"]
    assert keyword_terms(" ".join(words)) == " ".join(porter.stemWord(w) for w in words)
    assert keyword_terms("level 3 spells, 1st 2024") == "level 3 spell 1st 2024"


def test_ascii_and_folded_spellings_give_the_same_terms() -> None:
    # ASCII text skips the accent folding (a character loop); the folded spelling of the same
    # words must still meet it
    assert keyword_terms("Cafe creme: naive HEALING, 42") == "cafe creme naiv heal 42"
    assert keyword_terms("Café crème: naïve HEALING, 42") == "cafe creme naiv heal 42"
