"""Milvus Lite through semsearch's MilvusStore against raw pymilvus, on the same data (issue 23).

Usage:
    .venv/bin/python benchmarks/milvus.py                      # 10,000 and 100,000 vectors
    .venv/bin/python benchmarks/milvus.py --n 2000 --queries 10 --no-write   # a quick check

Data: ``n`` unit vectors in ``--clusters`` gaussian clusters (benchmarks/ann_data.py), plus
``--queries`` fresh points from the same clusters. Record ``i`` has an int field ``bucket``
(uniform in 0..99), so ``bucket == 0`` keeps 1% and ``bucket < 10`` keeps 10%. Ground truth is
an exact numpy scan.

- **semsearch**: a MilvusStore filled through the Store primitives ingestion uses
  (``write_records`` then ``set_vectors``, 256 records a batch as ``semsearch.ingest`` writes
  them), then ``flush()``, so insert time includes records, chunks, BM25 rows and vectors
  until every Milvus collection is sealed; a search is one ``vector_search(k=10)``, as
  ``Collection.search`` makes it.
- **raw pymilvus**: one collection (int64 id, ``record_id``, ``bucket``, the vector), the same
  index (HNSW M=16, efConstruction=200, ef=128, COSINE), the same vectors inserted in
  batches of 256 and flushed once; a search is one ``client.search`` with ``output_fields``,
  and the filter is the same predicate (``bucket == 0``).
- **raw pymilvus + BM25** (insert time only): the raw collection plus what semsearch's keyword
  search needs, the record's text in an analysed VARCHAR with Milvus' BM25 function into a
  sparse field (SPARSE_INVERTED_INDEX), as semsearch's ``_chunks`` has; Milvus' own analyser
  (semsearch stems words itself, which raw does not). This is the like-for-like insert: the
  insert ratio is semsearch's time over this one (over vectors-only raw in its own column).
  Both raw fills run in the process after semsearch opened Milvus, so they share its pymilvus
  setting (``entity_helper.CHECK_STR_ARRAY`` off, see ``milvus_conn``): raw gets the same
  client as semsearch, which is the stricter comparison.
- Before the timed fills, both write 512 records into throwaway collections (``warm_up``),
  so that neither timing includes the process's one-time imports and first calls.
- After each fill, ``--settle`` seconds pass (default n / 700, at least 10): Milvus Lite
  builds HNSW graphs and compacts segments in a background thread after a flush, so a fill
  right after another would share the machine with that work, and until it is done searches
  scan the new segments exactly (recall 1.0, different latency); describe_index reports
  "Finished" before that, so it cannot be polled.
- Searches alternate between the two for each query (interleaved), after one warm-up query.

The entity-cache case: 10,000 SRD-like entities (spells, monsters, equipment, magic items in
the SRD's proportions, fake 384-d vectors from semsearch's FakeEmbedder) written through
``Collection.upsert``; filtered semantic searches end to end through ``Collection.search``
(embedding, store search, records and chunks), timed after the same settling wait as the
fills above (before stop 37 they ran right after the upsert, while Lite was still indexing it
in the background). The bar is p50 < 100 ms.
"""

from __future__ import annotations

import argparse
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.ann_data import clustered  # noqa: E402  (the ANN benchmark's generator)
from semsearch.filters import parse_filter  # noqa: E402
from semsearch.ingest import WRITE_BATCH  # noqa: E402
from semsearch.results import Chunk  # noqa: E402
from semsearch.schema import Schema  # noqa: E402
from semsearch.stores.base import ChunkWrite, CollectionInfo, RecordWrite  # noqa: E402
from semsearch.stores.milvus.layout import INDEXES  # noqa: E402

SCHEMA = Schema.from_types({"bucket": "int"})
NAME = "bench"
K = 10
HNSW = INDEXES["HNSW"]
HEADING = "## Milvus Lite: semsearch vs raw pymilvus (issue 23)"
#: Entity kinds and their share of the SRD-like set (the SRD: 319 spells, 334 monsters,
#: 237 equipment, 239 magic items; scaled to 10,000 with the same proportions).
KINDS = {"spell": 0.283, "monster": 0.296, "equipment": 0.210, "magic_item": 0.211}


def _records(start: int, stop: int, buckets: np.ndarray) -> list[RecordWrite]:
    import hashlib

    out = []
    for i in range(start, stop):
        text = f"item {i} bucket {buckets[i]}"
        digest = hashlib.sha256(text.encode()).hexdigest()
        chunk = ChunkWrite(Chunk(text, 0, 0, len(text)), text, digest)
        fields = {"bucket": int(buckets[i])}
        out.append(RecordWrite(f"r{i:07d}", fields, fields, text, digest, [chunk]))
    return out


