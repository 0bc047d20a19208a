"""A path scope that hides most of a collection costs one store call under the HNSW graph.

The scope travels to the store inside the filter, so the graph search (or the exact scan of a
small allowed set) only ever sees allowed records: ``limit`` hits come back from ONE store call,
equal to an exact numpy scan over the allowed records. Plumbing: synthetic clustered vectors
(tests/ann/synthetic.py) and the fake embedder for the query; nothing here is about meaning.
"""

from __future__ import annotations

import numpy as np
import pytest

import semsearch
from semsearch.ann.cache import configure_ann
from semsearch.embedders.fake import FakeEmbedder
from tests.ann import synthetic as syn
from tests.contract.helpers import vector_leg

DIM = 32
N = 25_000


def path(i: int) -> str:
    """90% of the records live under private/, and 90% end in a digit 1-9."""
    return f"{'public' if i % 10 == 0 else 'private'}/doc{i:06d}.md"


@pytest.fixture(scope="module")
def scoped(tmp_path_factory: pytest.TempPathFactory):
    """25,000 one-chunk records; the graph answers above 1,000 chunks and filters that pass
    more than 500 chunks are evaluated inside the graph search."""
    vectors = syn.clustered(N, DIM, seed=11)
    folder = tmp_path_factory.mktemp("scope")
    db = semsearch.connect(folder / "scope.embed.db")
    coll = db.collection("paths", embedder=FakeEmbedder(DIM))
    configure_ann(coll, threshold=1000, exact_filter_rows=500, ef_search=128)
    coll.upsert([{"id": path(i), "text": f"r{i:06d}"} for i in range(N)], embed=False)
    pending = coll.store.pending_chunks(coll.name, N + 10)
    rows = [int(p.embed_text[1:]) for p in pending]
    coll.store.set_vectors(coll.name, [p.chunk_id for p in pending], vectors[rows])
    yield coll, vectors, folder
    db.close()


def _exact(vectors: np.ndarray, allowed: np.ndarray, query: np.ndarray, k: int) -> list[str]:
    scores = syn.stored(vectors) @ query  # at the store's float16 precision
    scores[~allowed] = -np.inf
    return [path(int(i)) for i in np.argsort(-scores, kind="stable")[:k]]


@pytest.mark.parametrize(
    ("scope", "passes"),
    [
        ({"exclude": ["private"]}, lambda i: i % 10 == 0),  # an index range
        ({"exclude": ["*[1-9].md"]}, lambda i: i % 10 == 0),  # a GLOB with a set
        ({"folder": "public"}, lambda i: i % 10 == 0),
        (
            {"include": ["*0.md"], "exclude": ["public/*5?.md"]},
            lambda i: i % 10 == 0 and i // 10 % 10 != 5,
        ),
    ],
)
def test_plumbing_scope_hiding_90_percent_needs_one_store_call_under_the_graph(
    scoped, monkeypatch: pytest.MonkeyPatch, scope, passes
) -> None:
    coll, vectors, folder = scoped
    calls: list[int] = []
    leg = vector_leg(coll.store)
    search = getattr(coll.store, leg)

    def counted(*args, **kwargs):
        calls.append(1)
        return search(*args, **kwargs)

    monkeypatch.setattr(coll.store, leg, counted)
    allowed = np.array([passes(i) for i in range(N)])
    limit = 10
    for text in ["alpha", "beta gamma", "delta", "epsilon zeta eta", "theta"]:
        calls.clear()
        result = coll.search(text, limit=limit, min_score=None, **scope)
        truth = _exact(vectors, allowed, coll.embedder.embed_query(text), limit)
        assert len(calls) == 1
        assert result.ids == truth
    assert list(folder.glob("scope.embed.db.*.hnsw"))  # a graph was built and saved
