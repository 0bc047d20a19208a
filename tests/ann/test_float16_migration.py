"""Format 4 (float16 vectors) and its migration, which runs only on a write.

A file of format 4 (float32 blobs, as semsearch wrote them before format 5; made here with SQL
from a fresh file, the way the previous version laid it out) opens and searches with its main
file byte-for-byte unchanged and the same top results as a float32 numpy scan; a write
migrates it; a process killed in the middle of the migration (SIGKILL at the migration's batch
hook, in a real second process) leaves a readable, correct file that the next write finishes.

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
from tests.file_formats import as_older_format

N, DIM, K = 1200, 24, 10


def as_format_4(path: Path, vectors: np.ndarray) -> None:
    """Rewrite a fresh file as format 4 wrote it: float32 blobs, no migration 5 recorded."""
    as_older_format(path, 4, [])  # vectors inline, no format-6 objects
    conn = sqlite3.connect(path)
    rows = conn.execute(
        "SELECT k.id, r.id FROM chunks k JOIN records r ON r.rowid = k.record_rowid"
    ).fetchall()
    conn.executemany(
        "UPDATE chunks SET vector = ? WHERE id = ?",
        [(vectors[int(name[1:])].astype("<f4").tobytes(), cid) for cid, name in rows],
    )
    conn.execute("DELETE FROM semsearch_migrations WHERE version >= 5")
    conn.commit()
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()


def old_file(db_path: Path) -> np.ndarray:
    vectors = syn.clustered(N, DIM, seed=21)
    with semsearch.connect(db_path) as db:
        syn.write(syn.open_collection(db, DIM), vectors, list(range(N)))
    as_format_4(db_path, vectors)
    return vectors


def file_state(db_path: Path) -> tuple[int, dict[object, int]]:
    """(format version, {inline blob length: chunks, "packed": chunks in vector blocks}) read
    straight from the file."""
    conn = sqlite3.connect(f"file:{db_path}?mode=ro", uri=True)
    version = conn.execute("SELECT MAX(version) FROM semsearch_migrations").fetchone()[0]
    lengths: dict[object, int] = dict(
        conn.execute(
            "SELECT length(vector), COUNT(*) FROM chunks WHERE vector IS NOT NULL GROUP BY 1"
        )
    )
    columns = {r[1] for r in conn.execute("PRAGMA table_info(chunks)")}
    if "vector_slot" in columns:
        packed = conn.execute(
            "SELECT COUNT(*) FROM chunks WHERE vector IS NULL AND vector_slot IS NOT NULL"
        ).fetchone()[0]
        if packed:
            lengths["packed"] = int(packed)
    conn.close()
    return int(version), lengths


def top(vectors: np.ndarray, query: np.ndarray) -> list[str]:
    return [syn.name(int(i)) for i in np.argsort(-(vectors @ query), kind="stable")[:K]]


def found(coll, query: np.ndarray) -> list[str]:
    return [h.record_id for h in coll.store.vector_search(coll.name, query, K, None, True)]


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_fake_embedder_format_4_file_searches_unchanged_until_a_write_migrates_it(
    db_path: Path,
) -> None:
    vectors = old_file(db_path)
    before = digest(db_path)
    queries = syn.clustered(8, DIM, seed=22)
    with semsearch.connect(db_path) as db:
        coll = db.collection("vecs")
        for q in queries:  # float32 blobs are read as float32: the float32 top results
            assert found(coll, q) == top(vectors, q)
        assert digest(db_path) == before
        assert file_state(db_path) == (4, {4 * DIM: N})

        coll.upsert([{"id": "new", "text": "new", "bucket": 1}], embed=False)
        # format 5 rounds them to float16, format 6 packs them into blocks
        assert file_state(db_path) == (SCHEMA_VERSION, {"packed": N})
        half = vectors.astype(np.float16).astype(np.float32)
        for q in queries:  # the same process's cache reloads at the new precision
            assert found(coll, q) == top(half, q)


def test_fake_embedder_compact_migrates_a_format_4_file_and_halves_its_vectors(
    db_path: Path,
) -> None:
    old_file(db_path)
    with semsearch.connect(db_path) as db:
        before, after = db.compact()
    assert file_state(db_path) == (SCHEMA_VERSION, {"packed": N})
    assert after < before - N * DIM * 2 * 0.8  # about 2 bytes a value freed


KILLER = """
    import os, signal, sys
    import semsearch
    from semsearch.stores.sqlite import vector_blobs as blobs

    blobs.BATCH = 100
    def die(done):
        if done >= 300:
            os.kill(os.getpid(), signal.SIGKILL)
    blobs.after_batch = die
    db = semsearch.connect(sys.argv[1])
    db.collection("vecs").upsert([{"id": "never", "text": "never", "bucket": 1}], embed=False)