def fill_semsearch(store: Any, vectors: np.ndarray, buckets: np.ndarray) -> float:
    """Write every record and its vector through the Store primitives; seconds taken."""
    store.create_collection(
        CollectionInfo(NAME, SCHEMA.to_json(), "bench:clustered", vectors.shape[1])
    )
    started = time.perf_counter()
    for start in range(0, len(vectors), WRITE_BATCH):
        stop = min(start + WRITE_BATCH, len(vectors))
        result = store.write_records(NAME, _records(start, stop, buckets))
        store.set_vectors(NAME, [p.chunk_id for p in result.pending], vectors[start:stop])
    store.flush()
    return time.perf_counter() - started


def fill_raw(
    path: Path, vectors: np.ndarray, buckets: np.ndarray, bm25: bool = False
) -> tuple[Any, float]:
    """A raw pymilvus collection with the same vectors, index and field (and with ``bm25``,
    the text with Milvus' BM25 function); (client, seconds)."""
    from pymilvus import DataType, Function, FunctionType, MilvusClient

    client = MilvusClient(str(path))
    schema = MilvusClient.create_schema(auto_id=False)
    schema.add_field("id", DataType.INT64, is_primary=True)
    schema.add_field("record_id", DataType.VARCHAR, max_length=64)
    schema.add_field("bucket", DataType.INT64)
    schema.add_field("vector", DataType.FLOAT_VECTOR, dim=vectors.shape[1])
    params = client.prepare_index_params()
    params.add_index(
        field_name="vector", index_type="HNSW", metric_type="COSINE", params=HNSW["build"]
    )
    if bm25:
        schema.add_field("text", DataType.VARCHAR, max_length=65535, enable_analyzer=True)
        schema.add_field("sparse", DataType.SPARSE_FLOAT_VECTOR)
        schema.add_function(
            Function(
                name="bm25",
                function_type=FunctionType.BM25,
                input_field_names=["text"],
                output_field_names=["sparse"],
            )
        )
        params.add_index(
            field_name="sparse", index_type="SPARSE_INVERTED_INDEX", metric_type="BM25"
        )
    client.create_collection("raw", schema=schema, index_params=params)
    client.load_collection("raw")
    started = time.perf_counter()
    for start in range(0, len(vectors), WRITE_BATCH):
        stop = min(start + WRITE_BATCH, len(vectors))
        rows = [
            {"id": i, "record_id": f"r{i:07d}", "bucket": int(buckets[i]), "vector": vectors[i]}
            for i in range(start, stop)
        ]
        if bm25:
            for row in rows:
                row["text"] = f"item {row['id']} bucket {row['bucket']}"  # as _records writes
        client.insert("raw", rows)
    client.flush("raw")
    return client, time.perf_counter() - started


def truth(vectors: np.ndarray, queries: np.ndarray, mask: np.ndarray | None) -> list[set[str]]:
    """Exact top-10 record ids per query (optionally among rows where ``mask`` is True)."""
    rows = np.arange(len(vectors)) if mask is None else np.flatnonzero(mask)
    top = np.argsort(-(queries @ vectors[rows].T), axis=1)[:, :K]
    return [{f"r{rows[j]:07d}" for j in t} for t in top]


Search = Callable[[np.ndarray], list[str]]


def interleaved(
    searches: dict[str, Search], queries: np.ndarray, expected: list[set[str]]
) -> dict[str, dict[str, float]]:
    """p50/p99 latency (ms) and mean recall@10 of each search, alternating per query."""
    for search in searches.values():
        search(queries[0])  # warm-up
    times: dict[str, list[float]] = {name: [] for name in searches}
    recalls: dict[str, list[float]] = {name: [] for name in searches}
    for q, want in zip(queries, expected, strict=True):
        for name, search in searches.items():
            t0 = time.perf_counter()
            got = search(q)
            times[name].append((time.perf_counter() - t0) * 1000)
            recalls[name].append(len(set(got[:K]) & want) / min(K, len(want)))
    return {
        name: {
            "p50": float(np.percentile(times[name], 50)),
            "p99": float(np.percentile(times[name], 99)),
            "recall": float(np.mean(recalls[name])),
        }
        for name in searches
    }


