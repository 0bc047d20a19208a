"""Milvus Lite against SQLite on BEIR SciFact, the same vectors on both (issue 44, Milvus side).

The SQLite side is `semsearch eval`'s cached index (``~/.cache/semsearch/scifact-*.embed.db``,
copied into ``--workdir`` first so that the shared cache is never written). The Milvus Lite
collection is written through ``Collection.upsert`` with an embedder that answers every chunk and
sentence-window text from that file's stored vectors (same model id, same tokenizer, so the same
chunks), so nothing is embedded again and only the stores differ; queries are embedded by the
real model once and cached.

Per mode (keyword, semantic, hybrid; limit 10, each mode's default floor, as `semsearch eval`
scores): nDCG@10 on both stores, the mean overlap of the top-10 ids with SQLite's, queries whose
ids differ in order, and p50 per store, the two stores alternating query by query. The load
average is printed with every timing.

Usage: .venv/bin/python benchmarks/milvus_scifact.py [--sqlite PATH] [--workdir DIR]
       [--modes keyword,semantic,hybrid] [--layout3 (compare a layout-3 copy's note too)]
"""

from __future__ import annotations

import argparse
import glob
import os
import shutil
import statistics
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

ROOT = Path(__file__).resolve().parents[1]
sys.path[:] = [str(ROOT)] + [p for p in sys.path if Path(p or ".").resolve() != ROOT / "benchmarks"]

import semsearch  # noqa: E402
from semsearch.embedders.registry import resolve_embedder  # noqa: E402
from semsearch.evaluation import load_beir, score_run  # noqa: E402
from semsearch.schema import Field, Schema  # noqa: E402

SCHEMA = Schema((Field("title", "str"),))


class StoredVectors:
    """An embedder answering document texts from a SQLite index's stored vectors (chunks and
    sentence windows, by text) and queries from the real model, cached."""

    def __init__(self, inner: Any, vectors: dict[str, NDArray[np.float32]]) -> None:
        self.inner, self.vectors = inner, vectors
        self.model_id, self.dim, self.max_tokens = inner.model_id, inner.dim, inner.max_tokens
        self.queries: dict[str, NDArray[np.float32]] = {}
        self.missing = 0

    def token_spans(self, text: str) -> list[tuple[int, int]]:
        return list(self.inner.token_spans(text))

    def embed_documents(self, texts: Sequence[str]) -> NDArray[np.float32]:
        out = []
        for t in texts:
            found = self.vectors.get(t)
            if found is None:  # not in the file: embed it (counted)
                self.missing += 1
                found = self.inner.embed_documents([t])[0]
            out.append(found)
        return np.stack(out).astype(np.float32)

    def embed_query(self, text: str) -> NDArray[np.float32]:
        if text not in self.queries:
            self.queries[text] = self.inner.embed_query(text)
        return self.queries[text]


def stored_vectors(coll: Any) -> dict[str, NDArray[np.float32]]:
    """Every chunk's and sentence window's vector of a SQLite collection, by its text."""
    store, name = coll.store, coll.name
    ids = store.list_ids(name)
    out: dict[str, NDArray[np.float32]] = {}
    for start in range(0, len(ids), 500):
        batch = ids[start : start + 500]
        vectors = store.chunk_vectors(name, batch)
        rows = store._rows(  # chunk ids and texts by record and ordinal
            "SELECT r.id, k.id, k.ordinal, k.text FROM chunks k JOIN records r "
            f"ON r.rowid = k.record_rowid WHERE r.id IN ({','.join('?' * len(batch))})",
            tuple(batch),
        )
        chunk_ids = {}
        for rid, cid, ordinal, text in rows:
            vec = vectors.get(rid, [])[ordinal] if ordinal < len(vectors.get(rid, [])) else None
            if vec is not None:
                out[text] = np.asarray(vec, np.float32)
            chunk_ids[int(cid)] = text
        for cid, windows in store.window_vectors(name, list(chunk_ids)).items():
            text = chunk_ids[cid]
            for (a, b), vec in zip(windows.spans.tolist(), windows.vectors, strict=True):
                out[text[a:b]] = np.asarray(vec, np.float32)
    return out


