"""Churn: 20 rounds of deleting and re-adding 10% of the vectors keep the cache's memory and its
sidecar files within 1.5x of a fresh build (tombstones are compacted, fresh rows merged).

Plumbing test on synthetic clustered vectors written through the real SQLite store.
"""

from __future__ import annotations

import glob
import os
from pathlib import Path

import numpy as np

import semsearch
from tests.ann import synthetic as syn

N, DIM, ROUNDS = 2000, 32, 20
ANN = {"threshold": 500}


def sidecar_bytes(path: Path) -> int:
    files = glob.glob(f"{path}.c*.ann") + glob.glob(f"{path}.c*.hnsw")
    return sum(os.path.getsize(f) for f in files)


def test_plumbing_twenty_rounds_of_10pct_churn_stay_within_1_5x_of_a_fresh_build(
    tmp_path: Path,
) -> None:
    rng = np.random.default_rng(0)
    vectors = syn.clustered(N, DIM, seed=1)
    churned = tmp_path / "churn.embed.db"
    peak_rows = 0
    with semsearch.connect(churned) as db:
        coll = syn.open_collection(db, DIM, **ANN)
        syn.write(coll, vectors, list(range(N)))
        for round_ in range(ROUNDS):
            picked = sorted(rng.choice(N, N // 10, replace=False).tolist())
            coll.delete([syn.name(i) for i in picked])
            coll.store.vector_search(coll.name, vectors[0], 10, None)
            vectors[picked] = syn.clustered(len(picked), DIM, seed=100 + round_)
            syn.write(coll, vectors[picked], picked)
            coll.store.vector_search(coll.name, vectors[0], 10, None)
            state = coll.store._matrix(coll.name)[-1]
            peak_rows = max(peak_rows, state.rows, state.graph.ntotal)
            assert state.live() == N
        final = coll.store._matrix(coll.name)[-1]
        hits = coll.store.vector_search(coll.name, vectors[123], 1, None)
    assert hits[0].record_id == syn.name(123)  # the re-added vector, not a stale one
    fresh = tmp_path / "fresh.embed.db"
    with semsearch.connect(fresh) as db:
        coll = syn.open_collection(db, DIM, **ANN)
        syn.write(coll, vectors, list(range(N)))
        coll.store.vector_search(coll.name, vectors[0], 10, None)
        fresh_state = coll.store._matrix(coll.name)[-1]
    assert fresh_state.rows == N
    assert peak_rows <= 1.5 * N
    assert final.rows <= 1.5 * fresh_state.rows
    assert sidecar_bytes(churned) <= 1.5 * sidecar_bytes(fresh)
    assert len(glob.glob(f"{churned}.c*.hnsw")) == 1  # old graphs are removed
