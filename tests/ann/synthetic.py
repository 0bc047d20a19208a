"""Synthetic vectors written through the real SQLite store, for the ANN cache's plumbing tests.

Records are named ``r000017`` and carry an int field ``bucket = i % 1000``, so a filter
``bucket < b`` lets exactly ``b / 1000`` of them through. Their vectors are clustered (not
uniform noise, which no graph index searches well) and are set directly with ``set_vectors``:
the fake embedder only sizes chunks; nothing here is about meaning.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

import semsearch
from semsearch.ann.cache import configure_ann
from semsearch.collection import Collection
from semsearch.embedders.fake import FakeEmbedder
from semsearch.schema import Field, Schema

SCHEMA = Schema(fields=(Field("bucket", "int"),))


def clustered(
    n: int, dim: int, seed: int, clusters: int = 64, latent: int = 8
) -> NDArray[np.float32]:
    """float32[n, dim] unit vectors: random centres plus noise in a ``latent``-d subspace.

    Real embeddings have a low intrinsic dimension; this mimics it, so a graph index finds
    true neighbours the way it does on real data.
    """
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((clusters, dim)).astype(np.float32)
    centres /= np.linalg.norm(centres, axis=1, keepdims=True)
    basis = rng.standard_normal((latent, dim)).astype(np.float32) / np.sqrt(latent)
    labels = rng.integers(0, clusters, n)
    x = centres[labels] + 0.7 * rng.standard_normal((n, latent)).astype(np.float32) @ basis
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    return x.astype(np.float32)


def name(i: int) -> str:
    return f"r{i:06d}"


def open_collection(db: semsearch.Database, dim: int, **ann: Any) -> Collection:
    coll = db.collection("vecs", schema=SCHEMA, embedder=FakeEmbedder(dim))
    if ann:
        configure_ann(coll, **ann)
    return coll


def write(coll: Collection, vectors: NDArray[np.float32], ids: list[int]) -> None:
    """Upsert records ``ids`` and set their vectors to ``vectors[k]`` (row k for ids[k])."""
    records = [{"id": name(i), "text": name(i), "bucket": i % 1000} for i in ids]
    coll.upsert(records, embed=False)
    pending = coll.store.pending_chunks(coll.name, len(ids) + 10)
    row = {i: k for k, i in enumerate(ids)}
    chunk_ids = [p.chunk_id for p in pending]
    picked = [row[int(p.embed_text[1:])] for p in pending]
    coll.store.set_vectors(coll.name, chunk_ids, vectors[picked])


def stored(vectors: NDArray[np.float32]) -> NDArray[np.float32]:
    """The vectors as the SQLite store keeps them: float16 values (upcast to float32)."""
    return vectors.astype(np.float16).astype(np.float32)


def exact_top(
    vectors: NDArray[np.float32], live: NDArray[np.bool_], query: NDArray[np.float32], k: int
) -> list[str]:
    """Names of the k live rows with the highest dot product (the ground truth, plain numpy),
    at the precision the store keeps: each vector rounded to float16, then upcast."""
    scores = stored(vectors) @ query
    scores[~live] = -np.inf
    order = np.argsort(-scores, kind="stable")[: min(k, int(live.sum()))]
    return [name(int(i)) for i in order]


def build_with_sidecar(db_path: Any, n: int, dim: int, **ann: Any) -> NDArray[np.float32]:
    """Write ``n`` clustered vectors and run one search, so the graph sidecar is on disk."""
    vectors = clustered(n, dim, seed=0)
    with semsearch.connect(db_path) as db:
        coll = open_collection(db, dim, **ann)
        write(coll, vectors, list(range(n)))
        coll.store.vector_search(coll.name, vectors[0], 10, None)
    return vectors
