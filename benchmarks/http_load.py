"""Load test of `semsearch serve`: concurrent clients searching the 3,291-product catalogue.

Loopback only, and it stops by itself. The server runs in a subprocess (uvicorn with
``--workers`` processes, as ``semsearch serve --workers N``); the clients are asyncio tasks on
one aiohttp session in this process (aiohttp costs the client about half the CPU per request
that httpx does, which leaves more of the shared cores to the server), each sending its next
search as soon as the previous one answers, for a fixed duration. Client and server share the
machine's cores, so the numbers are a floor for a dedicated server. Measured at the client:
requests per second, and the p50 and p99 of the time from sending a request to its parsed answer.

Modes:
- ``keyword``: BM25 over SQLite FTS5; no embedding anywhere.
- ``semantic``: exact cosine scan over the products' all-MiniLM-L6-v2 vectors; the query
  vectors are computed once before the run and served from a cache, so the figures exclude the
  query embedding (8-12 ms per query on this machine, see MACHINE-NOTES).
- ``hybrid``: both legs and their fusion, with the same cached query vectors as ``semantic``.

    .venv/bin/python -m benchmarks.http_load [--clients 50] [--seconds 60] [--workers 1 2]
        [--modes keyword semantic hybrid] [--index PATH] [--no-write]
        [--compare REF [--ref-index PATH] [--tolerance 0.1]]

Prints a table and rewrites the ``http-load`` section of docs/benchmarks.md (not with
``--no-write``). ``--index`` names the products index to reuse (built there if missing; without
it one is built in a temporary folder: 3-6 minutes on this machine).

``--compare REF`` also serves the same products from git commit REF in the same run: REF's tree
is extracted into a temporary folder and its own ``benchmarks/http_load.py --serve`` runs there
(cwd and PYTHONPATH = that folder, same virtualenv), on an index built by REF's own
``build_index`` (``--ref-index PATH``, built there if missing, else in the temporary folder).
The two servers alternate mode by mode (current, REF, current, REF ...) so drift in the
machine's load hits both. It prints both sets of rows and the ratios current / REF (QPS, p50,
p99) per worker count, mode and client count, each with a verdict at ``--tolerance``, and
rewrites the ``http-load-compare`` section instead. A mode REF answers only with errors shows
"n/a". REF must have the ``--serve INDEX --port P --workers N`` interface (commit ffb183e has).
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
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchmarks import git_ref
from benchmarks.report import machine_info, markdown_table, percentile, write_section

SECTION = "http-load"
SECTION_COMPARE = "http-load-compare"
PACKAGES = ("numpy", "torch", "fastapi", "uvicorn", "aiohttp")
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


@dataclass(frozen=True)
class Code:
    """The code that serves: ``label`` in the tables, its source folder (the server's cwd and,
    for a reference commit, PYTHONPATH) and the index it serves (built by that code)."""

    label: str
    root: Path
    index: Path
    env: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Run:
    """One timed load: ``clients`` clients against one server. ``qps``, ``p50`` and ``p99`` (ms)
    are None when the server answered every warm-up search of the mode with an error."""

    code: str
    workers: int
    mode: str
    clients: int
    elapsed: float
    requests: int
    errors: int
    qps: float | None
    p50: float | None
    p99: float | None

    def cells(self, with_code: bool) -> list[object]:
        """The run's table row (``code`` first when comparing)."""

        def num(x: float | None, fmt: str) -> str:
            return "n/a" if x is None else format(x, fmt)

        row: list[object] = [self.workers, self.mode, self.clients, f"{self.elapsed:.0f}",
                             self.requests, num(self.qps, ".0f"), num(self.p50, ".1f"),
                             num(self.p99, ".1f"), self.errors]  # fmt: skip
        return [self.code, *row] if with_code else row


