"""Load test of `semsearch serve`: concurrent clients searching the 3,291-product catalogue.

Loopback only, and it stops by itself. The server runs in a subprocess (uvicorn with
``--workers`` processes, as ``semsearch serve --workers N``); the clients are asyncio tasks on
one aiohttp session in this process (aiohttp costs the client about half the CPU per request
that httpx does, which leaves more of the shared cores to the server), each sending its next
search as soon as the previous one answers, for a fixed duration. Client and server share the
machine's cores, so the numbers are a floor for a dedicated server.

Modes:
- ``keyword``: BM25 over SQLite FTS5; no embedding anywhere.
- ``semantic``: exact cosine scan over the products' all-MiniLM-L6-v2 vectors; the query
  vectors are computed once before the run and served from a cache, so the figures exclude the
  query embedding (8-12 ms per query on this machine, see MACHINE-NOTES).
- ``hybrid``: both legs and their fusion, with the same cached query vectors as ``semantic``.

    .venv/bin/python -m benchmarks.http_load [--clients 50] [--seconds 60] [--workers 1 2]
        [--modes keyword semantic hybrid] [--index PATH] [--no-write]

Prints a table and rewrites the ``http-load`` section of docs/benchmarks.md (not with
``--no-write``).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.report import machine_info, markdown_table, percentile, write_section

SECTION = "http-load"
ROOT = Path(__file__).resolve().parents[1]
PRODUCTS = ROOT.parent / "shared" / "data" / "products" / "bestbuy_products.json"
QUERIES = [
    "wireless headphones",
    "iphone case",
    "car charger",
    "bluetooth speaker",
    "screen protector",
    "prepaid phone",
    "samsung galaxy",
    "usb cable",
    "portable battery pack",
    "waterproof case",
    "unlocked smartphone",
    "selfie stick",
    "phone holder for the car",
    "noise cancelling",
    "wall charger",
    "memory card",
    "smart watch",
    "fitness tracker",
    "earbuds for running",
    "rugged phone case",
]
FIELDS = {"brand": "str", "price": "float", "categories": "list[str]", "popularity": "int"}


def product_records() -> list[dict[str, Any]]:
    """The catalogue as records; the id is the Best Buy SKU from the image file name."""
    items = json.loads(PRODUCTS.read_text(encoding="utf-8"))
    return [
        {"id": re.sub(r"\D.*$", "", item["image"].rsplit("/", 1)[-1]), **item} for item in items
    ]


def build_index(path: Path) -> None:
    """Load the products into collection ``products`` with the default model (embedded)."""
    import semsearch

    schema = semsearch.Schema.from_types(FIELDS, text=("name", "description"))
    with semsearch.connect(path) as db:
        db.collection("products", schema=schema).upsert(product_records())


def bench_app() -> Any:
    """The app of one server worker (a uvicorn factory): ``semsearch serve``'s own set-up, with
    every collection's embedder answering the benchmark queries from a cache computed at start,
    so semantic figures exclude query embedding."""
    from semsearch.server.http.app import create_app
    from semsearch.server.http.process import state_from_env

    state = state_from_env()
    embedder = state.collection("products").embedder
    cache = {q: embedder.embed_query(q) for q in QUERIES}
    original = embedder.embed_query
    embedder.embed_query = lambda text: cache[text] if text in cache else original(text)  # type: ignore[method-assign]
    return create_app(state, owns_db=True, warm_up=True)  # as `semsearch serve` does


def serve(index: str, port: int, workers: int) -> None:
    """The server process: ``workers`` uvicorn workers of :func:`bench_app`."""
    import uvicorn

    from semsearch.server.http.process import ENV_SERVE_LOCATION

    os.environ[ENV_SERVE_LOCATION] = index
    uvicorn.run(
        "benchmarks.http_load:bench_app",
        factory=True,
        host="127.0.0.1",
        port=port,
        workers=workers,
        log_level="warning",
    )


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def _search_once(http: Any, url: str, body: dict[str, Any]) -> str:
    """One search; "" when it answered 200 with hits, else why not."""
    try:
        async with http.post(f"{url}/collections/products/search", json=body) as response:
            doc = await response.json()
            if response.status == 200 and bool(doc["hits"]):
                return ""
            return f"HTTP {response.status}: {str(doc)[:200]}"
    except Exception as exc:  # any transport error counts as an error
        return f"{type(exc).__name__}: {exc}"


async def _client(
    http: Any, url: str, mode: str, window: tuple[float, float], delay: float, start: int,
    out: dict[str, Any],
) -> None:  # fmt: skip
    """One closed-loop client: starts after ``delay`` s; measures requests begun in ``window``
    (errors count at any time)."""
    await asyncio.sleep(delay)
    measure_from, deadline = window
    n = start
    while time.perf_counter() < deadline:
        body = {"query": QUERIES[n % len(QUERIES)], "mode": mode, "limit": 10}
        n += 1
        began = time.perf_counter()
        why = await _search_once(http, url, body)
        if began >= measure_from:  # requests of the ramp-up load the server but are not timed
            out["latencies"].append((time.perf_counter() - began) * 1000)
        if why:
            out["errors"] += 1
            out["why"].append(why)


async def run_load(
    url: str, mode: str, clients: int, seconds: float, ramp: float = 0.0
) -> dict[str, Any]:
    """``clients`` tasks searching for ``seconds``; latencies in ms, error count, QPS.

    With ``ramp`` > 0 the clients start one by one over ``ramp`` seconds (like locust's spawn
    rate), and only requests begun after the last one started are measured. Opened in one
    burst, the connections land on whichever uvicorn worker is in ``accept()`` at that moment,
    and keep-alive keeps that split for the whole run (in one burst-started run, 27 clients
    averaged 57 ms per request and the other 23 36-56 ms); one at a time, they spread evenly.
    """
    import aiohttp

    out: dict[str, Any] = {"latencies": [], "errors": 0, "why": []}
    connector = aiohttp.TCPConnector(limit=clients)
    timeout = aiohttp.ClientTimeout(total=30)
    async with aiohttp.ClientSession(connector=connector, timeout=timeout) as http:
        for q in QUERIES:  # warm up: caches, connections
            body = {"query": q, "mode": mode}
            async with http.post(f"{url}/collections/products/search", json=body) as response:
                await response.read()
        measure_from = time.perf_counter() + ramp
        window = (measure_from, measure_from + seconds)
        await asyncio.gather(
            *(_client(http, url, mode, window, ramp * i / clients, i, out) for i in range(clients))
        )
        out["elapsed"] = time.perf_counter() - measure_from
    for why in sorted(set(out["why"]))[:5]:
        print(f"error ({mode}, {clients} clients): {why}", file=sys.stderr)
    return out


def _wait(url: str, proc: subprocess.Popen[bytes]) -> None:
    import httpx

    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError("the server exited")
        try:
            if httpx.get(f"{url}/health", timeout=2).status_code == 200:
                return
        except httpx.TransportError:
            time.sleep(0.2)
    raise RuntimeError("the server did not start")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--modes", nargs="+", default=["keyword", "semantic", "hybrid"],
                        choices=["keyword", "semantic", "hybrid"])  # fmt: skip
    parser.add_argument("--workers", nargs="+", type=int, default=[1, 2],
                        help="server processes; one run per value")  # fmt: skip
    parser.add_argument("--ramp", type=float, default=2.0,
                        help="seconds over which the clients start, not measured (0: burst)")  # fmt: skip
    parser.add_argument("--index", help="an existing products index (built if omitted)")
    parser.add_argument("--no-write", action="store_true",
                        help="print only; leave docs/benchmarks.md alone (smoke runs)")  # fmt: skip
    parser.add_argument("--serve", help=argparse.SUPPRESS)  # internal: the server process
    parser.add_argument("--port", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        serve(args.serve, args.port, args.workers[0])
        return
    with tempfile.TemporaryDirectory() as tmp:
        index = Path(args.index) if args.index else Path(tmp) / "products.embed.db"
        build_seconds = None
        if not index.exists():
            began = time.perf_counter()
            build_index(index)
            build_seconds = time.perf_counter() - began
        rows = [
            row
            for workers in args.workers
            for mode in args.modes
            for row in measure_mode(index, mode, args.clients, args.seconds, workers, args.ramp)
        ]
    headers = [
        "workers",
        "mode",
        "clients",
        "seconds",
        "requests",
        "QPS",
        "p50 ms",
        "p99 ms",
        "errors",
    ]
    table = markdown_table(headers, rows)
    print(table)
    if args.no_write:
        return
    verdict = reading(rows, args.clients)
    built = f" (built in {build_seconds:.0f} s)" if build_seconds else ""
    write_section(
        SECTION,
        f"""## HTTP API under load (`semsearch serve`, 3,291 products)

