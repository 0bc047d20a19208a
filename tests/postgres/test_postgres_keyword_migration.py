"""Collections written before the BM25 tables (issue 44, item 5): searched as before, with a
note saying which ranking answered; moved to BM25 by their first write or ``semsearch
compact``, in one transaction that a SIGKILL in the middle leaves undone."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

import semsearch
from semsearch.cli.app import app
from semsearch.embedders.fake import FakeEmbedder
from semsearch.stores.postgres.keyword import OLD_RANKING_NOTE
from tests.postgres.bm25_helpers import (
    has_bm25_tables,
    make_old_layout,
    postings_agree,
    recount,
    stored,
)

ROOT = Path(__file__).resolve().parents[2]
WORDS = ["otter", "kelp", "river", "stone", "sea", "bridge", "harbour", "cell", "using"]
RECORDS = [
    {"id": f"r{i:02d}", "text": " ".join(WORDS[(i * j) % len(WORDS)] for j in range(1, 4 + i % 5))}
    for i in range(30)
]


@pytest.fixture
def old(pg_location, raw):
    """A collection of 30 records in the layout of semsearch before the BM25 tables."""
    with semsearch.connect(pg_location) as db:
        db.collection("c", embedder=FakeEmbedder(8)).upsert(RECORDS)
    make_old_layout(raw)
    return pg_location


def _tsv_column(raw) -> bool:
    return bool(raw("SELECT 1 FROM pg_attribute WHERE attrelid = 'semsearch_c1_chunks'::regclass "
                    "AND attname = 'tsv' AND NOT attisdropped"))  # fmt: skip


def test_an_older_collection_is_searched_as_before_with_a_note(old, raw) -> None:
    with semsearch.connect(old) as db:
        coll = db.collection("c", embedder=FakeEmbedder(8))
        keyword = coll.search("otter kelp", mode="keyword", min_score=None)
        assert keyword.hits and OLD_RANKING_NOTE in keyword.notes
        assert all(h.score <= 1 for h in keyword)  # ts_rank_cd, not BM25
        hybrid = coll.search("otter kelp", mode="hybrid", min_score=None)
        assert OLD_RANKING_NOTE in hybrid.notes
        semantic = coll.search("otter kelp", mode="semantic", min_score=None)
        assert OLD_RANKING_NOTE not in semantic.notes
    assert not has_bm25_tables(raw)  # a read never migrates
    assert _tsv_column(raw)


@pytest.mark.parametrize("write", ["upsert", "delete"])
def test_the_first_write_gives_it_the_bm25_tables(old, raw, tmp_path, write) -> None:
    with semsearch.connect(old) as db:
        coll = db.collection("c", embedder=FakeEmbedder(8))
        if write == "upsert":
            coll.upsert([{"id": "new", "text": "otter otter harbour"}])
        else:
            assert coll.delete(["r03"]) == 1
        assert has_bm25_tables(raw)
        assert stored(raw) == recount(raw) and postings_agree(raw)
        found = coll.search("otter kelp", mode="keyword", min_score=None, limit=10)
        assert OLD_RANKING_NOTE not in found.notes
        records = coll.get(coll.ids())
    # the same records on SQLite rank the same (BM25 over records on both)
    with semsearch.connect(tmp_path / "same.embed.db") as db:
        same = db.collection("c", embedder=FakeEmbedder(8))
        same.upsert([{"id": r.id, "text": r.text} for r in records])
        expected = same.search("otter kelp", mode="keyword", min_score=None, limit=10)
    assert found.ids == expected.ids
    assert [h.score for h in found] == pytest.approx([h.score for h in expected], rel=1e-9)


def test_compact_moves_it_to_bm25_and_drops_the_tsvector(old, raw) -> None:
    result = CliRunner().invoke(app, ["compact", "--index", old])
    assert result.exit_code == 0, result.output
    assert "compacted" in result.output
    assert has_bm25_tables(raw) and not _tsv_column(raw)
    assert stored(raw) == recount(raw) and postings_agree(raw)
    with semsearch.connect(old) as db:
        found = db.collection("c", embedder=FakeEmbedder(8)).search("otter", mode="keyword")
        assert found.hits and OLD_RANKING_NOTE not in found.notes
    assert CliRunner().invoke(app, ["compact", "--index", old]).exit_code == 0  # idempotent


#: ``semsearch compact`` in its own process, SIGKILLed after the first page of the backfill
#: (two records a page), inside the migration's transaction. argv: location, repo root.
_KILLER = """
import os, signal, sys
sys.path.insert(0, sys.argv[2])
import semsearch
from semsearch.stores.postgres import bm25_index

bm25_index.BACKFILL_PAGE = 2
real = bm25_index.index_records
def index_then_die(*args, **kwargs):
    real(*args, **kwargs)
    os.kill(os.getpid(), signal.SIGKILL)
bm25_index.index_records = index_then_die
semsearch.connect(sys.argv[1]).compact()
print("not killed")
"""


def test_a_kill_in_the_middle_of_the_migration_leaves_the_old_layout(old, raw) -> None:
    done = subprocess.run(
        [sys.executable, "-c", _KILLER, old, str(ROOT)],
        capture_output=True, text=True, timeout=300, cwd=ROOT,
    )  # fmt: skip
    assert done.returncode == -signal.SIGKILL, done.stdout + done.stderr[-2000:]
    assert not has_bm25_tables(raw)  # the transaction died with the process
    assert not raw("SELECT to_regclass('semsearch_c1_kw_terms')")[0][0]
    assert _tsv_column(raw)
    with semsearch.connect(old) as db:
        coll = db.collection("c", embedder=FakeEmbedder(8))
        found = coll.search("otter", mode="keyword", min_score=None)
        assert found.hits and OLD_RANKING_NOTE in found.notes
        db.compact()  # the next run completes it
        assert coll.search("otter", mode="keyword").notes == ()
    assert has_bm25_tables(raw) and stored(raw) == recount(raw) and postings_agree(raw)