def load() -> str:
    one, five, fifteen = os.getloadavg()
    return f"{one:.2f} {five:.2f} {fifteen:.2f}"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sqlite", default=None, help="the SciFact eval cache (default: newest)")
    parser.add_argument("--workdir", default="/tmp/milvus-scifact")
    parser.add_argument("--scifact", default=str(ROOT.parent / "shared/data/scifact"))
    parser.add_argument("--modes", default="keyword,semantic,hybrid")
    args = parser.parse_args()
    work = Path(args.workdir)
    work.mkdir(parents=True, exist_ok=True)
    source = (
        args.sqlite
        or sorted(
            glob.glob(os.path.expanduser("~/.cache/semsearch/scifact-*.embed.db")),
            key=os.path.getmtime,
        )[-1]
    )
    sqlite_path = work / "scifact.embed.db"
    if not sqlite_path.exists():
        shutil.copy(source, sqlite_path)
    data = load_beir(args.scifact)
    inner = resolve_embedder(None)
    lite = semsearch.connect(sqlite_path)
    scoll = lite.collection("beir", embedder=inner)
    milvus = semsearch.connect(f"milvus-lite://{work / 'scifact-milvus.db'}")
    embedder = StoredVectors(inner, stored_vectors(scoll))
    mcoll = milvus.collection("beir", schema=SCHEMA, embedder=embedder)
    if mcoll.count() != len(data.corpus):
        start = time.perf_counter()
        records = [
            {"id": d, "title": t, "text": f"{t} {x}".strip()} for d, (t, x) in data.corpus.items()
        ]
        mcoll.upsert(records)
        print(f"milvus ingest {time.perf_counter() - start:.1f} s (load {load()}), "
              f"texts embedded again: {embedder.missing}")  # fmt: skip
    start = time.perf_counter()
    mcoll.search("warm up", mode="keyword", limit=1)
    print(f"milvus first keyword search (Lite flushes the fill first) {time.perf_counter() - start:.2f} s "
          f"(load {load()})")  # fmt: skip
    scoll.embedder = embedder  # both stores embed queries through the same cache
    for mode in args.modes.split(","):
        report(mode, data, scoll, mcoll)
    lite.close()
    milvus.close()


def report(mode: str, data: Any, scoll: Any, mcoll: Any) -> None:
    runs: dict[str, dict[str, dict[str, float]]] = {"sqlite": {}, "milvus": {}}
    times: dict[str, list[float]] = {"sqlite": [], "milvus": []}
    tops: dict[str, dict[str, list[str]]] = {"sqlite": {}, "milvus": {}}
    notes = set()
    first = next(iter(data.queries.values()))  # warm-up: the model, caches
    scoll.search(first, mode=mode, limit=10)
    begin = load()
    for n, (qid, text) in enumerate(data.queries.items()):
        order = [("sqlite", scoll), ("milvus", mcoll)]
        for name, coll in order if n % 2 == 0 else order[::-1]:
            start = time.perf_counter()
            result = coll.search(text, mode=mode, limit=10)
            times[name].append((time.perf_counter() - start) * 1000)
            runs[name][qid] = {h.id: float(10 - r) for r, h in enumerate(result.hits)}
            tops[name][qid] = result.ids
            notes.update(result.notes)
    ndcg = {k: score_run(data.qrels, v)["ndcg_cut_10"] for k, v in runs.items()}
    overlap = statistics.mean(
        len(set(tops["sqlite"][q]) & set(tops["milvus"][q])) / max(1, len(tops["sqlite"][q]))
        if tops["sqlite"][q] else float(not tops["milvus"][q])
        for q in data.queries
    )  # fmt: skip
    differ = sum(tops["sqlite"][q] != tops["milvus"][q] for q in data.queries)
    p50 = {k: statistics.median(v) for k, v in times.items()}
    print(
        f"{mode}: nDCG@10 sqlite {ndcg['sqlite']:.4f} milvus {ndcg['milvus']:.4f} "
        f"(diff {ndcg['milvus'] - ndcg['sqlite']:+.4f}); top-10 overlap {overlap:.4f}, "
        f"{differ} queries differ in ids or order; p50 sqlite {p50['sqlite']:.2f} ms, "
        f"milvus {p50['milvus']:.2f} ms (load {begin} -> {load()})"
    )
    if notes:
        print("  notes:", sorted(notes))


if __name__ == "__main__":
    main()