"""


def test_fake_embedder_a_kill_mid_migration_leaves_a_readable_correct_file(
    db_path: Path,
) -> None:
    vectors = old_file(db_path)
    proc = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(KILLER), str(db_path)],
        capture_output=True,
        timeout=120,
    )
    assert proc.returncode == -signal.SIGKILL, proc.stderr.decode()[-2000:]
    # three batches of 100 committed, the rest still float32, format 5 not recorded
    assert file_state(db_path) == (4, {2 * DIM: 300, 4 * DIM: N - 300})
    conn = sqlite3.connect(db_path)
    assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    conn.close()

    # what the file holds, by the records whose blobs the killed process had converted
    conn = sqlite3.connect(db_path)
    narrow = conn.execute(
        "SELECT r.id FROM chunks k JOIN records r ON r.rowid = k.record_rowid "
        "WHERE length(k.vector) = ?",
        (2 * DIM,),
    ).fetchall()
    conn.close()
    held = vectors.copy()
    rows = [int(name[1:]) for (name,) in narrow]
    held[rows] = vectors[rows].astype(np.float16).astype(np.float32)
    queries = syn.clustered(8, DIM, seed=23)
    with semsearch.connect(db_path) as db:
        coll = db.collection("vecs")
        assert coll.count() == N  # the killed upsert wrote nothing
        for q in queries:
            assert found(coll, q) == top(held, q)
        coll.upsert([{"id": "new", "text": "new", "bucket": 1}], embed=False)
        assert file_state(db_path) == (SCHEMA_VERSION, {"packed": N})
        half = vectors.astype(np.float16).astype(np.float32)
        for q in queries:
            assert found(coll, q) == top(half, q)


def test_fake_embedder_a_format_2_sidecar_is_detected_and_rebuilt_never_read(
    db_path: Path, caplog
) -> None:
    """A sidecar written before format 3 (it held a float32 copy of the vectors) is a cache of
    another layout: it is refused by its format number and rebuilt, and results stay exact."""
    import logging

    from semsearch.ann import file as ann_file

    vectors = syn.build_with_sidecar(db_path, 3000, DIM, threshold=1000)
    path = Path(ann_file.ann_path(str(db_path), 1))
    blob = path.read_bytes()
    tag = f'"format": {ann_file.FORMAT}'.encode()
    assert blob.count(tag) == 1
    path.write_bytes(blob.replace(tag, b'"format": 2'))  # same length: a valid file
    half = vectors.astype(np.float16).astype(np.float32)
    q = syn.clustered(1, DIM, seed=31)[0]
    with caplog.at_level(logging.INFO, "semsearch.stores.ann"), semsearch.connect(db_path) as db:
        coll = db.collection("vecs")
        assert found(coll, q) == top(half, q)
        coll.store.vector_search(coll.name, q, K, None)  # a graph search: rebuilds the graph
    assert "another sidecar format" in caplog.text and "graph built" in caplog.text
    assert ann_file.read_header(str(path))[0]["format"] == ann_file.FORMAT
