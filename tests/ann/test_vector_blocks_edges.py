"""Format 6's vector blocks at their edges: several collections written in turn, churn, a
write that fails half-way, a second writer under a graph opened from its sidecar, compact,
in-memory databases and a format-5 file that is only read.

Every check compares with values computed here: the vectors the test set (rounded to float16
as the store documents), the blocks sliced by hand (tests/file_formats.py ``stored_blobs``)
and the slot book-keeping read with plain SQL (every slot ever handed out is either a live
chunk's or free, never both; every block has a live slot and its full size).
Plumbing: synthetic vectors set with ``set_vectors``; the fake embedder only sizes chunks.
"""

from __future__ import annotations

import os
import sqlite3
import stat
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

import semsearch
from semsearch.collection import Collection
from semsearch.embedders.fake import FakeEmbedder
from semsearch.errors import DimensionMismatch
from semsearch.stores.sqlite import vector_blocks
from tests.ann import synthetic as syn
from tests.file_formats import BLOCK, as_older_format, stored_blobs

K = 10


def unit(rng: np.random.Generator, n: int, dim: int) -> np.ndarray:
    x = rng.standard_normal((n, dim)).astype(np.float32)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def half(v: np.ndarray) -> np.ndarray:
    return v.astype(np.float16).astype(np.float32)


class Model:
    """A collection and the vector each of its records should have (None: not embedded)."""

    def __init__(self, db: semsearch.Database, name: str, dim: int) -> None:
        self.coll = db.collection(name, schema=syn.SCHEMA, embedder=FakeEmbedder(dim))
        self.name, self.dim = name, dim
        self.expected: dict[str, np.ndarray] = {}
        self.texts: dict[str, str] = {}

    def write(self, texts: dict[str, str], vectors: np.ndarray) -> None:
        """Upsert records ``{id: text}``; set vectors (row k for the k-th record) on the chunks
        left pending; a chunk that reused a vector by content hash keeps that one."""
        records = [{"id": rid, "text": t, "bucket": 1} for rid, t in texts.items()]
        self.coll.upsert(records, embed=False)
        row = {rid: k for k, rid in enumerate(texts)}
        by_text = {t: self.expected[r] for r, t in self.texts.items() if r in self.expected}
        for rid, t in texts.items():
            self.texts[rid] = t
            if t in by_text:  # reused by hash: same text, same vector (the store's promise)
                self.expected[rid] = by_text[t]
        pending = self.coll.store.pending_chunks(self.name, len(texts) + 10)
        if pending:
            pending = [p for p in pending if p.record_id in row]
            picked = [row[p.record_id] for p in pending]
            self.coll.store.set_vectors(self.name, [p.chunk_id for p in pending], vectors[picked])
            for p, k in zip(pending, picked, strict=True):
                self.expected[p.record_id] = vectors[k]
                by_text.setdefault(texts[p.record_id], vectors[k])

    def delete(self, ids: list[str]) -> None:
        self.coll.delete(ids)
        for rid in ids:
            self.expected.pop(rid, None)
            self.texts.pop(rid, None)

    def check_search(self, query: np.ndarray) -> None:
        names = sorted(self.expected)
        matrix = half(np.stack([self.expected[r] for r in names]))
        scores = matrix @ query
        order = sorted(range(len(names)), key=lambda i: (-scores[i], names[i]))[:K]
        hits = self.coll.store.vector_search(self.name, query, K, None, True)
        # records reused by content hash tie exactly: which of them fill the last places is
        # not compared, only that every hit is live with its own vector's score
        assert np.allclose([h.score for h in hits], scores[order], atol=1e-5)
        at = {r: i for i, r in enumerate(names)}
        for h in hits:
            assert abs(h.score - float(scores[at[h.record_id]])) < 1e-5
        strict = [names[i] for i in order if scores[i] > scores[order[-1]] + 1e-6]
        assert [h.record_id for h in hits][: len(strict)] == strict


