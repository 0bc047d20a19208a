"""The keyword sidecar (issue 26) on real SQLite files: same ranking as the FTS5 path,
recovery from a missing, truncated or damaged ``.kw`` file, another process's writes, and
the filter guarantee at 0.1%, 1% and 10% selectivity.

The fake embedder only chunks and fills vectors nobody reads. The FTS5 path is the store's
own keyword search with the sidecar switched off (``keyword_search(..., sidecar=None)``): the
sidecar is meant to rank exactly as it does, so its ids must be equal and its scores equal to
float tolerance. Expected counts in the filter test are worked out from how the corpus is made.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import semsearch
from semsearch.bm25.chunks import ShownChunks, best_chunks_from_text
from semsearch.bm25.file import keyword_path
from semsearch.bm25.sidecar import KeywordSidecar, fts_stamp
from semsearch.collection import Collection
from semsearch.embedders.fake import FakeEmbedder
from semsearch.filters import parse_filter
from semsearch.keyword_query import ENGLISH_STOPWORDS, Clause, scoring_clauses
from semsearch.schema import Field, Schema
from semsearch.stores.sqlite import keyword as sqlite_keyword
from semsearch.stores.sqlite.fts_stats import fts_totals
from tests.conftest import shared_path

ROOT = Path(__file__).resolve().parents[2]
CHUNKS = "SELECT k.id FROM chunks k JOIN records r ON r.rowid = k.record_rowid WHERE r.id = ?"
SCHEMA = Schema((Field("title", "str"), Field("bucket", "int")))


def scifact(n: int) -> list[dict[str, object]]:
    path = shared_path("scifact", "corpus.jsonl")
    with path.open() as f:
        rows = [json.loads(line) for _, line in zip(range(n), f, strict=False)]
    return [
        {"id": r["_id"], "title": r["title"], "text": f"{r['title']} {r['text']}", "bucket": i}
        for i, r in enumerate(rows)
    ]


def queries(n: int) -> list[str]:
    with shared_path("scifact", "queries.jsonl").open() as f:
        return [json.loads(line)["text"] for _, line in zip(range(n), f, strict=False)]


def sidecar_of(coll: Collection) -> KeywordSidecar:
    """The collection's sidecar after its build finished (one search starts it)."""
    store = coll.store
    coll.search("warm", mode="keyword", limit=1)
    (sidecar,) = store._keywords.sidecars.values()
    sidecar.wait(60)
    return sidecar


def best_chunks_both_ways(
    coll: Collection,
    sidecar: KeywordSidecar,
    text: str,
    ids: list[str],
    shown: ShownChunks | None = None,
) -> tuple[dict[str, int], dict[str, int]]:
    """Inside a read transaction: (``sidecar``'s best chunk per record, FTS5's own choice)."""
    store = coll.store
    cid, tokenizer, counts = store._keywords.setup(coll.name)
    snap = sidecar.current(store._rows)
    assert snap is not None
    clauses = scoring_clauses(text, ENGLISH_STOPWORDS)
    fts = [k.fts for k in clauses]
    ours = best_chunks_from_text(
        store._rows,
        cid,
        sidecar.tokenizer,
        snap.live,
        fts,
        ids,
        counts,
        shown,  # type: ignore[arg-type]
    )
    theirs = sqlite_keyword.best_chunks(store._rows, cid, tokenizer, text, ids, counts, clauses)
    return ours, theirs


def is_current(coll: Collection) -> bool:
    store = coll.store
    (sidecar,) = store._keywords.sidecars.values()
    snap = sidecar._snapshot
    return snap is not None and snap.stamp == fts_stamp(store._rows, sidecar.cid)


def fts5_path(coll: Collection, text: str, k: int, where: object = None) -> list[tuple[str, float]]:
    """The store's keyword ranking with the sidecar switched off: FTS5, one clause at a time."""
    store = coll.store

    def run(_: object) -> list[tuple[str, float]]:
        cid, tokenizer, counts = store._keywords.setup(coll.name)
        clauses = scoring_clauses(text, ENGLISH_STOPWORDS)
        found = sqlite_keyword.keyword_search(
            store._rows, cid, tokenizer, text, k, where, clauses, counts, "record", None
        )
        return [(h.record_id, h.score) for h in found]

    return store._in_read_txn(run)


