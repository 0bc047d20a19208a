"""Integrity of the HNSW sidecar under faults (issue 24): bytes damaged in the middle of the
``.ann`` file are caught by its checksums and the cache is rebuilt (never a MemoryError), and
temporary files left by a writer that was killed are removed.

Plumbing tests: synthetic clustered vectors through the real store, real faiss graphs, real
files and a real second process. Nothing here is about meaning.
"""

from __future__ import annotations

import glob
import logging
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import semsearch
from semsearch.filters import parse_filter
from tests.ann import synthetic as syn

N, DIM = 3000, 32
ANN = {"threshold": 1000, "ef_search": 128}


@pytest.fixture
def built(db_path: Path) -> np.ndarray:
    """A 3,000-vector collection whose graph sidecar has been written by a first search."""
    return syn.build_with_sidecar(db_path, N, DIM, **ANN)


def ann_file(db_path: Path) -> Path:
    (found,) = glob.glob(f"{db_path}.c*.ann")
    return Path(found)


@pytest.mark.parametrize("where", [0.4, 0.5, 0.6])
def test_plumbing_random_bytes_inside_the_sidecar_are_caught_and_rebuilt(
    built: np.ndarray, db_path: Path, where: float, caplog: pytest.LogCaptureFixture
) -> None:
    path = ann_file(db_path)
    data = bytearray(path.read_bytes())
    at = int(len(data) * where)
    data[at : at + 64] = np.random.default_rng(1).bytes(64)  # same size: passes the size check
    path.write_bytes(bytes(data))
    query = syn.clustered(1, DIM, seed=7)[0]
    buckets = np.arange(N) % 1000
    with semsearch.connect(db_path) as db, caplog.at_level(logging.INFO, "semsearch.stores.ann"):
        coll = db.collection("vecs")
        where_ast = parse_filter({"bucket": {"$lt": 100}}, coll.schema)
        got = [h.record_id for h in coll.store.vector_search("vecs", query, 10, where_ast)]
        plain = [h.record_id for h in coll.store.vector_search("vecs", query, 10, None, True)]
    # 300 rows pass: scanned exactly, so exactly the numpy top 10 among them
    assert got == syn.exact_top(built, buckets < 100, query, 10)
    assert plain == syn.exact_top(built, np.ones(N, bool), query, 10)
    messages = [r.getMessage() for r in caplog.records]
    assert any("damaged" in m for m in messages) and any("ANN graph built" in m for m in messages)


def test_plumbing_temp_files_of_a_killed_writer_are_removed(
    built: np.ndarray, db_path: Path
) -> None:
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)  # fmt: skip
    dead_pid = int(dead.stdout)  # that process has exited
    graph = glob.glob(f"{db_path}.c*.hnsw")[0]
    ann = str(ann_file(db_path))
    left = [f"{graph}.tmp-{dead_pid}", f"{ann}.tmp-{dead_pid}-0123abcd"]
    running = f"{graph}.tmp-{os.getppid()}"  # a live process: a write in progress
    for p in [*left, running]:
        Path(p).write_bytes(b"\0" * 4096)
    with semsearch.connect(db_path) as db:
        db.collection("vecs").store.vector_search("vecs", built[0], 5, None)
    assert [p for p in left if Path(p).exists()] == []
    assert Path(running).exists()
