"""Format 6: chunk vectors packed in blocks of 256 slots, and its migration (issue 23).

A file of format 5 (vectors inline in ``chunks.vector``, made here from a fresh file by moving
them back by hand) opens and searches with its main file byte for byte unchanged; a write
migrates it; a process killed in the middle of the migration (SIGKILL at the migration's
batch hook, in a real second process) leaves a readable, correct file that the next write
finishes. Slots of deleted chunks are handed out again, so churn does not grow the blocks,
and an HNSW graph saved without codes gets them back from the blocks, bit for bit.

Expected values come from numpy on the vectors the test wrote (rounded to float16 as the
store documents) and from the blocks sliced by hand (tests/file_formats.py).
Plumbing: synthetic clustered vectors, the fake embedder only sizes chunks.
"""

from __future__ import annotations

import hashlib
import signal
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np

import semsearch
from semsearch.stores.sqlite.schema import SCHEMA_VERSION
from tests.ann import synthetic as syn
from tests.file_formats import BLOCK, as_older_format, stored_blobs

N, DIM, K = 1200, 24, 10


def fresh_file(db_path: Path, n: int = N, **ann: object) -> np.ndarray:
    vectors = syn.clustered(n, DIM, seed=41)
    with semsearch.connect(db_path) as db:
        syn.write(syn.open_collection(db, DIM, **ann), vectors, list(range(n)))
    return vectors


def layout(db_path: Path) -> tuple[int, int, int]:
    """(format version, chunks with an inline vector, chunks with a slot) from the file."""
    conn = sqlite3.connect(f"file:{db_path}?mode=ro", uri=True)
    version = int(conn.execute("SELECT MAX(version) FROM semsearch_migrations").fetchone()[0])
    inline = conn.execute("SELECT COUNT(*) FROM chunks WHERE vector IS NOT NULL").fetchone()[0]
    columns = {r[1] for r in conn.execute("PRAGMA table_info(chunks)")}
    packed = 0
    if "vector_slot" in columns:
        packed = conn.execute(
            "SELECT COUNT(*) FROM chunks WHERE vector IS NULL AND vector_slot IS NOT NULL"
        ).fetchone()[0]
    conn.close()
    return version, int(inline), int(packed)


def by_record(db_path: Path) -> dict[str, bytes]:
    """{record id: its one chunk's stored vector bytes}, read by hand."""
    conn = sqlite3.connect(db_path)
    blobs = stored_blobs(conn)
    names = dict(
        conn.execute("SELECT k.id, r.id FROM chunks k JOIN records r ON r.rowid = k.record_rowid")
    )
    conn.close()
    return {names[c]: b for c, b in blobs.items()}


def top(vectors: np.ndarray, query: np.ndarray) -> list[str]:
    half = vectors.astype(np.float16).astype(np.float32)
    return [syn.name(int(i)) for i in np.argsort(-(half @ query), kind="stable")[:K]]


def found(coll, query: np.ndarray, exact: bool = True) -> list[str]:
    return [h.record_id for h in coll.store.vector_search(coll.name, query, K, None, exact)]


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_fake_vectors_a_new_file_keeps_each_vector_once_in_a_block_as_float16(
    db_path: Path,
) -> None:
    vectors = fresh_file(db_path)
    assert layout(db_path) == (SCHEMA_VERSION, 0, N)
    held = by_record(db_path)
    assert {k: v for k, v in held.items()} == {
        syn.name(i): vectors[i].astype("<f2").tobytes() for i in range(N)
    }
    conn = sqlite3.connect(db_path)
    blocks = conn.execute("SELECT COUNT(*), SUM(length(vectors)) FROM vector_blocks").fetchone()
    conn.close()
    assert blocks == (-(-N // BLOCK), -(-N // BLOCK) * BLOCK * 2 * DIM)  # 5 blocks of 256


def test_fake_vectors_a_format_5_file_searches_unchanged_until_a_write_packs_it(
    db_path: Path,
) -> None:
    vectors = fresh_file(db_path)
    as_older_format(db_path, 5, [])
    assert layout(db_path) == (5, N, 0)
    before = digest(db_path)
    queries = syn.clustered(6, DIM, seed=42)
    with semsearch.connect(db_path) as db:
        coll = db.collection("vecs")
        for q in queries:
            assert found(coll, q) == top(vectors, q)
        assert digest(db_path) == before  # reads wrote nothing
        coll.upsert([{"id": "new", "text": "new", "bucket": 1}], embed=False)
        assert layout(db_path) == (SCHEMA_VERSION, 0, N)
        for q in queries:
            assert found(coll, q) == top(vectors, q)
    assert by_record(db_path) == {syn.name(i): vectors[i].astype("<f2").tobytes() for i in range(N)}


KILLER = """
    import os, signal, sys
    import semsearch
    from semsearch.stores.sqlite import vector_blocks as blocks

    blocks.MIGRATE_BATCH = 100
    def die(done):
        if done >= 300:
            os.kill(os.getpid(), signal.SIGKILL)
    blocks.after_batch = die
    db = semsearch.connect(sys.argv[1])
    db.collection("vecs").upsert([{"id": "never", "text": "never", "bucket": 1}], embed=False)
"""


def test_fake_vectors_a_kill_mid_packing_leaves_a_readable_correct_file(db_path: Path) -> None:
    vectors = fresh_file(db_path)
    as_older_format(db_path, 5, [])
    proc = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(KILLER), str(db_path)],
        capture_output=True,
        timeout=120,
    )
    assert proc.returncode == -signal.SIGKILL, proc.stderr.decode()[-2000:]
    # three batches of 100 moved, the rest still inline, format 6 not recorded
    assert layout(db_path) == (5, N - 300, 300)
    conn = sqlite3.connect(db_path)
    assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    conn.close()
    expected = {syn.name(i): vectors[i].astype("<f2").tobytes() for i in range(N)}
    assert by_record(db_path) == expected  # every vector, from wherever it is
    queries = syn.clustered(6, DIM, seed=43)
    with semsearch.connect(db_path) as db:
        coll = db.collection("vecs")
        assert coll.count() == N  # the killed upsert wrote nothing
        for q in queries:
            assert found(coll, q) == top(vectors, q)
        coll.upsert([{"id": "new", "text": "new", "bucket": 1}], embed=False)
        assert layout(db_path) == (SCHEMA_VERSION, 0, N)
        for q in queries:
            assert found(coll, q) == top(vectors, q)
    assert by_record(db_path) == expected


