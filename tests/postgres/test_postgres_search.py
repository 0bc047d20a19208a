"""pgvector specifics: the HNSW index answers, and filters never starve it (fake embedder).

2,000 records with a ``bucket`` field (i % 100), so ``bucket == 0`` keeps 1% of them and
``bucket < 10`` keeps 10%. ``exact_below=1`` forces the HNSW path even for small filtered sets.
"""

from __future__ import annotations

import numpy as np
import pytest

import semsearch
from semsearch.embedders.fake import FakeEmbedder
from semsearch.schema import Schema
from semsearch.stores.postgres.store import PostgresStore

N = 2000
WORDS = [f"w{i}" for i in range(300)]


def _records() -> list[dict]:
    rng = np.random.default_rng(7)
    return [
        {"id": f"r{i:04d}", "text": " ".join(rng.choice(WORDS, 6)), "bucket": i % 100}
        for i in range(N)
    ]


@pytest.fixture(scope="module")
def loaded(postgres_url):
    from tests.postgres import server

    with server.fresh_schema(postgres_url) as location:
        store = PostgresStore(location, exact_below=1)
        with semsearch.Database(store) as db:
            coll = db.collection(
                "big", schema=Schema.from_types({"bucket": "int"}), embedder=FakeEmbedder(32)
            )
            coll.upsert(_records())
            yield location, coll


def _plan(location: str, coll, where: dict | None) -> str:
    import psycopg
    from pgvector.psycopg import register_vector

    from semsearch.stores.postgres.search import ann_sql, set_ann_options
    from semsearch.stores.postgres.sql import Tables, compile_filter

    ast = semsearch.filters.parse_filter(where, coll.schema)
    sql, params = compile_filter(ast) if ast is not None else ("true", [])
    vector = coll.embedder.embed_query("w1 w2 w3")
    with psycopg.connect(location) as conn:
        register_vector(conn)
        set_ann_options(conn, 40)
        rows = conn.execute(
            "EXPLAIN " + ann_sql(Tables(1), sql), (vector, *params, vector, 10)
        ).fetchall()
    return "\n".join(r[0] for r in rows)


@pytest.mark.parametrize("where", [None, {"bucket": {"$lt": 10}}])
def test_the_ann_query_is_answered_by_the_hnsw_index(loaded, where) -> None:
    location, coll = loaded
    assert "Index Scan using semsearch_c1_hnsw" in _plan(location, coll, where)


@pytest.mark.parametrize(
    ("where", "matches"), [({"bucket": 0}, 20), ({"bucket": {"$lt": 10}}, 200)]
)
@pytest.mark.parametrize("k", [10, 100])
def test_filtered_ann_returns_min_k_matches(loaded, where, matches, k) -> None:
    _, coll = loaded
    ast = semsearch.filters.parse_filter(where, coll.schema)
    vector = coll.embedder.embed_query("w5 w6 w7")
    ann = coll.store.vector_search(coll.name, vector, k, ast)
    assert len(ann) == min(k, matches)
    exact = coll.store.vector_search(coll.name, vector, k, ast, exact=True)
    overlap = len({c.chunk_id for c in ann} & {c.chunk_id for c in exact}) / len(exact)
    assert overlap >= 0.9
    assert {c.record_id for c in ann} <= {f"r{i:04d}" for i in range(N) if _passes(i, where)}


def _passes(i: int, where: dict) -> bool:
    return i % 100 == 0 if where == {"bucket": 0} else i % 100 < 10


def test_without_iterative_scan_pgvector_starves_filters(loaded) -> None:
    """Why the store sets hnsw.iterative_scan: plain HNSW + a 1% filter loses rows."""
    import psycopg
    from pgvector.psycopg import register_vector

    location, coll = loaded
    vector = coll.embedder.embed_query("w5 w6 w7")
    with psycopg.connect(location) as conn:
        register_vector(conn)
        conn.execute("SET hnsw.iterative_scan = off")
        # Make the planner take the HNSW index, as it does on big tables.
        conn.execute("SET enable_sort = off")
        conn.execute("SET enable_seqscan = off")
        rows = conn.execute(
            "SELECT k.id FROM semsearch_c1_chunks k JOIN semsearch_c1_records r "
            "ON r.rid = k.record_rid WHERE r.f_bucket = 0 ORDER BY k.embedding <=> %s LIMIT 10",
            (vector,),
        ).fetchall()
    assert len(rows) < 10
    ast = semsearch.filters.parse_filter({"bucket": 0}, coll.schema)
    assert len(coll.store.vector_search(coll.name, vector, 10, ast)) == 10


def test_semantic_search_through_collection_fills_the_limit_under_filter(loaded) -> None:
    _, coll = loaded
    result = coll.search("w1 w9", where={"bucket": 0}, limit=15, min_score=None)
    assert len(result) == 15
    assert all(int(h.id[1:]) % 100 == 0 for h in result)
