"""BM25 with statistics inside a filter (bm25/delta.py's ScopedPostings) equals BM25 over a
collection holding only the allowed records.

The reference builds posting arrays of the allowed records alone (``build_postings``), so its
N, n(q) and avgdl are theirs by construction; the scoped scores are taken from postings of the
whole collection, caught up with dead and changed records as a snapshot is."""

from __future__ import annotations

import numpy as np
import pytest

from semsearch.bm25.delta import LivePostings
from semsearch.bm25.postings import build_postings
from semsearch.stores.fts5_tokens import PieceTokenizer
from semsearch.stores.sqlite.schema import FTS_TOKENIZER

TEXTS = [
    "peanut allergy noted for the trip",
    "peanut peanut butter toast",
    "dentist on friday at noon",
    "school run and peanut free lunch",
    "buy milk",
    "rain all day, stay in",
    "the dentist said floss",
    "lunch with peanut sauce noodles and rice",
]
QUERIES = ["peanut", "dentist lunch", "peanut the", "milk rain floss"]


@pytest.fixture(scope="module")
def tokenizer() -> PieceTokenizer:
    return PieceTokenizer(FTS_TOKENIZER)


def reference(tokenizer: PieceTokenizer, texts: dict[int, str], query: str) -> dict[int, float]:
    """{rowid: BM25} from postings of ``texts`` alone."""
    rowids = sorted(texts)
    p = LivePostings(build_postings([(r, "", texts[r]) for r in rowids], tokenizer))
    terms = list(dict.fromkeys(tokenizer.terms(query)))
    scores = p.scores(list(terms))
    return {rowids[i]: float(s) for i, s in enumerate(scores) if s > 0}


def scoped(live: LivePostings, rowids: np.ndarray, allowed: list[int], query: str, tok):
    at = live.positions(np.array(allowed, np.int64))
    mask = np.zeros(live.size, np.bool_)
    mask[at[at >= 0]] = True
    found = live.within(mask).top(list(dict.fromkeys(tok.terms(query))), 100, None)
    return {int(rowids[p]): float(s) for p, s in zip(found[0], found[1], strict=True)}


@pytest.mark.parametrize("query", QUERIES)
def test_scoped_bm25_of_a_fresh_snapshot_equals_bm25_of_the_allowed_records_alone(tokenizer, query):
    base = build_postings([(i + 1, "", t) for i, t in enumerate(TEXTS)], tokenizer)
    live = LivePostings(base)
    allowed = [1, 2, 3, 5, 7]
    got = scoped(live, base.rowids, allowed, query, tokenizer)
    expected = reference(tokenizer, {r: TEXTS[r - 1] for r in allowed}, query)
    assert got == pytest.approx(expected, rel=1e-12)


@pytest.mark.parametrize("query", QUERIES)
def test_scoped_bm25_of_a_caught_up_snapshot_counts_changed_records_once(tokenizer, query):
    base = build_postings([(i + 1, "", t) for i, t in enumerate(TEXTS)], tokenizer)
    # record 2 changed (its new text is in the delta), record 4 deleted
    changed = {2: "plain toast with honey and peanut"}
    delta = build_postings([(2, "", changed[2])], tokenizer)
    live = LivePostings(base, np.array([1, 3], np.int64), delta)
    rowids = np.concatenate([base.rowids, delta.rowids])
    allowed = [1, 2, 4, 6, 8]  # 4 is gone: not a record any more
    got = scoped(live, rowids, allowed, query, tokenizer)
    now = {1: TEXTS[0], 2: changed[2], 6: TEXTS[5], 8: TEXTS[7]}
    assert got == pytest.approx(reference(tokenizer, now, query), rel=1e-12)