def warm_up(tmp: Path, dim: int, n: int = 2 * WRITE_BATCH) -> None:
    """Fill a throwaway semsearch store and raw collection once, so that no timed fill pays
    the process's one-time costs (imports of pymilvus', Milvus Lite's and semsearch's write
    paths, first gRPC calls): semsearch's fill ran first and paid them, the raw fills after it
    did not (the first semsearch fill of a process took 1.2-1.3 s longer than the next ones
    at 10,000 records, interleaved)."""
    from semsearch.stores.milvus.store import MilvusStore

    vectors, _ = clustered(n, 1, dim, 10)
    buckets = np.random.default_rng(11).integers(0, 100, n)
    store = MilvusStore(f"milvus-lite://{tmp / 'warm-up.db'}")
    fill_semsearch(store, vectors, buckets)
    store.close()
    client, _ = fill_raw(tmp / "warm-up-raw.db", vectors, buckets, bm25=True)
    client.close()


def vector_table(args: argparse.Namespace, n: int, tmp: Path) -> list[list[str]]:
    """Rows of the semsearch-vs-raw table at ``n`` vectors."""
    from semsearch.stores.milvus.store import MilvusStore

    vectors, queries = clustered(n, args.queries, args.dim, args.clusters)
    buckets = np.random.default_rng(11).integers(0, 100, n)
    filters = {
        "none": (None, "", None),
        "1%": ({"bucket": 0}, "bucket == 0", buckets == 0),
        "10%": ({"bucket": {"$lt": 10}}, "bucket < 10", buckets < 10),
    }
    settle = args.settle if args.settle is not None else max(10.0, n / 700)
    store = MilvusStore(f"milvus-lite://{tmp / f'semsearch-{n}.db'}")
    ours = fill_semsearch(store, vectors, buckets)
    time.sleep(settle)  # Lite builds indexes and compacts in the background after a flush
    bm25_client, bm25 = fill_raw(tmp / f"raw-bm25-{n}.db", vectors, buckets, bm25=True)
    time.sleep(settle)
    bm25_client.close()
    client, raw = fill_raw(tmp / f"raw-{n}.db", vectors, buckets)
    print(f"  {n:,}: insert semsearch {ours:.1f} s, raw + BM25 {bm25:.1f} s, raw {raw:.1f} s")
    time.sleep(settle)
    search_params = {"metric_type": "COSINE", "params": HNSW["search"]}
    rows = []
    for label, (where, raw_expr, mask) in filters.items():
        ast = parse_filter(where, SCHEMA) if where is not None else None

        def ss(q: np.ndarray, ast: Any = ast) -> list[str]:
            return [h.record_id for h in store.vector_search(NAME, q, K, ast)]

        def rw(q: np.ndarray, expr: str = raw_expr) -> list[str]:
            res = client.search(
                "raw", data=[q.tolist()], anns_field="vector", limit=K, filter=expr,
                output_fields=["record_id"], search_params=search_params,
            )  # fmt: skip
            return [h["entity"]["record_id"] for h in res[0]]

        m = interleaved({"semsearch": ss, "raw": rw}, queries, truth(vectors, queries, mask))
        s, r = m["semsearch"], m["raw"]
        rows.append(
            [
                f"{n:,}", label, f"{s['p50']:.1f}", f"{r['p50']:.1f}",
                f"{s['p50'] / r['p50']:.2f}", f"{s['recall']:.3f}", f"{r['recall']:.3f}",
                f"{ours:.1f}", f"{bm25:.1f}", f"{raw:.1f}", f"{ours / bm25:.2f}",
                f"{ours / raw:.2f}",
            ]
        )  # fmt: skip
        print("  ", rows[-1], flush=True)
    store.close()
    client.close()
    return rows


