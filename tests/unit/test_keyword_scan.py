"""The substring scan's pieces, score and fallback rule (semsearch/keyword_text.py,
semsearch/stores/query_rules.py), as pure functions. Expected values are worked out by hand from
the rule in :func:`semsearch.keyword_text.scan_score`'s docstring."""

from __future__ import annotations

import pytest

from semsearch.keyword_text import scan_score, substring_pieces
from semsearch.stores.base import ScoredChunk
from semsearch.stores.query_rules import (
    PROBE_ROWS,
    keyword_or_substring,
    partial_last_word,
    scanned,
)

STOP = frozenset({"the", "of", "and"})


@pytest.mark.parametrize(
    ("query", "pieces"),
    [
        ("gen-itgc", ["gen-itgc", "gen", "itgc"]),  # whole, then its parts
        ("node.js", ["node.js", "node"]),  # "js" is under 3 characters
        ("state-of-the-art", ["state-of-the-art", "state", "art"]),  # stop-word parts left out
        ("blaz, firebal.", ["blaz", "firebal"]),  # sentence punctuation is not part of a piece
        ("a/b c/d", []),  # other punctuation inside: left out, as before
        ("Gobl the", ["gobl"]),  # stop words left out ...
        ("the and", ["the", "and"]),  # ... unless every piece is one
        ("重跑gen-itgc后", ["重跑gen-itgc后", "重跑gen", "itgc后"]),
    ],
)
def test_substring_pieces_keep_joined_pieces_whole_and_as_parts(query, pieces) -> None:
    assert substring_pieces(query, STOP) == pieces


@pytest.mark.parametrize(
    ("text", "first", "expected"),
    [
        ("Goblin\n\nSmall humanoids.", True, 2 + 0.5 + 0.25 + 0.1),  # title, word start, opens
        ("Hobgoblin\n\nWarlike.", True, 1 + 0.5 + 0.1),  # inside a word, in the title
        ("Worg\n\nRidden by goblins.", True, 2 + 0.1),  # word start in the body
        ("ridden by goblins", False, 2 + 0.1),  # not a first chunk: no title line
        ("gobl", False, 3 + 0.1),  # a whole word
        ("Worg\n\nA wolf.", True, 0.0),  # not held
    ],
)
def test_scan_score_ranks_whole_word_over_word_start_over_inside(text, first, expected) -> None:
    score, held = scan_score(text, ["gobl"], first)
    assert score == pytest.approx(expected) and held == (expected > 0)


def test_scan_score_sees_word_edges_beside_cjk_and_counts_pieces_held() -> None:
    # gen-itgc, gen and itgc are whole words here (CJK beside is an edge); one line: title
    score, held = scan_score("重跑gen-itgc后验证通过", ["gen-itgc", "gen", "itgc"])
    assert (score, held) == (pytest.approx(3 * 3.5 + 0.2 * 3 / 4), 3)


def test_scanned_ranks_best_first_with_the_share_of_pieces_as_coverage() -> None:
    rows = [
        (1, "umbrella", 0, "Umbrella\n\nA black umbrella."),
        (2, "blazer", 0, "School blazer\n\nA black wool blazer."),
        (3, "soup", 0, "Soup\n\nHot."),
    ]
    hits = scanned(rows, ["black", "blaz"], 10)
    assert [(h.record_id, h.coverage, h.evidence) for h in hits] == [
        ("blazer", 1.0, 1.0),  # 3 + 2.5 + .15
        ("umbrella", 0.5, 0.5),  # 3 + .1
    ]
    assert hits[0].score == pytest.approx(5.65) and hits[1].score == pytest.approx(3.1)


def _hit(record: str, coverage: float | None) -> ScoredChunk:
    return ScoredChunk(1, record, 1.0, False, coverage, coverage)


@pytest.mark.parametrize(
    ("query", "hits", "last"),
    [
        ("black blaz", [_hit("umbrella", 0.5)], "blaz"),
        ("black blaz", [_hit("umbrella", None)], "blaz"),  # coverage unknown: ask
        ("black blazer", [_hit("blazer", 1.0)], None),  # some hit holds every word
        ("blaz", [_hit("umbrella", 0.5)], None),  # one word: scanned when it finds nothing
        ("black bl", [_hit("umbrella", 0.5)], None),  # too short to scan for
        ("black the", [_hit("umbrella", 0.5)], None),  # a stop word
        ("black blaz", [], None),  # nothing found: scanned anyway
    ],
)
def test_partial_last_word(query, hits, last) -> None:
    assert partial_last_word(query, hits, STOP) == last


def test_a_last_word_being_typed_sends_the_query_to_the_scan() -> None:
    asked: list[tuple[list[str], int | None]] = []

    def substrings(pieces: list[str], cap: int | None) -> list[ScoredChunk]:
        asked.append((pieces, cap))
        score = 2.1 if pieces == ["blaz"] else 5.0  # blaz found at a word's start
        return [ScoredChunk(2, "blazer", score, False, 1.0, 1.0)]

    words = [_hit("umbrella", 0.5)]
    found = keyword_or_substring("black blaz", lambda: words, substrings, STOP, lambda w: False)
    assert [h.record_id for h in found] == ["blazer"] and asked == [
        (["blaz"], PROBE_ROWS),  # is blaz at a word's start? (a few chunks suffice)
        (["black", "blaz"], None),
    ]
    # an index word is not being typed; nor is a word found only inside words (score < 2)
    assert (
        keyword_or_substring("black blaz", lambda: words, substrings, STOP, lambda w: True) == words
    )
    inside = lambda p, cap: [ScoredChunk(3, "x", 1.6, False, 1.0, 1.0)]  # noqa: E731
    assert keyword_or_substring("black blaz", lambda: words, inside, STOP, lambda w: False) == words
