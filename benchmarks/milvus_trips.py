"""Round trips to Milvus per operation through semsearch's Milvus store (issue 23, step 1).

Usage:
    .venv/bin/python benchmarks/milvus_trips.py --n 2000     # also --n 10000

Counts the pymilvus client calls (search, query, get, upsert, delete, flush, ...) that one
``Collection`` operation makes on Milvus Lite, and the time spent in them, averaged over
``--reps`` different queries. Records: ``n`` texts of 12 words from a 500-word vocabulary with an
int field ``bucket = i % 100`` (so ``bucket == 3`` keeps 1% and ``bucket < 10`` 10%), embedded
by the deterministic fake embedder (384-d; counts do not depend on the model). Raw pymilvus makes
one call per search and one insert per batch plus one flush. Counts do not depend on machine
load; the times do (print only, nothing is written to docs).
"""

from __future__ import annotations

import argparse
import collections
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import semsearch  # noqa: E402
from semsearch.embedders.fake import FakeEmbedder  # noqa: E402
from semsearch.schema import Schema  # noqa: E402

CALLS = ("search", "query", "get", "upsert", "insert", "delete", "flush", "query_iterator")


class Counter:
    """Wraps a pymilvus client's methods to count calls and time them."""

    def __init__(self, client: Any) -> None:
        self.calls: collections.Counter[str] = collections.Counter()
        self.seconds: collections.Counter[str] = collections.Counter()
        for name in CALLS:
            setattr(client, name, self._wrap(name, getattr(client, name)))

    def _wrap(self, name: str, method: Callable[..., Any]) -> Callable[..., Any]:
        def wrapped(*args: Any, **kwargs: Any) -> Any:
            started = time.perf_counter()
            try:
                return method(*args, **kwargs)
            finally:
                self.seconds[name] += time.perf_counter() - started
                self.calls[name] += 1

        return wrapped

    def report(self, label: str, ops: list[Callable[[], Any]]) -> None:
        self.calls.clear()
        self.seconds.clear()
        started = time.perf_counter()
        for op in ops:
            op()
        ms = (time.perf_counter() - started) / len(ops) * 1000
        trips = sum(self.calls.values()) / len(ops)
        detail = ", ".join(
            f"{k} {v / len(ops):.1f} ({self.seconds[k] / len(ops) * 1000:.0f} ms)"
            for k, v in sorted(self.calls.items())
        )
        print(f"| {label} | {trips:.1f} | {detail} | {ms:.1f} |", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--n", type=int, default=2000)
    parser.add_argument("--reps", type=int, default=5)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    words = [f"w{i}" for i in range(500)]
    records = [
        {"id": f"r{i}", "bucket": i % 100, "text": " ".join(rng.choice(words, 12))}
        for i in range(args.n)
    ]
    queries = [" ".join(rng.choice(words, 3)) for _ in range(args.reps)]
    tmp = Path(tempfile.mkdtemp(prefix="semsearch-milvus-trips-"))
    try:
        db = semsearch.connect(f"milvus-lite://{tmp / 'trips.db'}")
        coll = db.collection(
            "c", schema=Schema.from_types({"bucket": "int"}), embedder=FakeEmbedder(384)
        )
        counter = Counter(db.store.client())  # type: ignore[attr-defined]
        print(f"{args.n:,} records\n\n| operation | round trips | calls (ms in them) | ms |")
        print("|---|---|---|---|")
        counter.report(f"upsert {args.n:,} records", [lambda: coll.upsert(records)])
        changed = [dict(r, text=r["text"] + " more") for r in records[:500]]
        counter.report("upsert 500 changed records", [lambda: coll.upsert(changed)])

        def searches(**kw: Any) -> list[Callable[[], Any]]:
            return [lambda q=q: coll.search(q, min_score=None, **kw) for q in queries]

        counter.report("semantic (first, flushes)", searches()[:1])
        counter.report("semantic", searches())
        counter.report("semantic, 1% filter", searches(where={"bucket": 3}))
        counter.report("semantic, 10% filter", searches(where={"bucket": {"$lt": 10}}))
        counter.report("semantic, 50% filter", searches(where={"bucket": {"$lt": 50}}))
        counter.report("keyword", searches(mode="keyword"))
        counter.report("hybrid", searches(mode="hybrid"))
        counter.report("find, 1% filter", [lambda: coll.find(where={"bucket": 3}, limit=10)])
        db.close()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
