"""Memory of a fresh process that opens a store and searches it (run by benchmarks/capacity.py).

Usage: ``python -m benchmarks.capacity_probe LOCATION QUERIES.npy`` prints one JSON object:
``{phase: {"rss": bytes, "anon": bytes, "file": bytes}}`` from /proc/self/status (VmRSS,
RssAnon, RssFile) after each phase:

- ``base``: imports done (semsearch, numpy, faiss or pymilvus), nothing opened;
- ``open``: ``semsearch.connect(LOCATION)`` and the collection's metadata read;
- ``first``: the first semantic search (k=10; loads the graph or the vectors);
- ``warm``: every query once, then a 1% and a 10% filter twice each (the filter cache filled);
- ``keyword``: one keyword search per query (the SQLite store loads its keyword sidecar).

Each reading follows a garbage collection and glibc's ``malloc_trim(0)``. Anonymous memory is
the process's own; file-backed pages are memory-mapped files (HNSW graph,
sidecar arrays), shared with the page cache and counted only once touched.
"""

from __future__ import annotations

import ctypes
import gc
import json
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.capacity_stores import NAME, schema, word  # noqa: E402

FIELDS = {"VmRSS": "rss", "RssAnon": "anon", "RssFile": "file"}


def status() -> dict[str, int]:
    """This process's resident bytes: total, anonymous and file-backed, after a garbage
    collection and ``malloc_trim`` (so freed temporaries the allocator kept do not count)."""
    gc.collect()
    ctypes.CDLL("libc.so.6").malloc_trim(0)
    out = {}
    with open("/proc/self/status", encoding="ascii") as f:
        for line in f:
            key, _, value = line.partition(":")
            if key in FIELDS:
                out[FIELDS[key]] = int(value.split()[0]) * 1024  # kB
    return out


def main(location: str, queries_path: str) -> None:
    import semsearch
    from semsearch.filters import parse_filter

    if location.startswith("milvus-lite:"):
        import milvus_lite  # noqa: F401
        import pymilvus  # noqa: F401
    else:
        import faiss  # noqa: F401
    queries = np.load(queries_path)
    filters = [parse_filter(w, schema()) for w in ({"bucket": 0}, {"bucket": {"$lt": 10}})]
    phases = {"base": status()}
    db = semsearch.connect(location)
    store = db.store
    store.get_collection(NAME)
    phases["open"] = status()
    store.vector_search(NAME, queries[0], 10, None)
    phases["first"] = status()
    for q in queries:
        store.vector_search(NAME, q, 10, None)
    for where in filters * 2:
        store.vector_search(NAME, queries[0], 10, where)
    phases["warm"] = status()
    for i in range(len(queries)):
        store.keyword_search(NAME, f"{word(i % 50)} {word(1000 + i)}", 10, None)
    phases["keyword"] = status()
    db.close()
    print(json.dumps(phases))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
