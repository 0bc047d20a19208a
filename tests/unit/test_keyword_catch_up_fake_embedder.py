"""The keyword sidecar caught up from the record change log (stores/sqlite/record_changes.py,
bm25/delta.py): after adds, updates and deletes, from this process or another, the
next search is answered by the sidecar without a rebuild, with FTS5's ranking and scores.

Expected values come from the store's ranking with the sidecar off (FTS5 asked one clause at a time),
never from the sidecar. Vectors come from the fake embedder: the keyword leg reads none."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

import semsearch
from semsearch.bm25 import sidecar as keyword_sidecar
from semsearch.bm25.file import read_header
from semsearch.bm25.sidecar import KeywordSidecar
from semsearch.collection import Collection
from semsearch.embedders.fake import FakeEmbedder
from semsearch.filters import parse_filter
from semsearch.stores.sqlite import record_changes
from tests.file_formats import as_older_format
from tests.unit.test_keyword_sidecar_fake_embedder import (
    SCHEMA,
    assert_same,
    fts5_path,
    queries,
    scifact,
    scifact_collection,
    sidecar_of,
    sidecar_path,
)


@pytest.fixture
def coll(db: semsearch.Database, fake_embedder: FakeEmbedder) -> Collection:
    return scifact_collection(db, fake_embedder)


def churn(coll: Collection) -> None:
    """Adds 40 records, rewrites 30 (new text), deletes 30: every kind of change."""
    corpus = scifact(700)
    coll.upsert(corpus[600:640])
    rewritten = [dict(r, text=f"{r['title']} zymurgy quokka {i}") for i, r in
                 enumerate(corpus[100:130])]  # fmt: skip
    coll.upsert(rewritten)
    coll.delete([str(r["id"]) for r in corpus[200:230]])


def caught_up(sidecar: KeywordSidecar) -> bool:
    """The held snapshot is a caught-up one and no rebuild is running (a finished rebuild
    would have replaced it with a fresh one)."""
    snap, building = sidecar._snapshot, sidecar._building
    rebuilding = building is not None and building.is_alive()
    return snap is not None and snap.live.caught_up and not rebuilding


def test_after_adds_updates_and_deletes_the_next_search_catches_up_with_fts5_scores(
    coll: Collection,
) -> None:
    sidecar = sidecar_of(coll)
    churn(coll)
    for text in [*queries(60), "zymurgy quokka", "quokka"]:
        assert_same(sidecar_path_after_catch_up(coll, text), fts5_path(coll, text, 10))
    assert caught_up(sidecar)  # answered by the caught-up arrays: no rebuild ran
    assert len(sidecar._snapshot.changed) == 100  # type: ignore[union-attr]


def sidecar_path_after_catch_up(coll: Collection, text: str) -> list:
    if not coll.store._keywords.sidecars:  # a new store makes its sidecar on its first search
        coll.store.keyword_search(coll.name, "warm", 1, None)
    (sidecar,) = coll.store._keywords.sidecars.values()
    assert sidecar.current(coll.store._rows) is not None  # catches up inline
    return sidecar_path(coll, text, 10)


def test_deleted_records_never_come_back_and_rewritten_ones_rank_by_their_new_text(
    coll: Collection,
) -> None:
    sidecar_of(coll)
    churn(coll)
    deleted = {str(r["id"]) for r in scifact(230)[200:230]}
    found = coll.search("zymurgy quokka", mode="keyword", limit=50)
    assert len(found.ids) == 30  # the 30 rewritten records, and only they hold both words
    assert not deleted & set(coll.search(str(scifact(201)[200]["title"]), mode="keyword").ids)


def test_filters_apply_to_caught_up_records(coll: Collection) -> None:
    sidecar_of(coll)
    churn(coll)
    # the rewritten records keep buckets 100..129; bucket < 115 keeps 15 of them
    where = parse_filter({"bucket": {"$gte": 100, "$lt": 115}}, SCHEMA)
    store = coll.store
    assert sidecar_path_after_catch_up(coll, "warm") is not None
    ours = [h.record_id for h in store.keyword_search(coll.name, "zymurgy quokka", 50, where)]
    expected = [i for i, _ in fts5_path(coll, "zymurgy quokka", 50, where)]
    assert len(expected) == 15
    assert ours == expected


def test_a_new_process_loads_the_file_and_catches_up_from_its_position(
    db_path: Path, fake_embedder, coll: Collection
) -> None:
    sidecar = sidecar_of(coll)
    built_at = read_header(sidecar.path)["seq"]
    churn(coll)
    assert read_header(sidecar.path)["seq"] == built_at  # 100 changes: no rebuild, same file
    with semsearch.connect(db_path) as other:
        c = other.collection("docs", embedder=fake_embedder)
        for text in queries(20):
            assert_same(sidecar_path_after_catch_up(c, text), fts5_path(c, text, 10))
        (theirs,) = c.store._keywords.sidecars.values()
        assert caught_up(theirs)


def test_more_changes_than_the_inline_limit_rebuild_while_fts5_answers(
    coll: Collection, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(keyword_sidecar, "CATCH_UP_MAX", 50)
    sidecar = sidecar_of(coll)
    churn(coll)  # 100 changed records > 50
    text = "zymurgy quokka"
    assert sidecar.current(coll.store._rows) is None  # FTS5 answers this one
    assert coll.search(text, mode="keyword", limit=50).ids == [
        i for i, _ in fts5_path(coll, text, 50)
    ]
    sidecar.wait(60)
    snap = sidecar.current(coll.store._rows)
    assert snap is not None and not snap.live.caught_up  # a fresh build
    assert_same(sidecar_path(coll, text, 10), fts5_path(coll, text, 10))


def pruned_to(db_path: Path) -> int:
    """Collection 1's record log horizon, read from the file (0: never pruned)."""
    conn = sqlite3.connect(db_path)
    key = "record_changes_pruned:1"
    row = conn.execute("SELECT value FROM semsearch_meta WHERE key = ?", (key,)).fetchone()
    conn.close()
    return int(row[0]) if row else 0