def test_fake_vectors_slots_of_deleted_chunks_are_reused_and_empty_blocks_deleted(
    db_path: Path,
) -> None:
    vectors = fresh_file(db_path, n=600)
    with semsearch.connect(db_path) as db:
        coll = db.collection("vecs")
        for _ in range(5):  # delete and re-add the same 300 records: the slots come back
            coll.delete([syn.name(i) for i in range(300)])
            syn.write(coll, vectors, list(range(300)))
        conn = sqlite3.connect(db_path)
        slots = [r[0] for r in conn.execute("SELECT vector_slot FROM chunks")]
        assert sorted(slots) == list(range(600))  # no slot beyond the 600 ever needed
        assert conn.execute("SELECT COUNT(*) FROM vector_blocks").fetchone()[0] == 3
        conn.close()
        assert by_record(db_path) == {
            syn.name(i): vectors[i].astype("<f2").tobytes() for i in range(600)
        }
        q = syn.clustered(1, DIM, seed=44)[0]
        assert found(coll, q) == top(vectors, q)
        # delete every record of the first block (slots 0..255) and those of the third
        conn = sqlite3.connect(db_path)
        owners = dict(
            conn.execute(
                "SELECT k.vector_slot, r.id FROM chunks k JOIN records r ON r.rowid = k.record_rowid"
            )
        )
        conn.close()
        gone = [owners[s] for s in range(BLOCK)] + [owners[s] for s in range(2 * BLOCK, 600)]
        coll.delete(gone)
        conn = sqlite3.connect(db_path)
        left = [r[0] for r in conn.execute("SELECT block FROM vector_blocks ORDER BY block")]
        conn.close()
        assert left == [1]
        live = np.ones(600, np.bool_)
        live[[int(g[1:]) for g in gone]] = False
        assert found(coll, q) == syn.exact_top(vectors, live, q, K)


def test_fake_vectors_dropping_a_collection_drops_its_blocks_and_not_the_others(
    db_path: Path,
) -> None:
    vectors = fresh_file(db_path, n=300)
    with semsearch.connect(db_path) as db:
        other = db.collection("other", schema=syn.SCHEMA, embedder=syn.FakeEmbedder(DIM))
        syn.write(other, vectors[:100], list(range(100)))
        assert db.drop_collection("vecs") is True
        conn = sqlite3.connect(db_path)
        cids = [r[0] for r in conn.execute("SELECT DISTINCT collection_id FROM vector_blocks")]
        free = conn.execute("SELECT COUNT(*) FROM vector_slots_free").fetchone()[0]
        conn.close()
        assert len(cids) == 1 and free == 0
        q = syn.clustered(1, DIM, seed=45)[0]
        hits = other.store.vector_search("other", q, K, None, True)
        assert [h.record_id for h in hits] == top(vectors[:100], q)


def test_fake_vectors_a_graph_without_codes_gets_them_from_the_blocks_bit_for_bit(
    db_path: Path,
) -> None:
    import faiss

    from semsearch.ann import file as ann_file

    syn.build_with_sidecar(db_path, 3000, DIM, threshold=1000)  # the default layout
    car = ann_file.read_sidecar(ann_file.ann_path(str(db_path), 1), {})
    assert car.header["graph"]["codes_in_sqlite"] is True and car.slots is not None
    graph = faiss.read_index(ann_file.graph_path(str(db_path), 1, car.header["graph"]["token"]))
    assert graph.storage is None  # the graph file holds links only
    conn = sqlite3.connect(db_path)
    blobs = stored_blobs(conn)
    conn.close()
    with semsearch.connect(db_path) as db:
        coll = db.collection("vecs")
        coll.store.vector_search(coll.name, syn.clustered(1, DIM, seed=46)[0], K, None)
        state = next(iter(coll.store._cache.values())).state
        assert state.graph_rows == 3000
        for row in range(state.graph_rows):
            assert state.graph_vectors[row].tobytes() == blobs[int(state.chunk_ids[row])]
