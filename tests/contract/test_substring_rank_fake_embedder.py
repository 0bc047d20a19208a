"""The keyword leg's substring scan ranks a word being typed (issue 46, items 12 and 13), on
every backend, default ``porter`` tokenizer, fake embedder.

Each record's text opens with its title line. The expected orders are worked out by hand from
the texts with the rule of :func:`semsearch.keyword_text.scan_score` (per piece: 3 whole word,
2 word start, 1 inside a word, + 0.5 in the title line; + 0.25 when the text opens with a
piece; + 0.2 * n / (n + 1) for n occurrences); the sums are in the comments.
"""

from __future__ import annotations

import pytest

from semsearch.embedders.fake import FakeEmbedder

RECORDS = [
    {"id": "goblin", "text": "Goblin\n\nSmall, cruel humanoids that lair in caves."},
    {"id": "hobgoblin", "text": "Hobgoblin\n\nWarlike humanoids that march in ranks."},
    {"id": "worg", "text": "Worg\n\nA wolf ridden by goblins; goblins feed it goblin scraps."},
    {"id": "fireball", "text": "Fireball\n\nA bright streak blossoms into an explosion."},
    {"id": "delayed-blast-fireball", "text": "Delayed Blast Fireball\n\nThe fireball waits."},
    {"id": "antimagic-field", "text": "Antimagic Field\n\nA spell such as fireball stops."},
    {"id": "sanctuary", "text": "Sanctuary\n\nIt does not stop area effects such as a fireball."},
    {"id": "umbrella", "text": "Umbrella\n\nA black umbrella with a wooden handle."},
    {"id": "blazer", "text": "School blazer\n\nA black wool blazer with brass buttons."},
    {"id": "torch", "text": "Torch\n\nA blazing torch lights the hall."},
    {"id": "audit-rerun", "text": "重跑gen-itgc后验证通过"},
    {"id": "gen-script", "text": "运行gen脚本"},
    {"id": "itgc-audit", "text": "本季度ITGC审计已经完成"},
    {"id": "upgrade", "text": "升级node.js完成"},
]

CASES = [
    # gobl: goblin 2 + .5 title + .25 opens + .1 = 2.85; worg 2 (body, word start) + .15
    # (3 times) = 2.15; hobgoblin 1 (inside a word) + .5 title + .1 = 1.6
    ("Gobl", ["goblin", "worg", "hobgoblin"]),
    # firebal: fireball 2.85; delayed-blast-fireball 2.5 + .133 (twice) = 2.633;
    # antimagic-field and sanctuary 2 + .1 = 2.1 each, tied: by id
    ("firebal", ["fireball", "delayed-blast-fireball", "antimagic-field", "sanctuary"]),
    # black matches words, blaz none: the scan of black and blaz answers. blazer: black 3 +
    # blaz 2.5 (title, word start) + .15 = 5.65; umbrella 3 + .1 = 3.1; torch 2 + .1 = 2.1
    ("black blaz", ["blazer", "umbrella", "torch"]),
    # no word token holds gen or itgc (glued to CJK), so the scan answers, with the pieces
    # gen-itgc, gen and itgc. audit-rerun (one line: all title; CJK beside is a word edge):
    # 3 x 3.5 + .15 = 10.65; gen-script and itgc-audit 3.5 + .1 = 3.6 each, tied: by id
    ("gen-itgc", ["audit-rerun", "gen-script", "itgc-audit"]),
    ("node.js", ["upgrade"]),  # pieces node.js and node (js is under 3 characters)
]


@pytest.fixture(scope="module")
def coll(module_store):
    with module_store.connect() as db:
        coll = db.collection("typing", embedder=FakeEmbedder(16))
        coll.upsert(RECORDS)
        yield coll


@pytest.mark.parametrize(("query", "expected"), CASES)
def test_substring_scan_ranks_word_starts_first_fake_embedder(coll, query, expected) -> None:
    assert coll.search(query, mode="keyword", limit=10).ids == expected


def test_whole_words_still_rank_by_bm25_fake_embedder(coll) -> None:
    # every word matches: the word index answers, the scan is not asked (torch is not found)
    assert coll.search("black blazer", mode="keyword", limit=10).ids[0] == "blazer"
    assert "torch" not in coll.search("black blazer", mode="keyword", limit=10).ids
    assert coll.search("black umbrella", mode="keyword", limit=10).ids[0] == "umbrella"


def test_a_finished_query_with_a_rare_last_word_keeps_bm25_fake_embedder(coll) -> None:
    # "umbrellaz" is no word and begins none (it occurs nowhere): not a word being typed
    assert set(coll.search("black umbrellaz", mode="keyword", limit=10).ids) == {
        "umbrella",
        "blazer",
    }