def sidecar_path(coll: Collection, text: str, k: int, where: object = None) -> list:
    assert is_current(coll), "the sidecar is not the current snapshot: FTS5 would answer"
    found = coll.store.keyword_search(coll.name, text, k, where)
    assert is_current(coll)
    return [(h.record_id, h.score) for h in found]


def assert_same(ours: list, theirs: list) -> None:
    assert [i for i, _ in ours] == [i for i, _ in theirs]
    for (_, a), (_, b) in zip(ours, theirs, strict=True):
        assert a == pytest.approx(b, rel=1e-9, abs=1e-12)


def scifact_collection(db: semsearch.Database, embedder: FakeEmbedder) -> Collection:
    """Collection ``docs`` of the first 600 SciFact records."""
    c = db.collection("docs", schema=SCHEMA, embedder=embedder)
    c.upsert(scifact(600))
    return c


@pytest.fixture
def coll(db: semsearch.Database, fake_embedder: FakeEmbedder) -> Collection:
    return scifact_collection(db, fake_embedder)


def test_same_top10_and_scores_as_the_fts5_path_on_scifact(coll: Collection) -> None:
    sidecar_of(coll)
    for text in queries(120):
        assert_same(sidecar_path(coll, text, 10), fts5_path(coll, text, 10))


def test_phrase_clauses_score_as_fts5_scores_them(coll: Collection) -> None:
    sidecar_of(coll)
    (sidecar,) = coll.store._keywords.sidecars.values()
    text = "COVID-19 T-cell responses"  # pieces of several tokens add phrase clauses
    parts = sidecar.clause_terms(scoring_clauses(text, ENGLISH_STOPWORDS))
    assert (Clause(("t", "cell")), ("t", "cell")) in parts
    assert_same(sidecar_path(coll, text, 10), fts5_path(coll, text, 10))