{args.clients} concurrent clients (asyncio + aiohttp, one connection each) search the products
collection{built} on 127.0.0.1 for {args.seconds:.0f} s per mode, each sending its next request as
soon as the previous one answers. The clients start one by one over {args.ramp:g} s first, which
is not measured: opened in one burst, the keep-alive connections land unevenly on the workers and
stay there (`--ramp 0` shows that case). Server: `semsearch serve --workers N` (N uvicorn processes,
each with its own SQLite connection); client and server share the machine. Latency is measured at the client (request sent to response parsed). Keyword mode runs
no embedding; semantic and hybrid modes serve the query vectors from a cache, so they **exclude query
embedding** (all-MiniLM-L6-v2 adds 8-12 ms per query on an idle core). The 1-client row of each
mode is the service time of one request without queueing; with N clients busy all the time,
Little's law makes the mean latency about N / QPS. Targets: 0 errors, p99 under 100 ms.

Machine: {machine_info(("numpy", "torch", "fastapi", "uvicorn", "aiohttp"))}.

Command: `.venv/bin/python -m benchmarks.http_load --clients {args.clients} --seconds {args.seconds:.0f} --workers {" ".join(map(str, args.workers))} --ramp {args.ramp:g}`

{table}

{verdict}
""",
    )


def reading(rows: list[list[object]], clients: int) -> str:
    """One paragraph: is the target met at ``clients`` clients, and what bounds the latency."""
    lines = []
    for row in rows:
        if row[2] != clients:
            continue
        workers, mode = row[0], row[1]
        qps, p99, errors = float(str(row[5])), float(str(row[7])), int(str(row[8]))
        met = errors == 0 and p99 < 100
        lines.append(
            f"{mode} with {workers} worker(s): {errors} errors, p99 {p99:.0f} ms: "
            f"target {'met' if met else 'NOT met'}; "
            f"Little's law predicts a mean of {clients} / {qps:.0f} QPS = {1000 * clients / qps:.0f} ms."
        )
    cores = os.cpu_count() or 1
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    lines.append(
        f"Load average after the run: {load} on {cores} cores. p99 under 100 ms at {clients} "
        f"closed-loop clients needs at least {clients * 10} QPS (Little's law), i.e. at most "
        f"{1000 * cores / (clients * 10):.0f} ms of CPU per request for server and client "
        "together on this machine."
    )
    return "Reading: " + " ".join(lines)


def measure_mode(
    index: Path, mode: str, clients: int, seconds: float, workers: int, ramp: float
) -> list[list[object]]:
    """Start a server; run one client (the per-request service time, no queueing) for a quarter
    of ``seconds``, then ``clients`` clients for ``seconds``; stop the server. Two table rows."""
    port = _free_port()
    url = f"http://127.0.0.1:{port}"
    cmd = [sys.executable, "-m", "benchmarks.http_load", "--serve", str(index), "--port", str(port),
           "--workers", str(workers)]  # fmt: skip
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
    proc = subprocess.Popen(cmd, cwd=ROOT, env=env)
    rows = []
    try:
        _wait(url, proc)
        for n, duration in ((1, max(5.0, seconds / 4)), (clients, seconds)):
            result = asyncio.run(run_load(url, mode, n, duration, ramp if n > 1 else 0.0))
            lat = result["latencies"]
            rows.append([
                workers, mode, n, f"{result['elapsed']:.0f}", len(lat), f"{len(lat) / result['elapsed']:.0f}",
                f"{percentile(lat, 50):.1f}", f"{percentile(lat, 99):.1f}", result["errors"],
            ])  # fmt: skip
    finally:
        proc.terminate()
        proc.wait(30)
    return rows


if __name__ == "__main__":
    main()
