"""What a Milvus layout with fewer cells would buy at insert time (issue 23: the 100k target).

Usage:
    .venv/bin/python benchmarks/milvus_layouts.py                   # 10,000 records, 4 rounds
    .venv/bin/python benchmarks/milvus_layouts.py --n 100000 --rounds 2

Prints only (no docs section): it is a decision aid for a layout change, not a result of the
store. Each layout is the store's write pattern for ``--n`` one-chunk records replayed with
pymilvus on Milvus Lite: the store's schemas and rows (``milvus_layout``), column-wise blocking
inserts (``milvus_columns.write_rows``), 256 records a batch, one flush per collection at the
end (``_records`` first, as ``MilvusStore.flush`` does). No reads: on Milvus Lite a collection
the process created answers record hashes and vectors to reuse from memory. No semsearch code
runs between the calls, so each figure is the floor of that layout.

- ``layout 2``: ``_records`` (8 cells a record) and the chunk part with vectors (12 cells a
  chunk), the store's layout today;
- ``layout 2, fewer cells``: the same two collections without the columns a JSON column could
  carry: ``_records`` without ``record_id``, ``part``, ``nparts``; chunk rows without
  ``ordinal`` and ``error`` (5 and 10 cells);
- ``no _records``: chunk rows carrying the record's body (``body``, 13 cells), no second
  collection: the "layout 3" that record bodies in the chunk rows would give;
- ``chunk rows only``: chunk rows with their vectors and nothing else: the floor of any layout
  that keeps semsearch's chunk columns;
- ``raw + BM25``: ``benchmarks/milvus.py``'s raw pymilvus collection with the BM25 function.

Rounds alternate the layouts (interleaved), ``--settle`` seconds apart (default n / 700, at
least 10, as ``benchmarks/milvus.py``); medians are printed.
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
LAYOUTS = ("layout 2", "layout 2, fewer cells", "no _records", "chunk rows only")
#: Columns each layout leaves out of the store's rows, per collection.
DROPPED = {
    "layout 2, fewer cells": {"records": {"record_id", "part", "nparts"},
                              "chunks": {"ordinal", "error"}},
}  # fmt: skip


def _without(schema: Any, dropped: set[str]) -> Any:
    """A copy of a pymilvus schema without the fields ``dropped``."""
    from pymilvus import MilvusClient

    out = MilvusClient.create_schema(auto_id=False, enable_dynamic_field=False)
    for f in schema.fields:
        if f.name not in dropped:
            out.add_field(f.name, f.dtype, **f.params, is_primary=f.is_primary,
                          nullable=f.nullable)  # fmt: skip
    for fn in schema.functions:
        out.add_function(fn)
    return out


def _parts(client: Any, layout: str, dim: int) -> dict[str, tuple[Any, Any]]:
    """{Milvus name: (schema, index params)} of one layout."""
    from pymilvus import DataType

    dropped = DROPPED.get(layout, {})
    records = _without(lay.records_schema(FIELDS), dropped.get("records", set()))
    chunks = _without(lay.chunks_schema(FIELDS, dim), dropped.get("chunks", set()))
    if layout == "no _records":
        chunks.add_field("body", DataType.VARCHAR, max_length=lay.VARCHAR_MAX)
    parts = {"chunks": (chunks, lay.index_params(client, "chunks", dim=dim))}
    if layout.startswith("layout 2"):
        params = lay.index_params(client, "records")
        if "record_id" in dropped.get("records", set()):  # nothing to look records up by
            params = client.prepare_index_params()
            params.add_index(field_name="_v", index_type="FLAT", metric_type="L2")
        parts = {"records": (records, params), **parts}
    return parts


def _rows(i: int, bucket: int, vector: list[float]) -> dict[str, dict[str, Any]]:
    """The record and chunk rows the store writes for record ``i`` (with its vector)."""
    rid, text = f"r{i:07d}", f"item {i} bucket {bucket}"
    digest = hashlib.sha256(text.encode()).hexdigest()
    cid = lay.chunk_id(rid, 0, 0, len(text), digest)
    body = json.dumps({"fields": {"bucket": bucket}, "text": text, "chunks": [cid]})
    return {
        "records": {"pk": lay.record_pk(0, rid), "record_id": rid, "part": 0, "nparts": 1,
                    "content_hash": digest, "body": body, "_v": lay.DUMMY_VECTOR,
                    "f_bucket": bucket},
        "chunks": {"chunk_id": cid, "record_id": rid, "ordinal": 0, "text": text,
                   "terms": keyword_terms(text), "content_hash": digest, "status": "embedded",
                   "error": "", "loc": lay.loc_json(0, len(text), (), None, None),
                   "f_bucket": bucket, "vector": vector, "body": body},
    }  # fmt: skip


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
        for name in ("chunks", "records"):  # the chunk rows, then the commit marker
            if name in parts:  # write_rows sends only the columns of the collection's schema
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
    parser.add_argument(
        "--settle", type=float, default=None, help="seconds between fills (n / 700, at least 10)"
    )
    args = parser.parse_args()
    # Lite goes on building a fill's HNSW graph in a background thread after its flush; a
    # shorter wait let it slow the next fill (stop 41: layout 2 took 30.6 s in round 0 and 47.4 s
    # in round 1 at 100k with 5 s), as benchmarks/milvus.py found for its own fills
    settle = args.settle if args.settle is not None else max(10.0, args.n / 700)
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
                time.sleep(settle)
                shutil.rmtree(folder, ignore_errors=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    raw = float(np.median(times["raw + BM25"]))
    for name, seconds in times.items():
        median = float(np.median(seconds))
        print(f"{name:28s} median {median:6.2f} s  {median / raw:.2f}x raw + BM25")


if __name__ == "__main__":
    main()