def test_a_pruned_log_sends_an_old_snapshot_back_to_the_file(
    db_path: Path, coll: Collection, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(record_changes, "PRUNE_AFTER", 10)
    sidecar = sidecar_of(coll)
    old = sidecar._snapshot
    assert old is not None and old.seq is not None
    coll.store.refresh_keyword_index(coll.name)  # the file is at old.seq
    # 40 rewrites log 80 rows; the prune cannot pass the file's position
    coll.upsert([dict(r, text=f"{r['title']} quokka") for r in scifact(40)])
    assert pruned_to(db_path) <= old.seq
    # once the file moves on (a rebuild), the next write prunes past the old snapshot
    sidecar._build_in_background()
    moved = read_header(sidecar.path)["seq"]
    assert moved > old.seq
    coll.upsert([dict(r, text=f"{r['title']} quokka wombat") for r in scifact(40)])
    assert pruned_to(db_path) == moved
    assert record_changes.changed_since(coll.store._rows, 1, old.seq) is None
    sidecar._snapshot = old  # a process that last searched before the prune
    assert sidecar.current(coll.store._rows) is not None  # the file, caught up
    for text in queries(10):
        assert_same(sidecar_path(coll, text, 10), fts5_path(coll, text, 10))
    # (the 40 rewritten texts tie in many ways: compared as a set, not an order)
    found = coll.store.keyword_search(coll.name, "quokka wombat", 100, None)
    assert {h.record_id for h in found} == {str(r["id"]) for r in scifact(40)}


def test_compact_changes_no_text_and_keeps_the_snapshot(coll: Collection, db_path: Path) -> None:
    sidecar = sidecar_of(coll)
    before = sidecar.current(coll.store._rows)
    assert before is not None
    semsearch.connect(db_path).compact()  # FTS5 'optimize' rewrites its structure records
    snap = sidecar.current(coll.store._rows)
    assert snap is not None and not snap.live.caught_up  # the stamp moved, the text did not
    assert snap.live is before.live  # the same arrays, no rebuild
    for text in queries(10):
        assert_same(sidecar_path(coll, text, 10), fts5_path(coll, text, 10))


def test_format_3_file_rebuilds_without_a_log_until_a_write_adds_it(
    db_path: Path, fake_embedder
) -> None:
    with semsearch.connect(db_path) as db:
        db.collection("docs", schema=SCHEMA, embedder=fake_embedder).upsert(scifact(200))
    as_older_format(db_path, 3, ["record_changes"])  # no record change log
    with semsearch.connect(db_path) as db:
        coll = db.collection("docs", embedder=fake_embedder)
        sidecar = sidecar_of(coll)  # built with no log position
        assert sidecar._snapshot is not None and sidecar._snapshot.seq is None
        assert record_changes.position(coll.store._rows, sidecar.cid) is None
        for text in queries(10):
            assert_same(sidecar_path(coll, text, 10), fts5_path(coll, text, 10))
        coll.upsert(scifact(210)[200:])  # the write migrates: the log exists from here on
        assert record_changes.position(coll.store._rows, sidecar.cid) == 10
        text = str(scifact(210)[205]["title"])
        assert coll.search(text, mode="keyword", limit=10).ids == [
            i for i, _ in fts5_path(coll, text, 10)
        ]  # the old snapshot has no position to catch up from: FTS5, then a rebuild
        sidecar.wait(60)
        snap = sidecar.current(coll.store._rows)
        assert snap is not None and snap.seq == 10
