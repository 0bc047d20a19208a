"""The SQLite store's record-level vector search (``VectorRecords.vector_search_records``).

Records of six chunks each, whose chunk vectors sit close together (a record's chunks crowd
each other near a query, as a long note's do): the search must return the candidate chunks of
the true best ``limit`` records by best-chunk cosine, deepening past its first fetch when the
chunks it got hold too few records, and keep the filter guarantee, min(limit, matching
records). Expected records come from numpy over the stored (float16) vectors.

Plumbing: vectors set directly through the real store; the fake embedder only sizes chunks.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from numpy.typing import NDArray

import semsearch
from semsearch.ann.cache import configure_ann
from semsearch.filters import parse_filter
from semsearch.stores.base import VectorRecords
from tests.ann import synthetic as syn

RECORDS, CHUNKS, DIM = 300, 6, 32


def _text(i: int) -> str:
    # six paragraphs of 40 words: more than the fake embedder's 64-token chunks hold together
    return "\n\n".join(" ".join(f"p{j}w{t}" for t in range(40)) for j in range(CHUNKS))


@pytest.fixture
def crowded(db_path: Path):
    """(collection, float32[RECORDS * CHUNKS, DIM] chunk vectors, chunk row -> record index)."""
    rng = np.random.default_rng(7)
    centres = syn.clustered(RECORDS, DIM, seed=5)
    with semsearch.connect(db_path) as db:
        coll = syn.open_collection(db, DIM)
        coll.upsert(
            [{"id": syn.name(i), "text": _text(i), "bucket": i % 1000} for i in range(RECORDS)],
            embed=False,
        )
        pending = coll.store.pending_chunks(coll.name, RECORDS * CHUNKS * 2)
        owner = np.array([int(p.record_id[1:]) for p in pending])
        vectors = centres[owner] + 0.05 * rng.standard_normal((len(pending), DIM))
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        vectors = vectors.astype(np.float32)
        coll.store.set_vectors(coll.name, [p.chunk_id for p in pending], vectors)
        yield coll, vectors, owner


def _true_records(
    vectors: NDArray[np.float32],
    owner: NDArray[np.int64],
    query: NDArray[np.float32],
    limit: int,
    allowed: NDArray[np.bool_] | None = None,
) -> list[str]:
    """The ``limit`` best records by their best chunk's cosine at float16 precision."""
    best = np.full(RECORDS, -np.inf)
    np.maximum.at(best, owner, syn.stored(vectors) @ query)
    if allowed is not None:
        best[~allowed] = -np.inf
    order = np.argsort(-best, kind="stable")
    return [syn.name(int(i)) for i in order[:limit] if np.isfinite(best[i])]


def _records_in_order(hits) -> list[str]:
    seen: dict[str, None] = {}
    for h in hits:
        seen.setdefault(h.record_id)
    return list(seen)


def test_fake_embedder_sqlite_store_declares_record_level_vector_search(crowded) -> None:
    coll, _, owner = crowded
    assert len(owner) == RECORDS * CHUNKS  # every record really has six chunks
    assert isinstance(coll.store, VectorRecords)


@pytest.mark.parametrize("limit", [1, 10, 50])
def test_fake_embedder_crowded_chunks_give_the_true_best_records(crowded, limit: int) -> None:
    """50 records need about 300 chunks here (six per record crowd together), so the first
    fetch of 2 * limit chunks holds too few records and the search must go deeper."""
    coll, vectors, owner = crowded
    for q in syn.clustered(8, DIM, seed=11):
        hits = coll.store.vector_search_records(coll.name, q, limit, None, True)
        assert _records_in_order(hits) == _true_records(vectors, owner, q, limit)
        scores = [h.score for h in hits]
        assert scores == sorted(scores, reverse=True)


def test_fake_embedder_every_candidate_chunk_of_a_kept_record_comes_back(crowded) -> None:
    """The chunk-level search to the same depth, kept to the same records, gives the same
    chunks: rescoring with sentence windows sees all of them."""
    coll, _, _ = crowded
    limit = 20
    for q in syn.clustered(5, DIM, seed=12):
        hits = coll.store.vector_search_records(coll.name, q, limit, None, True)
        kept = set(_records_in_order(hits))
        deep = coll.store.vector_search(coll.name, q, RECORDS * CHUNKS, None, True)
        # the chunks of the kept records that rank above the last one returned
        floor = hits[-1].score
        want = {h.chunk_id for h in deep if h.record_id in kept and h.score >= floor}
        assert {h.chunk_id for h in hits} == want


@pytest.mark.parametrize("share", [1, 10, 100])
def test_fake_embedder_filtered_records_keep_the_min_limit_matches_guarantee(
    crowded, share: int
) -> None:
    """``bucket < share`` passes ``share`` of the 300 records (share < limit for 1 and 10)."""
    coll, vectors, owner = crowded
    limit = 40
    where = parse_filter({"bucket": {"$lt": share}}, coll.schema)
    allowed = np.arange(RECORDS) % 1000 < share
    for q in syn.clustered(4, DIM, seed=13):
        hits = coll.store.vector_search_records(coll.name, q, limit, where, False)
        assert _records_in_order(hits) == _true_records(vectors, owner, q, limit, allowed)
        assert len(_records_in_order(hits)) == min(limit, share)


def test_fake_embedder_semantic_search_over_the_graph_finds_the_best_records(
    crowded,
) -> None:
    """Through the HNSW graph (threshold below the chunk count): ``limit`` distinct records,
    and nearly all of the true best ones (a graph is approximate)."""
    coll, vectors, owner = crowded
    configure_ann(coll, threshold=500)
    found = total = 0
    for q in syn.clustered(10, DIM, seed=14):
        result = coll.search_by_vector(q, limit=30, min_score=None)
        assert len(set(result.ids)) == len(result.ids) == 30
        found += len(set(result.ids) & set(_true_records(vectors, owner, q, 30)))
        total += 30
    assert found / total >= 0.9
    assert list(Path(coll.store.location).parent.glob("*.hnsw"))  # a graph was built
