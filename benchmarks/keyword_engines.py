"""Keyword engines compared at 100k and 1M documents (issue 26): FTS5 as before, the keyword
sidecar, an exhaustive numpy BM25 yardstick, bm25s and tantivy, in one interleaved run.

Corpus: BEIR SciFact's 5,183 documents repeated with perturbed ids (``<id>~<copy>``) up to N,
as issue 26 allows for speed; queries: SciFact's 1,109 natural-language claims (about 10
words). Each record has a ``bucket`` field (copy-independent: record number mod 1000) for
filters of 0.1%, 1% and 10% selectivity. Warm, k=10; each query runs every engine once, in a
rotating order, so load drifts hit all engines alike.

Engines:

- ``fts5``: the SQLite store's record-level FTS5 ranking as before issue 26 (the store's
  keyword search with ``keyword_sidecar = False``);
- ``sidecar``: the same search answered by the keyword sidecar (bm25/sidecar.py);
  both are ``store.keyword_search``: ranking plus the SQL that names the hits;
- ``search()``: ``Collection.search(mode="keyword")`` with the sidecar: what users call, with
  the best-chunk query for the shown hits (stores/sqlite/keyword.py ``best_chunks``);
- ``numpy``: the issue's yardstick, a plain exhaustive BM25 (every query term, no SQL, no
  filter) over the sidecar's posting arrays;
- ``bm25s`` (0.3.16) and ``tantivy`` (0.27.0, en_stem: Snowball, not FTS5's Porter) over the
  same title and body texts, title boosted 2 in tantivy, when installed (``[bench]`` extra).
- ``postgres`` and ``milvus``: those stores' own keyword search (benchmarks/keyword_peers.py),
  at 100k documents and below;
- the search modes, ``Collection.search(mode=...)`` for keyword, semantic and hybrid, with
  the query vectors cached (embedding excluded), vectors from the fake embedder (dim 384; speed
  only), up to 100k documents (the 1M run is keyword-only: a 1M HNSW build is
  benchmarks/ann.py's subject). They run interleaved with each other only, after the engines
  above: the hybrid ratio (hybrid over the slower of keyword and semantic) compares three
  timings taken under the same conditions. Interleaved with FTS5's 50 ms queries, which sweep
  the CPU caches, hybrid paid about 1.3 ms more than run alone (stop 33).

Also: filtered sidecar p50 at 1% and 10% with the min(k, matches) check, build time and disk
of the keyword sidecar beside the FTS5 table and the HNSW sidecar, and SciFact test nDCG@10
of keyword search with and without the sidecar (the real corpus, once).

Usage: .venv/bin/python benchmarks/keyword_engines.py [--sizes 100000,1000000]
       [--queries 300] [--workdir DIR] [--scifact ../shared/data/scifact] [--no-write]
       [--peers postgres,milvus] [--prepare]
Writes the "keyword-engines" section of docs/benchmarks.md (not with ``--no-write``). The
indexes are kept in ``--workdir`` and reused by a second run; ``--prepare`` only writes them
(about an hour on 2 cores: the 1M ingest through ``Collection.upsert``, the 100k HNSW build and
the peers' ingest dominate), so that the measured run on a quiet machine takes minutes.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
# this folder would come first on sys.path and its pgvector.py shadow the `pgvector` package
sys.path[:] = [str(ROOT)] + [p for p in sys.path if Path(p or ".").resolve() != ROOT / "benchmarks"]

from benchmarks.keyword_peers import peer_engines  # noqa: E402
from benchmarks.report import machine_info, markdown_table, write_section  # noqa: E402
from semsearch import connect  # noqa: E402
from semsearch.bm25.sidecar import KeywordSidecar  # noqa: E402
from semsearch.embedders.fake import FakeEmbedder  # noqa: E402
from semsearch.embedders.query_cache import CachedEmbedder, QueryCache  # noqa: E402
from semsearch.evaluation import load_beir, score_run  # noqa: E402
from semsearch.filters import parse_filter  # noqa: E402
from semsearch.keyword_query import FTS5_IDF_FLOOR as IDF_FLOOR  # noqa: E402
from semsearch.keyword_query import K1, B, parse_clauses  # noqa: E402
from semsearch.schema import Field, Schema  # noqa: E402

SCHEMA = Schema((Field("title", "str"), Field("bucket", "int")))
#: The search modes timed against each other (the hybrid ratio), query embeddings cached.
MODES = ("keyword", "semantic", "hybrid")
#: Sizes up to this get vectors (hybrid, semantic and HNSW columns); above it keyword only (a
#: 1M-vector HNSW build takes hours on 2 cores and is benchmarks/ann.py's subject).
VECTORS_MAX = 100_000
DIM = 384


def corpus(scifact: Path, n: int) -> list[dict[str, Any]]:
    docs = [json.loads(line) for line in (scifact / "corpus.jsonl").open()]
    out = []
    for i in range(n):
        d = docs[i % len(docs)]
        title, text = str(d.get("title") or ""), str(d.get("text") or "")
        rid = f"{d['_id']}~{i // len(docs)}"
        out.append(
            {"id": rid, "title": title, "text": f"{title} {text}".strip(), "bucket": i % 1000}
        )
    return out


def build(path: Path, records: list[dict[str, Any]], embed: bool) -> float:
    start = time.perf_counter()
    with connect(path) as db:
        coll = db.collection("bench", schema=SCHEMA, embedder=FakeEmbedder(DIM))
        for s in range(0, len(records), 5000):
            coll.upsert(records[s : s + 5000], embed=embed)
    return time.perf_counter() - start


def sidecar_of(coll: Any) -> tuple[KeywordSidecar, float, float]:
    """(the collection's sidecar, its build seconds, its file MB), built in the foreground."""
    coll.search("warm", mode="keyword", limit=1)
    (sidecar,) = coll.store._keywords.sidecars.values()
    sidecar.wait()
    start = time.perf_counter()
    sidecar._build_in_background()  # once more, timed, on this thread
    seconds = time.perf_counter() - start
    return sidecar, seconds, os.path.getsize(sidecar.path) / 1e6


def numpy_bm25(sidecar: KeywordSidecar, rows: Any, k: int) -> Callable[[str], Any]:
    """The yardstick: every query term scored over every posting, top k by argpartition
    (phrases as their words: the yardstick has no positions)."""
    snap = sidecar.current(rows)
    assert snap is not None
    p = snap.live.base
    n = len(p.rowids)

    def run(text: str) -> Any:
        terms = [t for _, ts in sidecar.clause_terms(parse_clauses(text)) for t in ts]
        scores = np.zeros(n)
        for t in terms:
            tid = p.term_ids.get(t)
            if tid is None:
                continue
            lo, hi = p.offsets[tid], p.offsets[tid + 1]
            idf = max(np.log((n - (hi - lo) + 0.5) / (hi - lo + 0.5)), IDF_FLOOR)
            d, f = p.docs[lo:hi], p.freqs[lo:hi]
            scores[d] += idf * f * (K1 + 1) / (f + p.norm[d])
        top = np.argpartition(-scores, k)[:k]
        return p.rowids[top[np.argsort(-scores[top])]]

    assert B == 0.75  # p.norm holds k1 * (1 - b + b * |d| / avgdl)
    return run


def bm25s_engine(records: list[dict[str, Any]], k: int) -> tuple[Callable[[str], Any], float]:
    import bm25s

    start = time.perf_counter()
    retriever = bm25s.BM25()
    retriever.index(
        bm25s.tokenize([r["text"] for r in records], stopwords="en", show_progress=False),
        show_progress=False,
    )
    seconds = time.perf_counter() - start

    def run(text: str) -> Any:
        q = bm25s.tokenize([text], stopwords="en", show_progress=False)
        return retriever.retrieve(q, k=k, show_progress=False, n_threads=1)

    return run, seconds


def tantivy_engine(
    records: list[dict[str, Any]], k: int, folder: Path
) -> tuple[Callable[[str], Any], float, float]:
    import tantivy

    sb = tantivy.SchemaBuilder()
    sb.add_text_field("title", stored=False, tokenizer_name="en_stem")
    sb.add_text_field("body", stored=False, tokenizer_name="en_stem")
    sb.add_integer_field("n", stored=True, fast=True)
    schema = sb.build()
    folder.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    index = tantivy.Index(schema, path=str(folder))
    writer = index.writer(heap_size=200_000_000, num_threads=1)
    for i, r in enumerate(records):
        body = r["text"][len(r["title"]) :] if r["text"].startswith(r["title"]) else r["text"]
        writer.add_document(tantivy.Document(title=r["title"], body=body, n=i))
    writer.commit()
    writer.wait_merging_threads()
    index.reload()
    seconds = time.perf_counter() - start
    searcher = index.searcher()
    disk = sum(f.stat().st_size for f in folder.iterdir()) / 1e6
    word = re.compile(r"\w+")

    def run(text: str) -> Any:
        q = index.parse_query(" ".join(word.findall(text)), ["title", "body"], {"title": 2.0})
        return searcher.search(q, k).hits

    return run, seconds, disk


#: Engines that keep nothing between queries but the OS page cache: the ``warm`` claims skip
#: them (FTS5 takes over a second a query at 100k).
STATELESS = {"fts5"}


def interleaved(
    engines: dict[str, Callable[[str], Any]], texts: list[str], warm: Sequence[str] = ()
) -> dict[str, float]:
    """p50 ms of each engine over ``texts``, order rotating, after a warm-up: the first 20 of
    ``texts``, then ``warm`` (other claims, not timed) through each engine not
    :data:`STATELESS`, so that caches hold what a running server's would: the common words,
    not these queries' rare ones (PostgreSQL keeps the postings it read: postings_cache.py)."""
    names = list(engines)
    for text in texts[:20]:
        for name in names:
            engines[name](text)
    for text in warm:
        for name in names:
            if name not in STATELESS:
                engines[name](text)
    times: dict[str, list[float]] = {n: [] for n in names}
    for i, text in enumerate(texts):
        for name in names[i % len(names) :] + names[: i % len(names)]:
            start = time.perf_counter()
            engines[name](text)
            times[name].append((time.perf_counter() - start) * 1000)
    return {n: statistics.median(t) for n, t in times.items()}


def prepare(n: int, scifact: Path, work: Path, peers: list[str]) -> None:
    """Write what :func:`measure_size` reuses (the store file, its keyword and HNSW sidecars,
    the peers' collections): the slow part, which need not run on a quiet machine."""
    records = corpus(scifact, n)
    path = work / f"kw-{n}.embed.db"
    if not path.exists():
        print(f"{n}: ingest {build(path, records, n <= VECTORS_MAX):.0f} s", flush=True)
    with connect(path) as db:
        coll = db.collection("bench", embedder=FakeEmbedder(DIM))
        coll.search("warm", mode="keyword", limit=1)
        for sidecar in coll.store._keywords.sidecars.values():
            sidecar.wait()
        if n <= VECTORS_MAX:
            coll.search("warm", limit=1)
    with peer_engines(peers if n <= 100_000 else [], records, SCHEMA, work, 10):
        pass


def measure_size(
    n: int, scifact: Path, work: Path, texts: list[str], k: int, peers: list[str],
    warm: Sequence[str] = (),
) -> dict[str, Any]:  # fmt: skip
    records = corpus(scifact, n)
    path = work / f"kw-{n}.embed.db"
    vectors = n <= VECTORS_MAX
    ingest = build(path, records, vectors) if not path.exists() else float("nan")
    warm_page_cache(path)
    db = connect(path)
    coll = db.collection("bench", embedder=CachedEmbedder(FakeEmbedder(DIM), QueryCache(4096)))
    store = coll.store
    sidecar, kw_build, kw_mb = sidecar_of(coll)
    ann_s = ann_mb = float("nan")
    if vectors:
        start = time.perf_counter()
        coll.search_by_vector(FakeEmbedder(DIM).embed_query("warm"), limit=10)  # HNSW build
        ann_s = time.perf_counter() - start
        ann_mb = sum(f.stat().st_size for f in work.glob(f"kw-{n}.embed.db.c*.*")) / 1e6 - kw_mb

    def store_kw(on: bool, where: Any = None) -> Callable[[str], Any]:
        def run(text: str) -> Any:
            store.keyword_sidecar = on
            try:
                return store.keyword_search("bench", text, k, where)
            finally:
                store.keyword_sidecar = True

        return run

    engines: dict[str, Callable[[str], Any]] = {
        "fts5": store_kw(False),
        "sidecar": store_kw(True),
        "search()": lambda t: coll.search(t, mode="keyword", limit=k),
        "numpy": store._in_read_txn(lambda _: numpy_bm25(sidecar, store._rows, k)),
    }
    builds: dict[str, tuple[float, float]] = {}
    for name, make in (("bm25s", lambda: bm25s_engine(records, k)), ("tantivy", None)):
        try:
            if name == "bm25s":
                engines[name], secs = make()  # type: ignore[misc]
                builds[name] = (secs, float("nan"))
            else:
                run, secs, disk = tantivy_engine(records, k, work / f"tantivy-{n}")
                engines[name], builds[name] = run, (secs, disk)
        except ImportError:
            pass
    with peer_engines(peers if n <= 100_000 else [], records, SCHEMA, work, k) as extra:
        p50 = interleaved({**engines, **extra}, texts, warm)
    modes: dict[str, float] = {}
    if vectors:  # the three search modes among themselves: the hybrid ratio's run
        for t in texts:  # the query embeddings are cached: semantic and hybrid exclude them
            coll.search(t, mode="hybrid", limit=k)

        def mode_search(mode: str) -> Callable[[str], Any]:
            return lambda text: coll.search(text, mode=mode, limit=k)

        modes = interleaved({m: mode_search(m) for m in MODES}, texts)
    filtered = {}
    for share, buckets in (("1%", list(range(10))), ("10%", list(range(100)))):
        where = parse_filter({"bucket": {"$in": buckets}}, SCHEMA)
        run, fts = store_kw(True, where), store_kw(False, where)
        differ = sum([h.record_id for h in run(t)] != [h.record_id for h in fts(t)] for t in texts)
        filtered[share] = (interleaved({share: run}, texts)[share], differ)
    db.close()
    return {
        "n": n, "ingest": ingest, "p50": p50, "modes": modes, "filtered": filtered,
        "kw_build": kw_build, "kw_mb": kw_mb, "ann_s": ann_s, "ann_mb": ann_mb, "builds": builds,
        "fts_mb": fts_mb(path),
    }  # fmt: skip


def warm_page_cache(path: Path) -> None:
    """Read the file once, so that "warm" means its pages are in the OS cache for every engine
    (the in-memory engines hold everything; the SQLite paths read chunk text and records)."""
    with path.open("rb") as f:
        while f.read(1 << 24):
            pass


def fts_mb(path: Path) -> float:
    import sqlite3

    conn = sqlite3.connect(path)
    try:
        row = conn.execute("SELECT sum(pgsize) FROM dbstat WHERE name LIKE 'fts_rec_%'").fetchone()
        return float(row[0] or 0) / 1e6
    except sqlite3.Error:
        return float("nan")
    finally:
        conn.close()


def quality(scifact: Path, work: Path) -> dict[str, float]:
    """SciFact test keyword nDCG@10, FTS5 path against the sidecar, on the real corpus."""
    data = load_beir(scifact)
    db = connect(work / "scifact-kw.embed.db")
    coll = db.collection(
        "scifact", schema=Schema((Field("title", "str"),)), embedder=FakeEmbedder(16)
    )
    coll.upsert(
        [{"id": d, "title": t, "text": f"{t} {x}".strip()} for d, (t, x) in data.corpus.items()],
        embed=False,
    )
    sidecar_of(coll)
    out = {}
    for name, on in (("fts5", False), ("sidecar", True)):
        coll.store.keyword_sidecar = on
        run = {}
        for qid, text in data.queries.items():
            hits = coll.search(text, mode="keyword", limit=100).ids
            run[qid] = {d: float(100 - r) for r, d in enumerate(hits)}
        out[name] = score_run(data.qrels, run)["ndcg_cut_10"]
    coll.store.keyword_sidecar = True
    db.close()
    return out


def render(
    results: list[dict[str, Any]], ndcg: dict[str, float], queries: int, warm: int = 0
) -> str:
    engines = ["fts5", "sidecar", "search()", "numpy", "bm25s", "tantivy", "postgres", "milvus"]
    rows = []
    for r in results:
        p, m = r["p50"], r["modes"]
        ratio = "-"
        if m:  # the slower of the two legs, as users call them, in the same run as hybrid
            ratio = f"{m['hybrid'] / max(m['semantic'], m['keyword']):.2f}"
        rows.append(
            [f"{r['n']:,}"] + [f"{p[e]:.2f}" if e in p else "-" for e in engines]
            + [f"{m[x]:.2f}" if m else "-" for x in MODES] + [ratio]
            + [f"{r['filtered'][s][0]:.2f} ({r['filtered'][s][1]} differ)" for s in ("1%", "10%")]
        )  # fmt: skip
    speed = markdown_table(
        ["documents", *[f"{e} p50 ms" for e in engines],
         *[f"{x} search() p50 ms (modes run)" for x in MODES],
         "hybrid / slower leg", "sidecar 1% filter ms", "sidecar 10% filter ms"], rows,
    )  # fmt: skip
    disk = markdown_table(
        ["documents", "FTS5 record table MB", "keyword sidecar build s", "keyword sidecar MB",
         "HNSW sidecar first search s", "HNSW sidecar MB", "bm25s build s", "tantivy build s",
         "tantivy MB"],
        [[f"{r['n']:,}", f"{r['fts_mb']:.0f}", f"{r['kw_build']:.1f}", f"{r['kw_mb']:.0f}",
          f"{r['ann_s']:.1f}", f"{r['ann_mb']:.0f}",
          *(f"{r['builds'].get(e, (float('nan'),) * 2)[i]:.1f}" for e, i in
            (("bm25s", 0), ("tantivy", 0), ("tantivy", 1)))] for r in results],
    )  # fmt: skip
    return (
        "## Keyword engines (issue 26)\n\n"
        f"`benchmarks/keyword_engines.py`: SciFact's corpus repeated with perturbed ids, "
        f"{queries} SciFact queries, warm, k=10, engines interleaved per query. Warm: 20 of "
        f"the queries, then {warm} other SciFact claims (untimed) through every engine but FTS5, "
        "so that caches hold what a running server's would (PostgreSQL keeps the postings it "
        "has read). See the script's "
        "docstring for what each column runs. The three search modes (keyword, semantic, hybrid "
        "through `Collection.search`, query embeddings cached) are timed in a run of their own, "
        "interleaved with each other only: the hybrid ratio compares them under the same "
        "conditions. `differ`: filtered queries whose sidecar hits "
        "(ids, in order) differ from the FTS5 path's, which returns min(k, matches).\n\n"
        f"{speed}\n\n{disk}\n\n"
        f"SciFact test keyword nDCG@10 (real corpus): FTS5 {ndcg['fts5']:.4f}, "
        f"sidecar {ndcg['sidecar']:.4f}.\n\n{machine_info(('numpy', 'bm25s', 'tantivy'))}\n"
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="100000,1000000")
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument(
        "--warm-queries", type=int, default=300,
        help="other SciFact claims run (untimed) through the caching engines first",
    )  # fmt: skip
    parser.add_argument("--workdir", default=None)
    parser.add_argument(
        "--scifact", default=str(Path(__file__).resolve().parents[2] / "shared/data/scifact")
    )
    parser.add_argument("--no-write", action="store_true")
    parser.add_argument(
        "--prepare", action="store_true", help="only write the indexes a later run reuses"
    )
    parser.add_argument("--peers", default="postgres,milvus", help="at 100k and below; '' for none")
    args = parser.parse_args()
    scifact = Path(args.scifact)
    work = Path(args.workdir or tempfile.mkdtemp(prefix="kw-engines-"))
    work.mkdir(parents=True, exist_ok=True)
    texts = [json.loads(line)["text"] for line in (scifact / "queries.jsonl").open()]
    warm = texts[args.queries : args.queries + args.warm_queries]
    texts = texts[: args.queries]
    results = []
    peers = [p for p in args.peers.split(",") if p]
    if args.prepare:
        for n in (int(s) for s in args.sizes.split(",")):
            prepare(n, scifact, work, peers)
        return
    for n in (int(s) for s in args.sizes.split(",")):
        results.append(measure_size(n, scifact, work, texts, 10, peers, warm))
        print(json.dumps(results[-1], default=str), flush=True)
    ndcg = quality(scifact, work)
    print(ndcg)
    body = render(results, ndcg, len(texts), len(warm))
    print(body)
    if not args.no_write:
        write_section("keyword-engines", body)


if __name__ == "__main__":
    main()
