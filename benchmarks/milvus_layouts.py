"""What a Milvus layout with fewer collections would buy at insert time (issue 23, item 3).

Usage:
    .venv/bin/python benchmarks/milvus_layouts.py                   # 10,000 records, 4 rounds
    .venv/bin/python benchmarks/milvus_layouts.py --n 100000 --rounds 2

Prints only (no docs section): it is a decision aid for a layout change, not a result of the
store. Each layout is the store's write pattern for ``--n`` one-chunk records replayed with
pymilvus on Milvus Lite: the store's schemas and rows (``milvus_layout``), column-wise blocking
inserts (``milvus_columns.write_rows``), the two primary-key reads a batch of new records makes
(record hashes; vectors to reuse by content hash), 256 records a batch, one flush per
collection at the end. No semsearch code runs between the calls, so each figure is the floor
of that layout.

- ``4 collections``: records, chunks, vectors, hashes (the current layout);
- ``chunks+vectors``: records, one row per chunk with its vector, hashes;
- ``chunks+vectors, no hashes``: the same without the content-hash pointers (reuse by hash
  would need another way);
- ``chunk rows only``: one collection, chunk rows with their vectors and nothing else (no record
  rows, no reads): the floor of any layout that keeps semsearch's chunk columns;
- ``raw + BM25``: ``benchmarks/milvus.py``'s raw pymilvus collection with the BM25 function.

Rounds alternate the layouts (interleaved); medians are printed.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.ann_data import clustered  # noqa: E402
from benchmarks.milvus import fill_raw  # noqa: E402
from semsearch.ingest import WRITE_BATCH  # noqa: E402
from semsearch.stores.milvus import layout as lay  # noqa: E402
from semsearch.stores.milvus.columns import write_rows  # noqa: E402
from semsearch.stores.milvus.terms import keyword_terms  # noqa: E402

FIELDS = [{"name": "bucket", "type": "int"}]
LAYOUTS = ("4 collections", "chunks+vectors", "chunks+vectors, no hashes", "chunk rows only")


def _parts(client: Any, layout: str, dim: int) -> dict[str, tuple[Any, Any]]:
    """{Milvus name: (schema, index params)} of one layout."""
    parts = {"records": (lay.records_schema(FIELDS), lay.index_params(client, "records"))}
    chunks, params = lay.chunks_schema(FIELDS), lay.index_params(client, "chunks")
    if layout == "4 collections":
        vectors = lay.vectors_schema(FIELDS, dim), lay.index_params(client, "vectors")
        parts["vectors"] = vectors
    else:
        from pymilvus import DataType

        chunks.add_field("vector", DataType.FLOAT_VECTOR, dim=dim)
        hnsw = lay.INDEXES["HNSW"]["build"]
        params.add_index(field_name="vector", index_type="HNSW", metric_type="COSINE", params=hnsw)
    parts["chunks"] = (chunks, params)
    if layout == "chunk rows only":
        del parts["records"]
    elif layout != "chunks+vectors, no hashes":
        parts["hashes"] = (lay.hashes_schema(), lay.index_params(client, "hashes"))
    return parts


def _rows(i: int, bucket: int, vector: list[float]) -> dict[str, dict[str, Any]]:
    """The record, chunk, vector and hash rows the store writes for record ``i``."""
    rid, text = f"r{i:07d}", f"item {i} bucket {bucket}"
    digest = hashlib.sha256(text.encode()).hexdigest()
    cid = lay.chunk_id(rid, 0, 0, len(text), digest)
    body = json.dumps({"fields": {"bucket": bucket}, "text": text, "chunks": [cid]})
    return {
        "records": {"pk": lay.record_pk(0, rid), "record_id": rid, "part": 0, "nparts": 1,
                    "content_hash": digest, "body": body, "_v": lay.DUMMY_VECTOR,
                    "f_bucket": bucket},
        "chunks": {"chunk_id": cid, "record_id": rid, "ordinal": 0, "text": text,
                   "terms": keyword_terms(text), "content_hash": digest, "status": "pending",
                   "error": "", "loc": lay.loc_json(0, len(text), (), None, None),
                   "f_bucket": bucket},
        "vectors": {"chunk_id": cid, "record_id": rid, "content_hash": digest,
                    "f_bucket": bucket, "vector": vector},
        "hashes": {"content_hash": digest, "chunk_id": cid, "_v": lay.DUMMY_VECTOR},
    }  # fmt: skip


def _reads(client: Any, parts: dict[str, Any], rows: list[dict[str, dict[str, Any]]]) -> None:
    """The two primary-key reads of a batch of new records."""
    if "records" not in parts:
        return
    pks = ", ".join(f'"{r["records"]["pk"]}"' for r in rows)
    client.query("records", filter=f"pk in [{pks}]", output_fields=["record_id", "content_hash"])
    if "hashes" in parts:
        hashes = ", ".join(f'"{r["hashes"]["content_hash"]}"' for r in rows)
        client.query("hashes", filter=f"content_hash in [{hashes}]", output_fields=["chunk_id"])


def fill(path: Path, layout: str, vectors: np.ndarray, buckets: np.ndarray) -> float:
    """Replay the store's writes of ``len(vectors)`` records in ``layout``; seconds taken."""
    from semsearch.stores.milvus.conn import close_client, open_client, parse_location

    target = parse_location(f"milvus-lite://{path}")
    client = open_client(target)
    parts = _parts(client, layout, vectors.shape[1])
    for name, (schema, params) in parts.items():
        lay.create(client, name, schema, params)
    started = time.perf_counter()
    for start in range(0, len(vectors), WRITE_BATCH):
        stop = min(start + WRITE_BATCH, len(vectors))
        rows = [_rows(i, int(buckets[i]), vectors[i].tolist()) for i in range(start, stop)]
        _reads(client, parts, rows)
        merged = "vectors" not in parts
        chunks = [{**r["chunks"], "vector": r["vectors"]["vector"]} if merged else r["chunks"]
                  for r in rows]  # fmt: skip
        write_rows(client, "chunks", chunks, True)
        for name in ("records", "vectors", "hashes"):  # the record, then set_vectors' writes
            if name in parts:
                write_rows(client, name, [r[name] for r in rows], True)
    for name in parts:
        client.flush(name)
    seconds = time.perf_counter() - started
    close_client(target, client)
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--n", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--settle", type=float, default=5.0, help="seconds between fills")
    args = parser.parse_args()
    vectors, _ = clustered(args.n, 1, 384, 100)
    buckets = np.random.default_rng(11).integers(0, 100, args.n)
    tmp = Path(tempfile.mkdtemp(prefix="semsearch-milvus-layouts-"))
    times: dict[str, list[float]] = {name: [] for name in (*LAYOUTS, "raw + BM25")}
    try:
        for layout in LAYOUTS:  # warm-up: imports and first calls of each write path
            fill(tmp / f"warm-{len(layout)}.db", layout, vectors[:512], buckets[:512])
        for rnd in range(args.rounds):
            for name in times:
                folder = Path(tempfile.mkdtemp(dir=tmp))
                if name == "raw + BM25":
                    client, seconds = fill_raw(folder / "raw.db", vectors, buckets, bm25=True)
                    client.close()
                else:
                    seconds = fill(folder / "s.db", name, vectors, buckets)
                times[name].append(seconds)
                print(f"round {rnd}: {name}: {seconds:.2f} s", flush=True)
                time.sleep(args.settle)  # Lite builds indexes in the background after a flush
                shutil.rmtree(folder, ignore_errors=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    raw = float(np.median(times["raw + BM25"]))
    for name, seconds in times.items():
        median = float(np.median(seconds))
        print(f"{name:28s} median {median:6.2f} s  {median / raw:.2f}x raw + BM25")


if __name__ == "__main__":
    main()
