"""PostgreSQL's BM25 tables: exact under concurrent writers from several processes, statistics
counted inside a filter for scoped searches, and the chunk a record-level hit shows."""

from __future__ import annotations

import math
import subprocess
import sys
import time
from pathlib import Path

import pytest

import semsearch
from semsearch.embedders.fake import FakeEmbedder
from semsearch.filters import parse_filter
from semsearch.schema import Schema
from tests.postgres.bm25_helpers import postings_agree, recount, stored

ROOT = Path(__file__).resolve().parents[2]

#: A writer process: upserts, rewrites and deletes random records of collection "c" (argv:
#: location, seed, steps, repo root, start time). Several start at once on overlapping ids.
_WRITER = """
import random, sys, time
sys.path.insert(0, sys.argv[4])
import semsearch
from semsearch.embedders.fake import FakeEmbedder
location, seed, steps = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
time.sleep(max(0.0, float(sys.argv[5]) - time.time()))  # every writer starts together
words = ["otter", "kelp", "river", "stone", "sea", "bridge", "the", "harbour", "T-cell",
         "cells", "running", "ran", "state-of-the-art"]
rng = random.Random(seed)
with semsearch.connect(location) as db:
    coll = db.collection("c", embedder=FakeEmbedder(8))
    for _ in range(steps):
        ids = [f"r{i}" for i in rng.sample(range(40), 6)]
        if rng.random() < 0.25:
            coll.delete(ids[:3])
        else:
            coll.upsert([
                {"id": i, "text": " ".join(rng.choices(words, k=rng.randint(0, 30))),
                 **({"title": "otter"} if rng.random() < 0.3 else {})}
                for i in ids
            ])
print("done")
"""


def test_concurrent_writers_keep_df_n_and_lengths_exact(pg_location, raw) -> None:
    with semsearch.connect(pg_location) as db:
        db.collection("c", embedder=FakeEmbedder(8))  # made once, before the writers
    start = str(time.time() + 8)  # after every process has imported semsearch
    argv = [sys.executable, "-c", _WRITER, pg_location]
    writers = [
        subprocess.Popen(
            [*argv, str(seed), "40", str(ROOT), start],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd=ROOT,
        )
        for seed in range(4)
    ]
    for w in writers:
        out, err = w.communicate(timeout=600)
        assert w.returncode == 0 and "done" in out, err[-3000:]
    expected = recount(raw)
    assert expected["N"] > 0
    assert stored(raw) == expected
    assert postings_agree(raw)
    ((chunks, chunk_len),) = raw("SELECT chunks, chunk_len FROM semsearch_c1_kw_stats")
    assert chunks == raw("SELECT count(*) FROM semsearch_c1_chunks")[0][0]
    assert chunk_len == raw("SELECT coalesce(sum(chunk_len), 0) FROM semsearch_c1_kw_docs")[0][0]


def _bm25(f: float, length: int, n: int, df: int, avgdl: float) -> float:
    """One term's BM25 with Lucene's IDF (k1 = 1.2, b = 0.75), from the formula."""
    idf = math.log(1 + (n - df + 0.5) / (df + 0.5))
    return idf * f * 2.2 / (f + 1.2 * (0.25 + 0.75 * length / avgdl))


@pytest.fixture
def tenants(pg_location):
    with semsearch.connect(pg_location) as db:
        coll = db.collection(
            "t", schema=Schema.from_types({"user": "str"}), embedder=FakeEmbedder(8)
        )
        coll.upsert([
            {"id": "a1", "text": "peanut allergy noted", "user": "alice"},
            {"id": "a2", "text": "peanut peanut butter toast", "user": "alice"},
            {"id": "a3", "text": "dentist on friday", "user": "alice"},
            {"id": "b1", "text": "peanut", "user": "bob"},
        ])  # fmt: skip
        yield coll


def _scoped(coll, query: str, user: str) -> dict[str, float]:
    where = parse_filter({"user": user}, coll.schema)
    found = coll.store.keyword_search_scoped(coll.name, query, 10, where)
    return {h.record_id: h.score for h in found}


def test_scoped_statistics_count_only_the_records_the_filter_allows(tenants) -> None:
    # alice: N = 3, lengths 3 + 4 + 3 = 10 (avgdl 10/3), peanut in a1 and a2 (df 2)
    avgdl = 10 / 3
    expected = {"a2": _bm25(2, 4, 3, 2, avgdl), "a1": _bm25(1, 3, 3, 2, avgdl)}
    found = _scoped(tenants, "peanut", "alice")
    assert list(found) == ["a2", "a1"]
    assert found == pytest.approx(expected, rel=1e-9)
    tenants.upsert([{"id": f"b{i}", "text": "peanut " * i, "user": "bob"} for i in range(2, 30)])
    assert _scoped(tenants, "peanut", "alice") == pytest.approx(expected, rel=1e-12)
    # the unscoped search counts everyone: bob's records move alice's scores
    where = parse_filter({"user": "alice"}, tenants.schema)
    unscoped = tenants.store.keyword_search(tenants.name, "peanut", 10, where)
    assert unscoped[0].score != pytest.approx(expected["a2"], rel=1e-3)


def test_scoped_search_of_a_word_the_user_lacks_finds_nothing(tenants) -> None:
    assert _scoped(tenants, "butter", "bob") == {}


def test_a_hit_shows_its_best_chunk(pg_location) -> None:
    filler = " ".join(f"w{i}" for i in range(400))
    text = f"{filler} the otter sleeps. {filler} kelp kelp"
    with semsearch.connect(pg_location) as db:
        coll = db.collection("long", embedder=FakeEmbedder(8))
        coll.upsert([{"id": "long", "text": text}, {"id": "other", "text": "kelp otter"}])
        chunks = coll.store.get_chunks(coll.name, list(range(1, 20)))
        assert len(chunks) >= 3
        hit = coll.search("kelp", mode="keyword", min_score=None).hits
        shown = {h.id: h.chunk.text for h in hit}
        assert "kelp kelp" in shown["long"]
        hit = coll.search("otter", mode="keyword", min_score=None).hits
        assert "the otter sleeps" in {h.id: h.chunk.text for h in hit}["long"]