HEADERS = ["workers", "mode", "clients", "seconds", "requests", "QPS", "p50 ms", "p99 ms", "errors"]


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

    First every query is sent once (warm-up: caches, connections). When all of those fail,
    the server does not serve ``mode`` (e.g. an older commit): nothing is timed, and the result
    has ``unsupported`` (the first error) and no latencies.
    """
    import aiohttp

    out: dict[str, Any] = {"latencies": [], "errors": 0, "why": [], "elapsed": 0.0}
    connector = aiohttp.TCPConnector(limit=clients)
    timeout = aiohttp.ClientTimeout(total=30)
    async with aiohttp.ClientSession(connector=connector, timeout=timeout) as http:
        warm = [await _search_once(http, url, {"query": q, "mode": mode}) for q in QUERIES]
        if all(warm):
            out["unsupported"], out["errors"] = warm[0], len(warm)
            print(f"error ({mode}): every warm-up search failed: {warm[0]}", file=sys.stderr)
            return out
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


def measure_mode(
    code: Code, mode: str, clients: int, seconds: float, workers: int, ramp: float
) -> list[Run]:
    """Start ``code``'s server; run one client (the per-request service time, no queueing) for a
    quarter of ``seconds``, then ``clients`` clients for ``seconds``; stop the server. Two runs
    (both "n/a" when the server fails every warm-up search of ``mode``)."""
    port = _free_port()
    url = f"http://127.0.0.1:{port}"
    cmd = [sys.executable, "-m", "benchmarks.http_load", "--serve", str(code.index), "--port",
           str(port), "--workers", str(workers)]  # fmt: skip
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false", **code.env}
    print(f"{code.label}: {mode}, {workers} worker(s)", file=sys.stderr, flush=True)
    proc = subprocess.Popen(cmd, cwd=code.root, env=env)
    runs = []
    try:
        _wait(url, proc)
        for n, duration in ((1, max(5.0, seconds / 4)), (clients, seconds)):
            result = asyncio.run(run_load(url, mode, n, duration, ramp if n > 1 else 0.0))
            lat, elapsed = result["latencies"], result["elapsed"]
            timed = "unsupported" not in result and bool(lat)
            runs.append(Run(
                code.label, workers, mode, n, elapsed, len(lat), result["errors"],
                len(lat) / elapsed if timed else None, percentile(lat, 50) if timed else None,
                percentile(lat, 99) if timed else None,
            ))  # fmt: skip
            if not timed:
                runs.append(Run(code.label, workers, mode, clients, 0.0, 0, 0, None, None, None))
                break
    finally:
        proc.terminate()
        proc.wait(30)
    return runs


def measure(codes: list[Code], args: argparse.Namespace) -> list[Run]:
    """Every worker count and mode, each code in turn (current, REF, current, REF ...)."""
    return [
        run
        for workers in args.workers
        for mode in args.modes
        for code in codes
        for run in measure_mode(code, mode, args.clients, args.seconds, workers, args.ramp)
    ]


def reading(runs: list[Run], clients: int) -> str:
    """One paragraph: is the target met at ``clients`` clients, and what bounds the latency."""
    lines = []
    for run in runs:
        if run.clients != clients or run.qps is None or run.p99 is None:
            continue
        met = run.errors == 0 and run.p99 < 100
        lines.append(
            f"{run.mode} with {run.workers} worker(s): {run.errors} errors, p99 {run.p99:.0f} ms: "
            f"target {'met' if met else 'NOT met'}; Little's law predicts a mean of "
            f"{clients} / {run.qps:.0f} QPS = {1000 * clients / run.qps:.0f} ms."
        )
    cores = os.cpu_count() or 1
    lines.append(
        f"Load average after the run: {_load()} on {cores} cores. p99 under 100 ms at {clients} "
        f"closed-loop clients needs at least {clients * 10} QPS (Little's law), i.e. at most "
        f"{1000 * cores / (clients * 10):.0f} ms of CPU per request for server and client "
        "together on this machine."
    )
    return "Reading: " + " ".join(lines)


def ratio_table(runs: list[Run], ref: str, tolerance: float) -> tuple[str, list[str]]:
    """The ratios current / ``ref`` per worker count, mode and client count, and the rows that
    read "slower". The verdict weighs QPS and the latency that matters for the row: p50 with one
    client (the service time), p99 with many. A run with errors gives "n/a"."""

    def figures(run: Run) -> dict[str, float | None]:
        return {k: None if run.errors else getattr(run, k) for k in ("qps", "p50", "p99")}

    def weigh(key: git_ref.Key) -> list[tuple[str, bool]]:
        return [("qps", True), ("p50" if key[2] == 1 else "p99", False)]

    def keyed(code: str) -> list[tuple[git_ref.Key, git_ref.Figures]]:
        return [((r.workers, r.mode, r.clients), figures(r)) for r in runs if r.code == code]

    rows = git_ref.compare_rows(keyed("current"), dict(keyed(ref)), weigh, tolerance)
    slower = [f"{r[1]} at {r[2]} client(s), {r[0]} worker(s)" for r in rows if r[-1] == "slower"]
    headers = ["workers", "mode", "clients", "QPS ratio", "p50 ratio", "p99 ratio", "verdict"]
    return markdown_table(headers, rows), slower


def _load() -> str:
    return ", ".join(f"{x:.1f}" for x in os.getloadavg())


def _command(args: argparse.Namespace) -> str:
    cmd = (
        f".venv/bin/python -m benchmarks.http_load --clients {args.clients} --seconds "
        f"{args.seconds:g} --workers {' '.join(map(str, args.workers))} --ramp {args.ramp:g} "
        f"--modes {' '.join(args.modes)}"
    )
    return cmd + (f" --compare {args.compare}" if args.compare else "")


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--modes", nargs="+", default=["keyword", "semantic", "hybrid"],
                        choices=["keyword", "semantic", "hybrid"])  # fmt: skip
    parser.add_argument("--workers", nargs="+", type=int, default=[1, 2],
                        help="server processes; one run per value")  # fmt: skip
    parser.add_argument("--ramp", type=float, default=2.0,
                        help="seconds over which the clients start, not measured (0: burst)")  # fmt: skip
    parser.add_argument("--index", help="the products index (built there if missing)")
    git_ref.add_compare_arguments(parser, "products", "server in the same run", "a ratio")
    parser.add_argument("--serve", help=argparse.SUPPRESS)  # internal: the server process
    parser.add_argument("--port", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    git_ref.check_indexes(parser, args)
    return args


def main() -> None:
    args = parse_args()
    if args.serve:
        serve(args.serve, args.port, args.workers[0])
        return
    with ExitStack() as stack:
        tmp = Path(stack.enter_context(tempfile.TemporaryDirectory()))
        ref = stack.enter_context(git_ref.checkout(args.compare)) if args.compare else None
        ref_code = _ref_code(ref, args.ref_index or tmp / "ref-products.embed.db") if ref else None
        index = Path(args.index) if args.index else tmp / "products.embed.db"
        build_seconds = None
        if not index.exists():
            began = time.perf_counter()
            build_index(index)
            build_seconds = time.perf_counter() - began
        load_before = _load()
        current = Code("current", ROOT, index)
        runs = measure([current, ref_code] if ref_code else [current], args)
    if ref is None:
        _report(args, runs, build_seconds)
    else:
        _report_compare(args, runs, ref, load_before)


def _ref_code(ref: git_ref.Ref, index: Path) -> Code:
    """REF's server, after checking it has ``--serve``, imports its own semsearch and asks the
    same queries; REF's index built by REF's code if missing (3-6 minutes)."""
    ref.require(
        "benchmarks/http_load.py", '"--serve"', '"--port"', '"--workers"', "def build_index"
    )
    info = ref.probe("benchmarks.http_load")
    print(f"{ref.short} serves with semsearch from {info['semsearch']}", file=sys.stderr)
    if info["queries"] != QUERIES:
        print(f"warning: {ref.short}'s QUERIES differ; its server embeds the queries it lacks",
              file=sys.stderr)  # fmt: skip
    if ref.build_index("benchmarks.http_load", "PRODUCTS", PRODUCTS, index):
        print(f"built {ref.short}'s index at {index}", file=sys.stderr)
    return Code(ref.short, ref.path, index, {"PYTHONPATH": str(ref.path)})


def _report(args: argparse.Namespace, runs: list[Run], build_seconds: float | None) -> None:
    table = markdown_table(HEADERS, [run.cells(with_code=False) for run in runs])
    print(table)
    if args.no_write:
        return
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

Machine: {machine_info(PACKAGES)}.

Command: `{_command(args)}`

{table}

{reading(runs, args.clients)}
""",
    )


