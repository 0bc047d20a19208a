"""The HNSW sidecar as a derived cache of the SQLite file: consistency across processes, and
recovery from a missing, truncated or foreign sidecar.

Plumbing tests: synthetic clustered vectors written through the real store (tests/ann/synthetic.py),
a real second Python process, real faiss graphs and real files. Nothing here is about meaning.
"""

from __future__ import annotations

import glob
import logging
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import semsearch
from tests.ann import synthetic as syn

N, DIM = 3000, 32
ANN = {"threshold": 1000, "ef_search": 128}


def sidecar_files(db_path: Path) -> list[str]:
    return sorted(glob.glob(f"{db_path}.c*.ann")) + sorted(glob.glob(f"{db_path}.c*.hnsw"))


@pytest.fixture
def built(db_path: Path) -> np.ndarray:
    """A 3,000-vector collection whose graph sidecar has been written by a first search."""
    return syn.build_with_sidecar(db_path, N, DIM, **ANN)


def top_names(db_path: Path, query: np.ndarray, k: int = 10, exact: bool = False) -> list[str]:
    with semsearch.connect(db_path) as db:
        coll = db.collection("vecs")
        return [h.record_id for h in coll.store.vector_search("vecs", query, k, None, exact)]


def test_plumbing_first_search_above_threshold_writes_graph_and_ann_files(
    built: np.ndarray, db_path: Path
) -> None:
    files = sidecar_files(db_path)
    assert [Path(f).suffix for f in files] == [".ann", ".hnsw"]
    assert not glob.glob(f"{db_path}*.tmp-*")


def test_plumbing_another_process_writes_are_seen_by_the_next_search(
    built: np.ndarray, db_path: Path
) -> None:
    query = syn.clustered(1, DIM, seed=99)[0]
    db = semsearch.connect(db_path)
    coll = db.collection("vecs")
    before = [h.record_id for h in coll.store.vector_search("vecs", query, 10, None)]
    # The other process deletes today's top hits and adds records whose vectors ARE the query.
    script = textwrap.dedent(f"""
        import sys, numpy as np, semsearch
        sys.path.insert(0, {str(Path(__file__).resolve().parents[2])!r})
        from tests.ann import synthetic as syn
        q = np.array({query.tolist()!r}, dtype=np.float32)
        with semsearch.connect({str(db_path)!r}) as db:
            coll = db.collection("vecs")
            coll.delete({before[:5]!r})
            syn.write(coll, np.tile(q, (3, 1)), [{N}, {N + 1}, {N + 2}])
    """)
    subprocess.run([sys.executable, "-c", script], check=True, timeout=300)
    after = [h.record_id for h in coll.store.vector_search("vecs", query, 10, None)]
    db.close()
    assert set(after[:3]) == {syn.name(N), syn.name(N + 1), syn.name(N + 2)}
    assert not set(before[:5]) & set(after)
    assert len(after) == 10


def corrupt_truncate(db_path: Path) -> None:
    ann = sidecar_files(db_path)[0]
    data = Path(ann).read_bytes()
    Path(ann).write_bytes(data[: len(data) // 2])


def corrupt_truncate_graph(db_path: Path) -> None:
    graph = sidecar_files(db_path)[1]
    data = Path(graph).read_bytes()
    Path(graph).write_bytes(data[:1000])


def corrupt_garbage(db_path: Path) -> None:
    Path(sidecar_files(db_path)[0]).write_bytes(b"not a sidecar at all" * 100)


def corrupt_missing(db_path: Path) -> None:
    for f in sidecar_files(db_path):
        Path(f).unlink()


def corrupt_foreign(db_path: Path) -> None:
    """Replace the sidecar with one built for another collection (other vectors, other name)."""
    other = db_path.with_name("other.embed.db")
    with semsearch.connect(other) as db:
        coll = syn.open_collection(db, DIM, **ANN)
        syn.write(coll, syn.clustered(1500, DIM, seed=5), list(range(1500)))
        coll.store.vector_search(coll.name, np.ones(DIM, np.float32) / DIM**0.5, 5, None)
    corrupt_missing(db_path)
    for f in sidecar_files(other):
        Path(f).rename(str(f).replace(str(other), str(db_path)))
    # The foreign files now sit where ours belong; only its header can tell them apart.


@pytest.mark.parametrize(
    "damage",
    [corrupt_truncate, corrupt_truncate_graph, corrupt_garbage, corrupt_missing, corrupt_foreign],
)
def test_plumbing_damaged_sidecar_is_rebuilt_with_a_log_line_and_search_still_answers(
    built: np.ndarray, db_path: Path, damage, caplog: pytest.LogCaptureFixture
) -> None:
    queries = syn.clustered(5, DIM, seed=7)
    truth = [syn.exact_top(built, np.ones(N, bool), q, 10) for q in queries]
    damage(db_path)
    with caplog.at_level(logging.INFO, logger="semsearch.stores.ann"):
        got = [top_names(db_path, q) for q in queries]
    assert all(len(g) == 10 for g in got)
    recall = np.mean([len(set(g) & set(t)) / 10 for g, t in zip(got, truth, strict=True)])
    assert recall >= 0.95
    assert any("ANN graph built" in r.getMessage() for r in caplog.records)
    # The rebuilt sidecar is complete again: a fresh process loads it without rebuilding.
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="semsearch.stores.ann"):
        top_names(db_path, queries[0])
    assert not any("rebuil" in r.getMessage() or "built" in r.getMessage() for r in caplog.records)


def test_plumbing_exact_flag_matches_a_numpy_scan_exactly(built: np.ndarray, db_path: Path) -> None:
    for q in syn.clustered(5, DIM, seed=11):
        assert top_names(db_path, q, 20, exact=True) == syn.exact_top(
            built, np.ones(N, bool), q, 20
        )


def test_plumbing_in_memory_store_uses_the_graph_without_files(tmp_path: Path) -> None:
    vectors = syn.clustered(3200, DIM, seed=3)
    with semsearch.connect(":memory:") as db:
        coll = syn.open_collection(db, DIM, **ANN)
        syn.write(coll, vectors[:2000], list(range(2000)))
        hits = coll.store.vector_search("vecs", vectors[42], 5, None)
        built = coll.store._matrix("vecs")[-1]
        # 1,200 more (> 1,024 fresh rows) are merged into a copy of the in-memory graph.
        syn.write(coll, vectors[2000:], list(range(2000, 3200)))
        late = coll.store.vector_search("vecs", vectors[3100], 5, None)
        merged = coll.store._matrix("vecs")[-1]
    assert built.graph is not None and built.token is None
    assert hits[0].record_id == syn.name(42)
    assert merged.graph_rows == 3200 and merged.graph is not built.graph
    assert built.graph.ntotal == 2000  # the earlier snapshot's graph was not touched
    assert late[0].record_id == syn.name(3100)
    assert list(tmp_path.iterdir()) == []


def test_plumbing_exact_search_never_waits_for_a_graph_build(db_path: Path) -> None:
    vectors = syn.clustered(1500, DIM, seed=6)
    with semsearch.connect(db_path) as db:
        coll = syn.open_collection(db, DIM, **ANN)
        syn.write(coll, vectors, list(range(1500)))
        coll.store.vector_search("vecs", vectors[0], 5, None, exact=True)
        assert coll.store._matrix("vecs", upkeep=False)[-1].graph is None
        assert sidecar_files(db_path) == []
        coll.store.vector_search("vecs", vectors[0], 5, None)
        assert coll.store._matrix("vecs")[-1].graph is not None
        assert len(sidecar_files(db_path)) == 2