def check_books(db_path: Path | str, conn: sqlite3.Connection | None = None) -> None:
    """The slot book-keeping is consistent for every collection of the file."""
    own = conn is None
    conn = conn or sqlite3.connect(db_path)
    try:
        for cid, dim in conn.execute("SELECT id, dim FROM collections").fetchall():
            used = [
                int(r[0])
                for r in conn.execute(
                    "SELECT vector_slot FROM chunks WHERE collection_id = ? "
                    "AND vector_slot IS NOT NULL",
                    (cid,),
                )
            ]
            free = [
                int(r[0])
                for r in conn.execute(
                    "SELECT slot FROM vector_slots_free WHERE collection_id = ?", (cid,)
                )
            ]
            row = conn.execute(
                "SELECT next FROM vector_slots_next WHERE collection_id = ?", (cid,)
            ).fetchone()
            issued = int(row[0]) if row else 0
            assert len(set(used)) == len(used), "a slot held by two chunks"
            assert not set(used) & set(free), "a used slot is also free"
            assert sorted(used + free) == list(range(issued)), "a slot leaked"
            blocks = dict(
                conn.execute(
                    "SELECT block, length(vectors) FROM vector_blocks WHERE collection_id = ?",
                    (cid,),
                ).fetchall()
            )
            assert set(blocks) == {s // BLOCK for s in used}, "an empty block kept or one lost"
            assert set(blocks.values()) <= {BLOCK * 2 * int(dim or 0)}
        orphans = conn.execute(
            "SELECT COUNT(*) FROM vector_blocks WHERE collection_id NOT IN "
            "(SELECT id FROM collections)"
        ).fetchone()[0]
        assert orphans == 0
    finally:
        if own:
            conn.close()


def check_stored(db_path: Path, models: list[Model]) -> None:
    """Each record's stored bytes (sliced by hand) are its expected vector as float16."""
    conn = sqlite3.connect(db_path)
    blobs = stored_blobs(conn)
    owner = {
        int(c): (n, r)
        for c, n, r in conn.execute(
            "SELECT k.id, c.name, r.id FROM chunks k JOIN records r ON r.rowid = k.record_rowid "
            "JOIN collections c ON c.id = k.collection_id"
        )
    }
    conn.close()
    got = {owner[c]: b for c, b in blobs.items()}
    want = {
        (m.name, rid): v.astype("<f2").tobytes() for m in models for rid, v in m.expected.items()
    }
    assert got == want


def test_fake_vectors_collections_written_in_turn_with_churn_keep_their_own_slots(
    db_path: Path,
) -> None:
    rng = np.random.default_rng(7)
    with semsearch.connect(db_path) as db:
        models = [Model(db, "a", 8), Model(db, "b", 24), Model(db, "c", 7)]
        serial = 0
        for step in range(6):
            for m in models:  # 0..599 records each, written alternately in chunks of 100
                ids = [f"{m.name}{i:04d}" for i in range(step * 100, step * 100 + 100)]
                m.write({rid: rid for rid in ids}, unit(rng, len(ids), m.dim))
            check_books(db_path)
        for round_ in range(4):
            for m in models:
                names = sorted(m.expected)
                pick = rng.permutation(len(names))
                gone = [names[i] for i in pick[:120]]
                changed = [names[i] for i in pick[120:200]]
                m.delete(gone)
                # changed texts (new chunks, new vectors), some copying another record's
                # text (a vector reused by content hash)
                texts = {}
                for k, rid in enumerate(changed):
                    serial += 1
                    texts[rid] = m.texts[names[pick[200]]] if k % 10 == 0 else f"t{serial}"
                m.write(texts, unit(rng, len(texts), m.dim))
                # re-add some deleted ones
                m.write({rid: f"back{round_}{rid}" for rid in gone[:60]}, unit(rng, 60, m.dim))
                check_books(db_path)
        check_stored(db_path, models)
        for m in models:
            for q in unit(rng, 3, m.dim):
                m.check_search(q)
            exported = m.coll.vectors(sorted(m.expected))
            for rid, v in m.expected.items():
                (got,) = exported[rid]
                assert got is not None and got.tobytes() == half(v).tobytes()


def test_fake_vectors_a_write_failing_half_way_leaves_no_slot_or_byte_changed(
    db_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rng = np.random.default_rng(8)
    with semsearch.connect(db_path) as db:
        m = Model(db, "a", 16)
        m.write({f"r{i}": f"r{i}" for i in range(600)}, unit(rng, 600, 16))
        m.delete([f"r{i}" for i in range(0, 600, 3)])  # free slots in every block
        m.coll.upsert(
            [{"id": f"n{i}", "text": f"n{i}", "bucket": 1} for i in range(400)], embed=False
        )
        check_books(db_path)
        before = (stored_blobs(sqlite3.connect(db_path)), tables(db_path))
        pending = m.coll.store.pending_chunks("a", 1000)
        assert len(pending) == 400

        real = vector_blocks._write_slots
        calls = []

        def fail_after_writing(*args: object, **kwargs: object) -> None:
            real(*args, **kwargs)  # type: ignore[arg-type]
            calls.append(1)
            raise RuntimeError("disk on fire")

        monkeypatch.setattr(vector_blocks, "_write_slots", fail_after_writing)
        with pytest.raises(RuntimeError, match="disk on fire"):
            m.coll.store.set_vectors("a", [p.chunk_id for p in pending], unit(rng, 400, 16))
        assert calls == [1]
        monkeypatch.undo()
        with pytest.raises(DimensionMismatch):
            m.coll.store.set_vectors("a", [p.chunk_id for p in pending], unit(rng, 400, 8))
        assert (stored_blobs(sqlite3.connect(db_path)), tables(db_path)) == before
        check_books(db_path)
        vectors = unit(rng, 400, 16)
        m.coll.store.set_vectors("a", [p.chunk_id for p in pending], vectors)
        for p, v in zip(pending, vectors, strict=True):
            m.expected[p.record_id] = v
        check_books(db_path)
        check_stored(db_path, [m])
        m.check_search(unit(rng, 1, 16)[0])


def tables(db_path: Path) -> list[list[tuple[object, ...]]]:
    conn = sqlite3.connect(db_path)
    try:
        queries = [
            "SELECT * FROM vector_blocks ORDER BY 1",
            "SELECT * FROM vector_slots_free ORDER BY 1, 2",
            "SELECT * FROM vector_slots_next ORDER BY 1",
            "SELECT id, status, vector_slot FROM chunks ORDER BY id",
        ]
        return [conn.execute(q).fetchall() for q in queries]
    finally:
        conn.close()


def test_fake_vectors_the_same_chunk_twice_in_one_set_vectors_keeps_one_slot(
    db_path: Path,
) -> None:
    rng = np.random.default_rng(9)
    with semsearch.connect(db_path) as db:
        m = Model(db, "a", 8)
        m.coll.upsert([{"id": "x", "text": "x", "bucket": 1}], embed=False)
        (p,) = m.coll.store.pending_chunks("a", 10)
        v = unit(rng, 2, 8)
        m.coll.store.set_vectors("a", [p.chunk_id, p.chunk_id], v)
        m.expected["x"] = v[1]  # the later row wins, as an UPDATE per row would
        check_books(db_path)
        check_stored(db_path, [m])


@pytest.fixture
def memory_db() -> Iterator[semsearch.Database]:
    db = semsearch.connect(":memory:")
    try:
        yield db
    finally:
        db.close()


def test_fake_vectors_an_in_memory_database_packs_reuses_and_searches(
    memory_db: semsearch.Database,
) -> None:
    rng = np.random.default_rng(10)
    m = Model(memory_db, "a", 12)
    m.write({f"r{i}": f"r{i}" for i in range(700)}, unit(rng, 700, 12))
    m.delete([f"r{i}" for i in range(0, 700, 2)])
    m.write({f"s{i}": f"s{i}" for i in range(300)}, unit(rng, 300, 12))
    for q in unit(rng, 3, 12):
        m.check_search(q)
    exported = m.coll.vectors(sorted(m.expected))
    assert {r: v[0].tobytes() for r, v in exported.items()} == {  # type: ignore[union-attr]
        r: half(v).tobytes() for r, v in m.expected.items()
    }


def test_fake_vectors_compact_keeps_every_vector_and_search(db_path: Path) -> None:
    rng = np.random.default_rng(11)
    with semsearch.connect(db_path) as db:
        a, b = Model(db, "a", 8), Model(db, "b", 20)
        for m in (a, b):
            m.write({f"r{i}": f"r{i}" for i in range(900)}, unit(rng, 900, m.dim))
            m.delete([f"r{i}" for i in range(100, 700)])
        db.compact()
        check_books(db_path)
        check_stored(db_path, [a, b])
        for m in (a, b):
            m.check_search(unit(rng, 1, m.dim)[0])
            m.write({f"z{i}": f"z{i}" for i in range(500)}, unit(rng, 500, m.dim))
            m.check_search(unit(rng, 1, m.dim)[0])
        check_books(db_path)
        check_stored(db_path, [a, b])


def test_fake_vectors_dropping_then_recreating_a_collection_starts_its_slots_afresh(
    db_path: Path,
) -> None:
    rng = np.random.default_rng(12)
    with semsearch.connect(db_path) as db:
        a = Model(db, "a", 8)
        a.write({f"r{i}": f"r{i}" for i in range(300)}, unit(rng, 300, 8))
        assert db.drop_collection("a")
        a = Model(db, "a", 16)  # another dim: blocks of another size
        a.write({f"r{i}": f"r{i}" for i in range(100)}, unit(rng, 100, 16))
        check_books(db_path)
        check_stored(db_path, [a])
        a.check_search(unit(rng, 1, 16)[0])


def test_fake_vectors_reembed_to_another_dim_swaps_in_the_shadow_blocks(db_path: Path) -> None:
    from semsearch.reembed import reembed

    rng = np.random.default_rng(13)
    with semsearch.connect(db_path) as db:
        a = Model(db, "a", 8)
        a.write({f"r{i}": f"r{i}" for i in range(300)}, unit(rng, 300, 8))
        a.delete([f"r{i}" for i in range(50)])
        report = reembed(db, "a", FakeEmbedder(20))
        assert report.swapped
        check_books(db_path)
        coll = db.collection("a")
        exported = coll.vectors([f"r{i}" for i in range(300)])
        assert sorted(exported) == sorted(a.expected)
        want = FakeEmbedder(20).embed_documents(sorted(exported))
        for k, rid in enumerate(sorted(exported)):
            (v,) = exported[rid]
            assert v is not None and v.tobytes() == half(np.asarray(want[k])).tobytes()
        a.coll = coll
        a.expected = {r: np.asarray(want[k]) for k, r in enumerate(sorted(exported))}
        a.dim = 20
        check_stored(db_path, [a])
        a.check_search(unit(rng, 1, 20)[0])


@pytest.mark.parametrize("version", [5, 6])
def test_fake_vectors_a_file_in_a_read_only_folder_is_read_never_written(
    tmp_path: Path, version: int
) -> None:
    folder = tmp_path / "ro"
    folder.mkdir()
    path = folder / "x.embed.db"
    rng = np.random.default_rng(14)
    with semsearch.connect(path) as db:
        m = Model(db, "a", 8)
        m.write({f"r{i}": f"r{i}" for i in range(400)}, unit(rng, 400, 8))
        m.delete([f"r{i}" for i in range(0, 400, 3)])  # free slots
    as_older_format(path, version, [])
    before = {p.name: p.read_bytes() for p in folder.iterdir()}
    os.chmod(folder, stat.S_IRUSR | stat.S_IXUSR)
    os.chmod(path, stat.S_IRUSR)
    try:
        with semsearch.connect(path) as db:
            m.coll = db.collection("a")
            for q in unit(rng, 3, 8):
                m.check_search(q)
            exported = m.coll.vectors(sorted(m.expected))
            assert {r: v[0].tobytes() for r, v in exported.items()} == {  # type: ignore[union-attr]
                r: half(v).tobytes() for r, v in m.expected.items()
            }
    finally:
        os.chmod(folder, stat.S_IRWXU)
        os.chmod(path, stat.S_IRUSR | stat.S_IWUSR)
    assert {p.name: p.read_bytes() for p in folder.iterdir()} == before


def _open_with_graph(db_path: Path) -> tuple[semsearch.Database, Collection]:
    db = semsearch.connect(db_path)
    coll = db.collection("vecs")
    return db, coll


def check_graph_search(coll: Collection, live: dict[str, np.ndarray], query: np.ndarray) -> None:
    """Graph search: no deleted record, each score the float16 dot product of the record's
    current vector, and most of the exact top-k found."""
    hits = coll.store.vector_search(coll.name, query, K, None)
    assert len(hits) == K
    for h in hits:
        assert h.record_id in live, f"deleted record {h.record_id} returned"
        want = min(1.0, float(half(live[h.record_id]) @ query))  # scores are clipped to 1
        assert abs(h.score - want) < 1e-4
    names = sorted(live)
    scores = half(np.stack([live[r] for r in names])) @ query
    best = {names[i] for i in np.argsort(-scores, kind="stable")[:K]}
    assert len(best & {h.record_id for h in hits}) >= K - 3


@pytest.mark.parametrize(
    ("prune", "ann"),
    [
        (False, {}),
        (True, {}),
        (False, {"codes_in_graph": True}),
        (False, {"storage": "int8"}),
        (True, {"storage": "int8"}),
    ],
    ids=["log", "compacted", "codes-in-graph", "int8", "int8-compacted"],
)
def test_fake_vectors_a_sidecar_whose_slots_were_reused_by_another_writer_returns_no_dead_record(
    db_path: Path, prune: bool, ann: dict[str, object], monkeypatch: pytest.MonkeyPatch
) -> None:
    from semsearch.ann import file as ann_file
    from semsearch.ann import rows as ann_rows

    n, dim = 3000, 16
    vectors = syn.build_with_sidecar(db_path, n, dim, threshold=1000, **ann)
    car = ann_file.read_sidecar(ann_file.ann_path(str(db_path), 1), {})
    with_slots = not ann
    assert (car.slots is not None) == with_slots
    conn = sqlite3.connect(db_path)
    saved_slots = dict(conn.execute("SELECT id, vector_slot FROM chunks").fetchall())
    conn.close()
    filled: list[int] = []
    real_fill = ann_rows.fill_by_slot

    def counting_fill(*args: object) -> None:
        filled.append(1)
        real_fill(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(ann_rows, "fill_by_slot", counting_fill)
    live = {syn.name(i): vectors[i] for i in range(n)}
    rng = np.random.default_rng(15)
    reader, coll = _open_with_graph(db_path)
    try:
        check_graph_search(coll, live, vectors[5])  # the graph is open in this process
        # another writer: delete 600 records, add 600 new ones (they take the freed slots,
        # some with the deleted records' vectors' neighbours) and change 100 in place
        with semsearch.connect(db_path) as db:
            w = db.collection("vecs")
            gone = [syn.name(i) for i in range(0, 1200, 2)]
            w.delete(gone)
            for g in gone:
                live.pop(g)
            fresh = -unit(rng, 600, dim)  # far from the old ones: a wrong code shows
            ids = list(range(n, n + 600))
            syn.write(w, fresh, ids)
            live.update({syn.name(i): fresh[k] for k, i in enumerate(ids)})
            if prune:
                db.compact()
        conn = sqlite3.connect(db_path)
        check_books(db_path, conn)
        now = dict(conn.execute("SELECT id, vector_slot FROM chunks").fetchall())
        conn.close()
        dead_slots = {saved_slots[c] for c in saved_slots if c not in now}
        assert len(dead_slots) == 600
        reused = [c for c, s in now.items() if s in dead_slots]
        assert len(reused) == 600  # every freed slot went to a new chunk
        assert not any(saved_slots.get(c) == now[c] for c in reused)  # under other chunks
        for q in [*vectors[:6], *fresh[:6]]:
            check_graph_search(coll, live, q)  # the first process catches up
        other, coll2 = _open_with_graph(db_path)  # a new process opens the old sidecar
        try:
            for q in [*vectors[:6], *fresh[:6]]:
                check_graph_search(coll2, live, q)
            assert bool(filled) == with_slots  # the old sidecar's slots, block by block
        finally:
            other.close()
    finally:
        reader.close()


def test_fake_vectors_migrating_interleaved_collections_of_three_dims_in_small_batches(
    db_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rng = np.random.default_rng(16)
    with semsearch.connect(db_path) as db:
        models = [Model(db, "a", 8), Model(db, "b", 24), Model(db, "c", 7)]
        for step in range(5):  # chunk ids interleave the collections
            for m in models:
                ids = [f"{m.name}{i:04d}" for i in range(step * 70, step * 70 + 70)]
                m.write({rid: rid for rid in ids}, unit(rng, len(ids), m.dim))
        for m in models:
            m.delete([f"{m.name}{i:04d}" for i in range(0, 350, 4)])
            m.coll.upsert([{"id": f"{m.name}-pending", "text": "p", "bucket": 1}], embed=False)
    as_older_format(db_path, 5, [])
    monkeypatch.setattr(vector_blocks, "MIGRATE_BATCH", 50)
    with semsearch.connect(db_path) as db:
        for m in models:
            m.coll = db.collection(m.name)
        models[0].write({"late": "late"}, unit(rng, 1, 8))  # the write that migrates
        check_books(db_path)
        check_stored(db_path, models)
        for m in models:
            m.check_search(unit(rng, 1, m.dim)[0])
            assert m.coll.vectors([f"{m.name}-pending"]) == {f"{m.name}-pending": [None]}
        conn = sqlite3.connect(db_path)
        per = dict(
            conn.execute(
                "SELECT c.name, MAX(k.vector_slot) + 1 FROM chunks k "
                "JOIN collections c ON c.id = k.collection_id GROUP BY c.name"
            ).fetchall()
        )
        conn.close()
        assert per == {m.name: len(m.expected) for m in models}  # packed densely from 0


def held(db_path: Path) -> dict[int, tuple[str, str, int, bytes]]:
    """{chunk id: (content hash, record id, ordinal, stored bytes)} for embedded chunks."""
    conn = sqlite3.connect(db_path)
    blobs = stored_blobs(conn)
    rows = conn.execute(
        "SELECT k.id, k.content_hash, r.id, k.ordinal FROM chunks k "
        "JOIN records r ON r.rowid = k.record_rowid"
    ).fetchall()
    conn.close()
    assert set(blobs) == {r[0] for r in rows}  # every chunk embedded
    return {int(c): (h, rid, int(o), blobs[int(c)]) for c, h, rid, o in rows}


def test_fake_vectors_records_of_many_chunks_churn_chunk_by_chunk(db_path: Path) -> None:
    rng = np.random.default_rng(17)
    words = [f"w{i}" for i in range(5000)]
    by_hash: dict[str, set[bytes]] = {}  # content hash: every value set for it
    reused = 0
    with semsearch.connect(db_path) as db:
        coll = db.collection("a", schema=syn.SCHEMA, embedder=FakeEmbedder(12))
        before: dict[int, tuple[str, str, int, bytes]] = {}
        for round_ in range(4):
            ids = list(range(200))
            if round_:
                gone = [int(i) for i in rng.choice(200, 40, replace=False)]
                coll.delete([f"r{i}" for i in gone])
                changed = [int(i) for i in rng.choice(200, 30, replace=False)]
                ids = sorted(set(changed) | set(gone))
            texts = {
                f"r{i}": " ".join(
                    words[(i * 37 + round_ + k) % 5000] for k in range(30 + 60 * (i % 7))
                )
                for i in ids
            }
            coll.upsert([{"id": r, "text": t, "bucket": 1} for r, t in texts.items()], embed=False)
            pending = coll.store.pending_chunks("a", 100_000)
            values = unit(rng, len(pending), 12)
            coll.store.set_vectors("a", [p.chunk_id for p in pending], values)
            set_now = {
                p.chunk_id: v.astype("<f2").tobytes() for p, v in zip(pending, values, strict=True)
            }
            after = held(db_path)
            for c, v in set_now.items():
                by_hash.setdefault(after[c][0], set()).add(v)
            for c, (h, rid, ordinal, blob) in after.items():
                if c in set_now:
                    assert blob == set_now[c]
                    continue
                assert blob in by_hash[h]  # reused by content hash, or kept
                if before.get(c, ("",))[:3] == (h, rid, ordinal) and len(by_hash[h]) == 1:
                    assert blob == before[c][3]
                elif c not in before:
                    reused += 1
            check_books(db_path)
            before = after
        assert reused > 0
        exported = coll.vectors([f"r{i}" for i in range(200)])
        got = {
            (r, k): v.tobytes()
            for r, vs in exported.items()
            for k, v in enumerate(vs)
            if v is not None
        }
        assert got == {
            (rid, ordinal): np.frombuffer(blob, "<f2").astype(np.float32).tobytes()
            for _, rid, ordinal, blob in after.values()
        }


def test_plumbing_two_writers_migrating_at_once_both_write(
    db_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Writer A moves a batch and commits; while it pauses between batches, writer B takes
    the lock, finishes the migration and records format 6. A's loop then finds nothing left:
    its write must go on (it used to fail recording format 6 a second time)."""
    import threading
    import time

    vectors = syn.clustered(600, 8, seed=18)
    with semsearch.connect(db_path) as db:
        syn.write(syn.open_collection(db, 8), vectors, list(range(600)))
    as_older_format(db_path, 5, [])
    monkeypatch.setattr(vector_blocks, "MIGRATE_BATCH", 100)
    paused = threading.Event()

    def pause_a(done: int) -> None:
        if threading.current_thread().name == "A" and done == 100:
            paused.set()
            time.sleep(1.0)  # B gets the write lock meanwhile

    monkeypatch.setattr(vector_blocks, "after_batch", pause_a)
    errors: dict[str, str] = {}

    def write(name: str) -> None:
        try:
            with semsearch.connect(db_path) as db:
                db.collection("vecs").upsert([{"id": name, "text": name, "bucket": 1}], embed=False)
        except Exception as exc:  # reported below
            errors[name] = repr(exc)

    a = threading.Thread(target=write, args=("A",), name="A")
    a.start()
    assert paused.wait(30)
    b = threading.Thread(target=write, args=("B",), name="B")
    b.start()
    a.join(60)
    b.join(60)
    assert errors == {}
    with semsearch.connect(db_path) as db:
        coll = db.collection("vecs")
        assert coll.count() == 602
        assert coll.vectors(["A", "B"]) == {"A": [None], "B": [None]}
        q = syn.clustered(1, 8, seed=19)[0]
        hits = coll.store.vector_search("vecs", q, K, None, True)
        assert [h.record_id for h in hits] == syn.exact_top(vectors, np.ones(600, bool), q, K)
    check_books(db_path)


class FlakyEmbedder(FakeEmbedder):
    """Fails from its ``fail_from``-th batch on; then ``fail_from`` can be raised again."""

    def __init__(self, dim: int, fail_from: int) -> None:
        super().__init__(dim)
        self.fail_from = fail_from

    def _embed_batch(self, texts: list[str], kind: object) -> np.ndarray:
        from semsearch.errors import EmbedderUnavailable

        if self.calls >= self.fail_from:
            raise EmbedderUnavailable("flaky", hint="retry")
        return super()._embed_batch(texts, kind)  # type: ignore[arg-type]


def test_fake_vectors_an_embedder_failing_half_way_leaves_consistent_slots(
    db_path: Path,
) -> None:
    flaky = FlakyEmbedder(16, fail_from=8)  # 8 batches of 32: the first group
    with semsearch.connect(db_path) as db:
        coll = db.collection("a", schema=syn.SCHEMA, embedder=flaky)
        records = [{"id": f"r{i}", "text": f"alpha r{i} beta", "bucket": 1} for i in range(300)]
        coll.upsert(records)  # reports the failure; the rest stays pending or failed
        check_books(db_path)
        stats = coll.stats()
        assert 0 < stats.pending + stats.failed < 300
        coll.delete([f"r{i}" for i in range(0, 300, 2)])  # frees slots among the embedded
        check_books(db_path)
        flaky.fail_from = 10**6
        coll.reindex()
        coll.upsert([{"id": f"s{i}", "text": f"gamma s{i}", "bucket": 1} for i in range(200)])
        check_books(db_path)
        live = [f"r{i}" for i in range(1, 300, 2)] + [f"s{i}" for i in range(200)]
        texts = {f"r{i}": f"alpha r{i} beta" for i in range(300)}
        texts.update({f"s{i}": f"gamma s{i}" for i in range(200)})
        want = FakeEmbedder(16).embed_documents([texts[r] for r in live])
        exported = coll.vectors(live)
        for k, rid in enumerate(live):
            (v,) = exported[rid]
            assert v is not None and v.tobytes() == half(np.asarray(want[k])).tobytes()


def test_fake_vectors_a_deleted_records_vector_is_gone_from_the_file_after_compact(
    db_path: Path,
) -> None:
    """Format 5 deleted a vector with its row, so ``compact`` (VACUUM) left no copy in the file;
    a freed slot in a block that stays (it has live slots) must not keep the value either."""
    rng = np.random.default_rng(20)
    with semsearch.connect(db_path) as db:
        m = Model(db, "a", 16)
        vectors = unit(rng, 600, 16)
        m.write({f"r{i}": f"r{i}" for i in range(600)}, vectors)
        gone = list(range(0, 600, 2))
        m.delete([f"r{i}" for i in gone])
        db.compact()
        check_books(db_path)
        check_stored(db_path, [m])
        m.check_search(unit(rng, 1, 16)[0])
    raw = b"".join(p.read_bytes() for p in db_path.parent.iterdir() if p.is_file())
    kept = [i for i in gone if vectors[i].astype("<f2").tobytes() in raw]
    assert kept == []
    # (the live ones are checked above: a vector can straddle an overflow page's header)


def test_plumbing_stored_vectors_of_a_chunk_id_now_in_another_collection_are_zeros(
    db_path: Path,
) -> None:
    """Chunk ids are MAX(id) + 1 across the file: a deleted chunk's id can come back in another
    collection. Read by id for collection A (a search's snapshot), it has no vector in A: zeros,
    not A's vector at the other collection's slot number."""
    from semsearch.stores.sqlite.vectors import stored_vectors

    rng = np.random.default_rng(21)
    with semsearch.connect(db_path) as db:
        a, b = Model(db, "a", 8), Model(db, "b", 8)
        b.write({"b0": "b0"}, unit(rng, 1, 8))
        a.write({f"r{i}": f"r{i}" for i in range(300)}, unit(rng, 300, 8))
        conn = sqlite3.connect(db_path)
        (last,) = conn.execute("SELECT MAX(id) FROM chunks").fetchone()
        a.delete(["r299"])
        b.write({"b1": "b1"}, unit(rng, 1, 8))
        owner = conn.execute("SELECT collection_id, vector_slot FROM chunks WHERE id = ?", (last,))
        cid_b, slot = owner.fetchone()
        (cid_a,) = conn.execute("SELECT id FROM collections WHERE name = 'a'").fetchone()
        conn.close()
        assert cid_b != cid_a and slot == 1  # the id came back in b, at b's slot 1
        got = stored_vectors(a.coll.store, cid_a, np.array([last, last - 1], np.int64), 8)
        assert not got[0].any()
        assert got[1].tobytes() == half(a.expected["r298"]).tobytes()


@pytest.mark.parametrize("extra", [1, -1])
def test_plumbing_set_vectors_with_one_vector_too_many_or_few_writes_nothing(
    db_path: Path, extra: int
) -> None:
    rng = np.random.default_rng(22)
    with semsearch.connect(db_path) as db:
        m = Model(db, "a", 8)
        m.write({"x": "x"}, unit(rng, 1, 8))
        m.coll.upsert(
            [{"id": f"p{i}", "text": f"p{i}", "bucket": 1} for i in range(3)], embed=False
        )
        before = tables(db_path)
        ids = [p.chunk_id for p in m.coll.store.pending_chunks("a", 10)]
        with pytest.raises(DimensionMismatch, match="chunk ids") as info:
            m.coll.store.set_vectors("a", ids, unit(rng, len(ids) + extra, 8))
        assert "one vector row per chunk id" in (info.value.hint or "")
        assert tables(db_path) == before
        check_books(db_path)


def test_fake_vectors_reordered_paragraphs_reuse_their_vectors_in_freed_slots(
    db_path: Path,
) -> None:
    """A record rewritten with its paragraphs in another order: its chunks are deleted (slots
    freed and cleared) and inserted again in the same transaction, each reusing its vector by
    content hash, possibly in the slot it just left."""
    paragraphs = [" ".join(f"p{k}w{i}" for i in range(50)) for k in range(4)]

    def by_text(coll: Collection) -> dict[str, bytes]:
        conn = sqlite3.connect(db_path)
        blobs = stored_blobs(conn)
        texts = dict(conn.execute("SELECT id, text FROM chunks").fetchall())
        conn.close()
        return {texts[c]: b for c, b in blobs.items()}

    with semsearch.connect(db_path) as db:
        coll = db.collection("a", schema=syn.SCHEMA, embedder=FakeEmbedder(16))
        coll.upsert([{"id": "x", "text": "\n\n".join(paragraphs), "bucket": 1}])
        coll.upsert([{"id": "y", "text": "other words entirely", "bucket": 1}])
        first = by_text(coll)
        assert len(first) >= 5
        report = coll.upsert(
            [{"id": "x", "text": "\n\n".join(paragraphs[::-1]), "bucket": 1}], embed=False
        )
        assert coll.stats().pending == 0, report
        check_books(db_path)
        after = by_text(coll)
        assert after == {t: first[t] for t in after}
        assert set(after) == set(first)


def test_fake_vectors_a_graph_without_codes_opens_in_a_read_only_folder(tmp_path: Path) -> None:
    folder = tmp_path / "ro"
    folder.mkdir()
    path = folder / "x.embed.db"
    n, dim = 2000, 16
    vectors = syn.build_with_sidecar(path, n, dim, threshold=1000)
    with semsearch.connect(path) as db:  # churn after the save: the catch-up must cover it
        coll = db.collection("vecs")
        coll.delete([syn.name(i) for i in range(0, 400, 2)])
        fresh = -unit(np.random.default_rng(23), 200, dim)
        syn.write(coll, fresh, list(range(n, n + 200)))
    live = {syn.name(i): vectors[i] for i in range(n) if not (i < 400 and i % 2 == 0)}
    live.update({syn.name(n + k): fresh[k] for k in range(200)})
    before = {p.name: p.read_bytes() for p in folder.iterdir()}
    os.chmod(folder, stat.S_IRUSR | stat.S_IXUSR)
    try:
        with semsearch.connect(path) as db:
            coll = db.collection("vecs")
            for q in [*vectors[:4], *fresh[:4]]:
                check_graph_search(coll, live, q)
            assert next(iter(coll.store._cache.values())).state.graph is not None
    finally:
        os.chmod(folder, stat.S_IRWXU)
    assert {p.name: p.read_bytes() for p in folder.iterdir()} == before