def _report_compare(
    args: argparse.Namespace, runs: list[Run], ref: git_ref.Ref, load_before: str
) -> None:
    table = markdown_table(["code", *HEADERS], [run.cells(with_code=True) for run in runs])
    ratios, slower = ratio_table(runs, ref.short, args.tolerance)
    said = (
        f"current code slower than {ref.short} (beyond {args.tolerance:.0%}): {'; '.join(slower)}."
        if slower
        else f"no row reads slower than {ref.short} beyond {args.tolerance:.0%}."
    )
    body = f"""## HTTP API under load: the current code against commit {ref.short}

The load of the http-load section ({args.clients} clients, {args.seconds:g} s per mode after a
{args.ramp:g} s ramp, one client for a quarter of that), served in the same run by the current
code and by commit `{ref.sha}` ("{git_ref.subject(ref.sha)}"), each on the 3,291 products indexed
by its own `build_index` (an index file of one schema version need not open in another). The two
servers alternate mode by mode (current, {ref.short}, current, {ref.short} ...), so drift in the
machine's load hits both. Semantic and hybrid modes exclude query embedding (cached vectors).

Ratios are current / {ref.short}: a QPS ratio above 1 and latency ratios below 1 mean the current
code is faster. The verdict weighs QPS and p50 at one client (service time), QPS and p99 at
{args.clients}; beyond {args.tolerance:.0%} it reads "slower" or "faster". "n/a": a run had errors
or the commit does not serve the mode. Figures vary by about 15% between runs on this machine, so
one "slower" is a reason to re-run, the same row slower twice a reason to look.

Machine: {machine_info(PACKAGES)}; load average before the runs {load_before}.

Command: `{_command(args)}`

{table}

{ratios}

Reading: {said} Load average after the runs: {_load()}.
"""
    print(body)
    if not args.no_write:
        write_section(SECTION_COMPARE, body)


if __name__ == "__main__":
    try:
        main()
    except git_ref.RefError as exc:
        raise SystemExit(f"--compare: {exc}") from None
