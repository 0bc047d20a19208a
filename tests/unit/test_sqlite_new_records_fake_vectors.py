"""Batched inserts of new records (stores/sqlite/new_records.py) leave the rows one-at-a-time
writes leave: same ids, chunks, keyword rows and change-log rows, in the caller's order.

Plumbing tests on real SQLite files with hand-made (fake) vectors.
"""

from __future__ import annotations

import sqlite3
from collections import Counter
from pathlib import Path

import numpy as np

import semsearch
from semsearch.results import Chunk
from semsearch.schema import Field, Schema
from semsearch.stores.base import ChunkWrite, CollectionInfo, RecordWrite, WriteResult
from semsearch.stores.sqlite.new_records import split_new
from semsearch.stores.sqlite.writes import write_record

SCHEMA = Schema(fields=(Field("title", "str"), Field("bucket", "int")))


def record(rid: str, text: str, bucket: int = 0, chunks: int = 1, tag: str = "") -> RecordWrite:
    """A record titled ``Title <rid>`` whose text opens with its title; chunk hashes name
    their text, so equal texts share a hash (and a vector)."""
    body = f"Title {rid}. {text}"
    pieces = [f"{text} part {k}" for k in range(chunks)]
    return RecordWrite(
        rid, {"title": f"Title {rid}", "bucket": bucket}, {"title": f"Title {rid}", "bucket": bucket},
        body, f"h-{rid}-{text}-{tag}",
        [ChunkWrite(Chunk(p, k, 0, len(p), heading_path=("H", str(k))), p, f"c-{p}")
         for k, p in enumerate(pieces)],
    )  # fmt: skip


def new_store(path: Path) -> semsearch.Database:
    db = semsearch.connect(path)
    db.store.create_collection(CollectionInfo("c", SCHEMA.to_json(), "fake:4", None, {}))
    return db


def one_at_a_time(db: semsearch.Database, records: list[RecordWrite]) -> WriteResult:
    """The per-record path of writes.py for every record (what write_records did before)."""
    out = WriteResult()
    with db.store._write("c") as conn:
        cid = db.store._collection_id(conn, "c")
        for r in records:
            write_record(conn, cid, r, out)
    return out


def dump(path: Path) -> dict[str, object]:
    """Every row the writes leave, timestamps aside; keyword tables probed by MATCH."""
    conn = sqlite3.connect(path)
    try:
        out: dict[str, object] = {
            "records": conn.execute(
                "SELECT rowid, collection_id, id, fields, attrs, text, content_hash FROM records "
                "ORDER BY rowid"
            ).fetchall(),
            "chunks": conn.execute("SELECT * FROM chunks ORDER BY id").fetchall(),
            "changes": Counter(conn.execute("SELECT collection_id, chunk_id, op FROM changes")),
            "record_changes": Counter(
                conn.execute("SELECT collection_id, record_rowid FROM record_changes")
            ),
        }
        for word in ["title", "alpha", "beta", "part", "r3"]:
            out[f"fts {word}"] = conn.execute(
                "SELECT rowid FROM fts_1 WHERE fts_1 MATCH ? ORDER BY rowid", (word,)
            ).fetchall()
            out[f"fts_rec {word}"] = conn.execute(
                "SELECT rowid, round(bm25(fts_rec_1, 2.0, 1.0), 9) FROM fts_rec_1 "
                "WHERE fts_rec_1 MATCH ? ORDER BY rowid",
                (word,),
            ).fetchall()
        return out
    finally:
        conn.close()


def test_split_new_keeps_order_and_sends_existing_and_repeated_ids_alone() -> None:
    recs = [record(i, "x") for i in ["a", "b", "old", "c", "a", "d"]]
    runs = [(new, [r.id for r in run]) for new, run in split_new(recs, {"old"})]
    assert runs == [(True, ["a", "b"]), (False, ["old"]), (True, ["c"]), (False, ["a"]),
                    (True, ["d"])]  # fmt: skip


def test_batched_insert_leaves_the_rows_of_one_at_a_time_writes(tmp_path: Path) -> None:
    first = [record(f"r{i}", "alpha beta" if i % 2 else "gamma", i % 3, chunks=1 + i % 3)
             for i in range(40)]  # fmt: skip
    second = [record(f"s{i}", "beta", chunks=2) for i in range(5)]
    results = []
    for name in ["batched", "single"]:
        db = new_store(tmp_path / f"{name}.embed.db")
        write = db.store.write_records if name == "batched" else None
        out = write("c", first) if write else one_at_a_time(db, first)
        # embed the first half of the pending chunks: the second write reuses their vectors
        pending = out.pending[: len(out.pending) // 2]
        vectors = np.eye(4, dtype=np.float32)[[p.chunk_id % 4 for p in pending]]
        db.store.set_vectors("c", [p.chunk_id for p in pending], vectors)
        again = [record(f"t{i}", "alpha beta", chunks=2) for i in range(3)] + second
        out2 = write("c", again) if write else one_at_a_time(db, again)
        results.append((out, out2))
        db.close()
    (b1, b2), (s1, s2) = results
    assert b1 == s1 and b2 == s2
    assert b2.reused > 0 and b2.added == 8  # the 't' records' chunks found embedded twins
    assert dump(tmp_path / "batched.embed.db") == dump(tmp_path / "single.embed.db")


def test_a_batch_mixing_new_existing_and_repeated_ids_counts_and_keeps_the_last(
    tmp_path: Path,
) -> None:
    db = new_store(tmp_path / "mixed.embed.db")
    db.store.write_records("c", [record("old", "first"), record("same", "kept")])
    batch = [
        record("n1", "new one"),
        record("old", "second"),  # changed: updated
        record("same", "kept"),  # same hash: unchanged
        record("n2", "new two"),
        record("n1", "new one again"),  # repeated in the batch: an update of the n1 just written
    ]
    out = db.store.write_records("c", batch)
    assert (out.added, out.updated, out.unchanged) == (2, 2, 1)
    got = {r.id: r.text for r in db.store.get_records("c", ["n1", "n2", "old", "same"])}
    assert got == {
        "n1": "Title n1. new one again",
        "n2": "Title n2. new two",
        "old": "Title old. second",
        "same": "Title same. kept",
    }
    hits = db.store.keyword_search("c", "again", 10, None)
    assert [h.record_id for h in hits] == ["n1"]
    assert db.store.keyword_search("c", "first", 10, None) == []  # old text unindexed
    db.close()


def test_reused_vectors_of_a_batch_are_searchable_at_once(tmp_path: Path) -> None:
    db = new_store(tmp_path / "reuse.embed.db")
    out = db.store.write_records("c", [record("a", "shared text")])
    db.store.set_vectors("c", [p.chunk_id for p in out.pending], np.eye(4, dtype=np.float32)[:1])
    assert db.store.vector_search("c", np.eye(4, dtype=np.float32)[0], 5, None)[0].record_id == "a"
    out = db.store.write_records("c", [record("b", "shared text"), record("z", "other")])
    assert out.reused == 1 and [p.record_id for p in out.pending] == ["z"]
    hits = db.store.vector_search("c", np.eye(4, dtype=np.float32)[0], 5, None)
    assert sorted(h.record_id for h in hits) == ["a", "b"]  # the cache caught up with 'b'
    assert {h.score for h in hits} == {1.0}
    db.close()