def entity_cache(tmp: Path, n: int, queries: int, settle: float) -> list[list[str]]:
    """Rows for the entity-cache case: filtered semantic p50 through Collection.search, timed
    ``settle`` seconds after the fill's first read (which flushes it), as the vector table is:
    until Milvus Lite has indexed the new segments in the background, searches scan them."""
    import semsearch
    from semsearch.embedders.fake import FakeEmbedder

    rng = np.random.default_rng(5)
    kinds = rng.choice(list(KINDS), n, p=list(KINDS.values()))
    levels = rng.integers(0, 10, n)
    words = [f"w{i}" for i in range(2000)]
    entities = [
        {
            "id": f"{kinds[i]}-{i:05d}",
            "kind": str(kinds[i]),
            "level": int(levels[i]),
            "text": " ".join(rng.choice(words, 40)),
        }
        for i in range(n)
    ]
    db = semsearch.connect(f"milvus-lite://{tmp / 'entities.db'}")
    schema = Schema.from_types({"kind": "str", "level": "int"})
    coll = db.collection("entities", schema=schema, embedder=FakeEmbedder(384))
    started = time.perf_counter()
    coll.upsert(entities)
    seconds = time.perf_counter() - started
    coll.search("w1 w2 w3")  # the first read flushes the fill; Lite then indexes it
    time.sleep(settle)
    rows = []
    for label, where in (
        ("kind = spell", {"kind": "spell"}),
        ("kind = spell, level = 3", {"kind": "spell", "level": 3}),
        ("none", None),
    ):
        coll.search("w1 w2 w3", where=where)  # warm-up
        times = []
        for _ in range(queries):
            text = " ".join(rng.choice(words, 5))
            t0 = time.perf_counter()
            coll.search(text, where=where, limit=10)
            times.append((time.perf_counter() - t0) * 1000)
        p50 = float(np.percentile(times, 50))
        rows.append([label, f"{p50:.1f}", f"{np.percentile(times, 99):.1f}", f"{seconds:.1f}"])
        print("  ", rows[-1], flush=True)
    db.close()
    return rows


def _table(head: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    return "\n".join([*lines, *("| " + " | ".join(r) + " |" for r in rows)])


def machine(load_before: str) -> str:
    import milvus_lite
    import pymilvus

    load_after = subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
    return (
        f"Machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
        f"Python {platform.python_version()}, numpy {np.__version__}, pymilvus "
        f"{pymilvus.__version__}, milvus-lite {milvus_lite.__version__}.  \n"
        f"Load before: `{load_before}`  \nLoad after: `{load_after}`"
    )


def write_section(text: str, path: Path = ROOT / "docs" / "benchmarks.md") -> None:
    """Replace (or append) this benchmark's section, keyed by its heading; others stay as they are."""
    old = path.read_text() if path.exists() else "# Benchmarks\n"
    pattern = re.compile(rf"^{re.escape(HEADING)}\n.*?(?=^## |\Z)", re.S | re.M)
    new = pattern.sub(lambda _: text, old) if pattern.search(old) else old.rstrip() + "\n\n" + text
    path.write_text(new)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--n", default="10000,100000", help="comma-separated sizes")
    parser.add_argument("--dim", type=int, default=384)
    parser.add_argument("--clusters", type=int, default=1000)
    parser.add_argument("--queries", type=int, default=50)
    parser.add_argument("--entities", type=int, default=10_000)
    parser.add_argument(
        "--settle", type=float, default=None, help="seconds to wait after filling (n / 700)"
    )
    parser.add_argument("--no-write", action="store_true", help="print only")
    args = parser.parse_args()
    load_before = subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
    started = time.perf_counter()
    tmp = Path(tempfile.mkdtemp(prefix="semsearch-milvus-bench-"))
    try:
        warm_up(tmp, args.dim)
        rows = [row for n in map(int, args.n.split(",")) for row in vector_table(args, n, tmp)]
        settle = args.settle if args.settle is not None else max(10.0, args.entities / 700)
        entity_rows = entity_cache(tmp, args.entities, args.queries, settle)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    vector_head = [
        "vectors", "filter", "semsearch p50 ms", "raw p50 ms", "ratio", "semsearch recall@10",
        "raw recall@10", "semsearch insert s", "raw + BM25 insert s", "raw insert s",
        "insert ratio", "insert ratio to vectors-only raw",
    ]  # fmt: skip
    entity_head = ["filter", "p50 ms", "p99 ms", "upsert s"]
    cmd = f"`.venv/bin/python benchmarks/milvus.py --n {args.n} --queries {args.queries}`"
    section = (
        f"{HEADING}\n\n{args.dim}-d unit vectors in {args.clusters} gaussian clusters, "
        f"{args.queries} queries, k={K}; run with {cmd} in "
        f"{time.perf_counter() - started:.0f} s. Targets: ratio <= 1.5 at equal or better "
        "recall, insert ratio <= 1.5 (semsearch against raw + BM25, the same schema: see "
        "the script's docstring).\n\n"
        f"{_table(vector_head, rows)}\n\n"
        f"Entity cache: {args.entities:,} SRD-like entities, fake 384-d vectors, "
        f"`Collection.search` end to end (target: filtered p50 < 100 ms).\n\n"
        f"{_table(entity_head, entity_rows)}\n\n{machine(load_before)}\n"
    )
    print(section)
    if not args.no_write:
        write_section(section)


if __name__ == "__main__":
    main()