@pytest.mark.parametrize("damage", ["missing", "truncated", "damaged"])
def test_recovers_from_a_broken_keyword_file(
    db_path: Path, fake_embedder, coll: Collection, damage: str
) -> None:
    sidecar = sidecar_of(coll)
    path = Path(keyword_path(str(db_path), sidecar.cid))
    assert path.exists()
    text = "vitamin D deficiency in elderly patients"
    expected = fts5_path(coll, text, 10)
    data = path.read_bytes()
    if damage == "missing":
        path.unlink()
    elif damage == "truncated":
        path.write_bytes(data[: len(data) // 2])
    else:  # same size, bytes flipped inside the posting arrays
        mid = len(data) // 2
        path.write_bytes(
            data[:mid] + bytes(b ^ 0xFF for b in data[mid : mid + 64]) + data[mid + 64 :]
        )
    with semsearch.connect(db_path) as fresh:  # a new process's view: nothing in memory
        other = fresh.collection("docs", embedder=fake_embedder)
        first = [(h.id, h.score) for h in other.search(text, mode="keyword", limit=10).hits]
        assert [i for i, _ in first] == [i for i, _ in expected]  # FTS5 answered meanwhile
        rebuilt = sidecar_of(other)
        assert rebuilt.current(other.store._rows) is not None
        assert_same(sidecar_path(other, text, 10), expected)
    assert path.exists() and path.read_bytes() != b""


def test_another_process_writes_are_seen_by_the_next_search(
    db_path: Path, fake_embedder, coll: Collection
) -> None:
    sidecar_of(coll)
    text = "zymurgy quokka"
    assert coll.search(text, mode="keyword", limit=5).ids == []
    script = textwrap.dedent(f"""
        import sys, semsearch
        sys.path.insert(0, {str(ROOT)!r})
        from semsearch.embedders.fake import FakeEmbedder
        from semsearch.schema import Field, Schema
        with semsearch.connect({str(db_path)!r}) as db:
            c = db.collection("docs", embedder=FakeEmbedder(dim=32, max_tokens=64))
            c.upsert([{{"id": "new", "title": "Zymurgy", "text": "Zymurgy of the quokka",
                        "bucket": -1}}])
            c.delete(["{scifact(1)[0]["id"]}"])
    """)
    subprocess.run([sys.executable, "-c", script], check=True, timeout=300)
    assert not is_current(coll)  # the snapshot held is behind the file
    assert coll.search(text, mode="keyword", limit=5).ids == ["new"]
    # the search caught it up from the record change log: no rebuild ran
    (sidecar,) = coll.store._keywords.sidecars.values()
    assert is_current(coll) and sidecar._snapshot.live.caught_up  # type: ignore[union-attr]
    assert sidecar._building is None or not sidecar._building.is_alive()
    assert sidecar_path(coll, text, 5)[0][0] == "new"
    for query in ["quokka", *queries(20)]:
        assert_same(sidecar_path(coll, query, 10), fts5_path(coll, query, 10))


def test_vector_writes_leave_the_sidecar_current(coll: Collection) -> None:
    # storing vectors bumps the change counter but leaves the text alone: no rebuild needed
    sidecar_of(coll)
    store = coll.store
    version = store.collection_version(coll.name)
    (chunk_id,) = store._rows("SELECT min(id) FROM chunks", ())[0]
    store.set_vectors(coll.name, [int(chunk_id)], np.eye(1, 32, dtype=np.float32))
    assert store.collection_version(coll.name) == (version or 0) + 1
    assert is_current(coll)


@pytest.mark.parametrize(("share", "matches"), [(0.001, 2), (0.01, 20), (0.1, 200)])
def test_filter_guarantee_min_limit_matches(
    db: semsearch.Database, fake_embedder, share: float, matches: int
) -> None:
    # 2000 records: record i holds "ember" (every record) and, when i % 7 == 0, "cobalt";
    # bucket = i % round(1 / share), so bucket 0 is share of them (2000 * share records).
    c = db.collection("f", schema=SCHEMA, embedder=fake_embedder)
    c.upsert(
        [
            {
                "id": f"r{i:04d}",
                "text": f"ember {'cobalt ' if i % 7 == 0 else ''}note {i % 13} granite",
                "bucket": i % round(1 / share),
            }
            for i in range(2000)
        ]
    )
    sidecar_of(c)
    where = parse_filter({"bucket": 0}, SCHEMA)
    step = round(1 / share)
    bucket0 = list(range(0, 2000, step))
    assert len(bucket0) == matches
    expected = {
        "ember": bucket0,
        "cobalt": [i for i in bucket0 if i % 7 == 0],
        "ember cobalt": bucket0,
    }
    for text, limit in (("ember", 10), ("cobalt", 10), ("ember cobalt", 500)):
        found = sidecar_path(c, text, limit, where)
        assert len(found) == min(limit, len(expected[text]))
        assert {int(i[1:]) for i, _ in found} <= set(expected[text])
        assert_same(found, fts5_path(c, text, limit, where))


def test_best_chunk_from_text_is_the_fts5_best_chunk(db: semsearch.Database) -> None:
    # short chunks (64 tokens), so that SciFact abstracts have several and the choice matters
    c = db.collection("chunky", schema=SCHEMA, embedder=FakeEmbedder(dim=32, max_tokens=64))
    c.upsert(scifact(300))
    sidecar = sidecar_of(c)
    store = c.store
    several = 0
    n_chunks = store._rows("SELECT count(*) FROM chunks", ())[0][0]
    assert fts_totals(store._rows, f"fts_{sidecar.cid}")[0] == n_chunks  # the averages record

    for text in [*queries(80), "COVID-19 T-cell responses"]:
        ids = [h.record_id for h in store.keyword_search(c.name, text, 20, None)]
        ours, theirs = store._in_read_txn(
            lambda _, t=text, i=ids: best_chunks_both_ways(c, sidecar, t, i)
        )
        chunks = {i: [r[0] for r in store._rows(CHUNKS, (i,))] for i in ids}
        single = {i for i in ids if len(chunks[i]) == 1}
        assert {i: k for i, k in ours.items() if i not in single} == {
            i: k for i, k in theirs.items() if i not in single
        }
        # a record of one chunk shows it, whether or not that chunk matches on its own
        assert {i: ours[i] for i in single} == {i: chunks[i][0] for i in single}
        several += len(ids) - len(single)
    assert several > 100  # the choice was made among several chunks often


def test_a_very_long_cjk_run_does_not_stop_the_sidecar_build(tmp_path: Path) -> None:
    """FTS5 cuts a 21,000-character token inside a character; reading it back raised "Could
    not decode to UTF-8 column 'term'", so the .kw file was never built and every search
    retried the build. Its scores still match FTS5's ``bm25()`` (worked out by FTS5 itself)."""
    with semsearch.connect(tmp_path / "cjk.embed.db") as db:
        coll = db.collection("docs", embedder=FakeEmbedder(16))
        coll.upsert([{"id": "long", "text": "图" * 21000 + " quokka"},
                     {"id": "short", "text": "a quokka and a wombat"},
                     {"id": "other", "text": "nothing here"}])  # fmt: skip
        sidecar = sidecar_of(coll)
        assert is_current(coll) and Path(keyword_path(str(db.location), sidecar.cid)).exists()
        hits = coll.search("quokka", mode="keyword")
        want = fts5_path(coll, "quokka", 10)
        assert [(h.id, round(h.score, 6)) for h in hits] == [(i, round(s, 6)) for i, s in want]
        assert {h.id for h in hits} == {"long", "short"}


def test_dropping_the_collection_deletes_its_keyword_file(
    db: semsearch.Database, db_path: Path, coll: Collection
) -> None:
    sidecar = sidecar_of(coll)
    path = Path(keyword_path(str(db_path), sidecar.cid))
    assert path.exists()
    db.drop_collection("docs")
    assert not path.exists()
    assert coll.store._keywords.sidecars == {}


def test_index_and_import_commands_leave_a_current_sidecar_for_the_next_process_fake_embedder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A one-shot command builds the sidecar before it exits: a build started by a search
    would run in a daemon thread that dies with the process, and every later CLI search
    would fall back to FTS5. A later small change leaves the file as it is: the next
    process catches it up from the record change log, without a rebuild."""
    from typer.testing import CliRunner

    from semsearch.cli.app import app

    monkeypatch.setenv("SEMSEARCH_MODEL", "fake:16")
    notes, index = tmp_path / "notes", str(tmp_path / "n.embed.db")
    notes.mkdir()
    (notes / "owls.md").write_text("# Owls\n\nOwls hunt at night.\n")
    runner = CliRunner()
    assert runner.invoke(app, ["index", str(notes), "--index", index]).exit_code == 0
    kw = Path(keyword_path(index, 1))
    assert kw.is_file()
    (notes / "bats.md").write_text("# Bats\n\nBats hunt moths at night.\n")
    assert runner.invoke(app, ["index", str(notes), "--index", index]).exit_code == 0
    with semsearch.connect(index) as db:  # a new process, as the next CLI search is
        coll = db.collection("notes")
        assert [h.id for h in coll.search("moths", mode="keyword")] == ["bats.md"]
        assert is_current(coll)  # loaded from the file and caught up: no fallback
        assert coll.store._keywords.sidecars[1]._building is None  # and no rebuild


def test_kept_chunk_texts_give_the_fts5_best_chunk_and_follow_every_write(
    db: semsearch.Database,
) -> None:
    c = db.collection("kept", schema=SCHEMA, embedder=FakeEmbedder(dim=32, max_tokens=64))
    c.upsert(scifact(120))
    sidecar = sidecar_of(c)
    store = c.store
    shown = ShownChunks(capacity=15)  # fewer than a query's ids: records are dropped and read

    for text in [*queries(30), *queries(30)]:  # the second round reads kept texts
        ids = [h.record_id for h in store.keyword_search(c.name, text, 20, None)]
        ours, theirs = store._in_read_txn(
            lambda _, t=text, i=ids: best_chunks_both_ways(c, sidecar, t, i, shown)
        )
        several = {i for i in ids if len(store._rows(CHUNKS, (i,))) > 1}
        assert {i: ours[i] for i in several if i in ours} == {
            i: theirs[i] for i in several if i in theirs
        }
    assert 0 < len(shown._records) <= 15

    # a rewrite moves the matching words to another chunk: the hit shows the new one
    words = " ".join(f"filler{i}" for i in range(200))
    c.upsert([{"id": "moved", "title": "Moved", "text": f"{words} quokka marsupial", "bucket": 1}])
    first = c.search("quokka", mode="keyword").hits[0]
    assert first.id == "moved" and "quokka" in first.chunk.text and first.chunk.ordinal > 0
    kept = store._keywords.shown_chunks[sidecar.cid]._records
    assert "moved" in kept  # the search read (and kept) its chunks in Python, not by FTS5
    c.upsert([{"id": "moved", "title": "Moved", "text": f"quokka marsupial {words}", "bucket": 1}])
    again = c.search("quokka", mode="keyword").hits[0]
    assert again.id == "moved" and again.chunk.ordinal == 0 and "quokka" in again.chunk.text
    c.delete(["moved"])
    assert [h.id for h in c.search("quokka", mode="keyword").hits] == []
