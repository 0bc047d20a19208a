"""Where one HTTP search's server time goes, stage by stage (issue 49), in one process.

The server's search handler (``semsearch.server.http.app._search``) and the JSON a response
carries run in this process, without the HTTP stack (uvicorn, FastAPI's routing, the worker
thread), on the products index of benchmarks/http_load.py, with the benchmark's 20 queries and
their query vectors cached as the load benchmark caches them. Each stage is timed with
``perf_counter`` around the function that does it; stages nest inside "search, all":

- ``health``: the index-health check every search makes (``search.health_check``);
- ``keyword leg`` / ``semantic leg``: ranking (``search._keyword_leg`` / ``_semantic_leg``; the
  semantic leg includes the sentence-window rescoring, shown on its own as ``windows``);
- ``hits``: reading the shown hits' chunks and fields, their best keyword chunk and highlight
  (``hits.read_hits``);
- ``response``: the API model and its JSON (``views.search_out`` and ``model_dump_json``).

With ``--compare REF`` the same loop runs REF's handler (its own module paths, found by
name) on REF's own index, whole searches only (REF's stages have other names), so the table
shows today's total beside REF's.

    HF_HUB_OFFLINE=1 .venv/bin/python -m benchmarks.http_stages --index PRODUCTS.embed.db
        [--compare REF --ref-index REF-PRODUCTS.embed.db] [--rounds 300] [--no-write]

Writes the "http-stages" section of docs/benchmarks.md (not with ``--no-write``).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
SECTION = "http-stages"
MODES = ("keyword", "semantic", "hybrid")

# Runs in the code tree under test (cwd and PYTHONPATH): today's module paths first, then
# those of late November (semsearch/server/http.py and its http_* siblings).
_LOOP = """
import json, os, sys, time
sys.path.insert(0, os.getcwd())
os.environ["HF_HUB_OFFLINE"] = "1"
index, mode, rounds = sys.argv[1], sys.argv[2], int(sys.argv[3])
from benchmarks.http_load import QUERIES
try:
    from semsearch.server.http.app import _search
    from semsearch.server.http.models import SearchIn
    from semsearch.server.http.process import ENV_SERVE_LOCATION, state_from_env
except ImportError:
    from semsearch.server.http import _search
    from semsearch.server.http_models import SearchIn
    from semsearch.server.http_process import ENV_SERVE_LOCATION, state_from_env
os.environ[ENV_SERVE_LOCATION] = index
state = state_from_env()
embedder = state.collection("products").embedder
cache = {q: embedder.embed_query(q) for q in QUERIES}
embedder.embed_query = lambda text: cache[text]
bodies = [SearchIn(query=q, mode=mode) for q in QUERIES]
def one(i):
    return _search("products", bodies[i % len(bodies)], state).model_dump_json()
for i in range(3 * len(QUERIES)):
    one(i)
times = []
for i in range(rounds):
    began = time.perf_counter()
    one(i)
    times.append((time.perf_counter() - began) * 1000)
print(json.dumps(times))
"""


def _timed(owner: Any, name: str, stage: str, spent: dict[str, float]) -> None:
    """Wrap ``owner.name`` so that its time adds to ``spent[stage]`` (ms)."""
    inner = getattr(owner, name)

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        began = time.perf_counter()
        try:
            return inner(*args, **kwargs)
        finally:
            spent[stage] = spent.get(stage, 0.0) + (time.perf_counter() - began) * 1000

    setattr(owner, name, wrapper)


def stages(index: Path, mode: str, rounds: int) -> dict[str, float]:
    """Median ms per search of each stage (and of the whole search) over ``rounds`` searches."""
    from benchmarks.http_load import QUERIES
    from semsearch import collection_reads, search
    from semsearch.server.http import app
    from semsearch.server.http.models import SearchIn
    from semsearch.server.http.process import ENV_SERVE_LOCATION, state_from_env

    os.environ[ENV_SERVE_LOCATION] = str(index)
    state = state_from_env()
    embedder = state.collection("products").embedder
    cache = {q: embedder.embed_query(q) for q in QUERIES}
    embedder.embed_query = lambda text: cache[text]  # type: ignore[method-assign]
    spent: dict[str, float] = {}
    for owner, name, stage in (
        (collection_reads, "health_check", "health"),
        (search, "_keyword_leg", "keyword leg"),
        (search, "_semantic_leg", "semantic leg"),
        (search, "rescore", "windows"),
        (search, "read_hits", "hits"),
        (app, "search_out", "response"),
    ):
        _timed(owner, name, stage, spent)
    bodies = [SearchIn.model_validate({"query": q, "mode": mode}) for q in QUERIES]

    def one(i: int) -> None:
        out = app._search("products", bodies[i % len(bodies)], state)
        began = time.perf_counter()
        out.model_dump_json()
        spent["response"] = spent.get("response", 0.0) + (time.perf_counter() - began) * 1000

    for i in range(3 * len(QUERIES)):
        one(i)
    per: dict[str, list[float]] = {}
    for i in range(rounds):
        spent.clear()
        began = time.perf_counter()
        one(i)
        per.setdefault("search, all", []).append((time.perf_counter() - began) * 1000)
        for stage, ms in spent.items():
            per.setdefault(stage, []).append(ms)
    state.db.close()
    return {stage: statistics.median(v) for stage, v in per.items()}


def reference_total(ref: Any, index: Path, mode: str, rounds: int) -> float:
    """Median ms of REF's whole search + JSON over ``rounds`` searches (a subprocess)."""
    out = subprocess.run(
        [sys.executable, "-c", _LOOP, str(index.resolve()), mode, str(rounds)],
        cwd=ref.path, env=ref.env(), stdout=subprocess.PIPE, text=True, check=True,
    )  # fmt: skip
    times: list[float] = json.loads(out.stdout.strip().splitlines()[-1])
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--index", type=Path, required=True, help="products index (http_load)")
    parser.add_argument("--rounds", type=int, default=300)
    parser.add_argument("--compare", help="git commit whose whole search to time beside")
    parser.add_argument("--ref-index", type=Path, help="REF's own products index")
    parser.add_argument("--no-write", action="store_true", help="print only")
    args = parser.parse_args()
    loads = [os.getloadavg()[0]]
    found = {mode: stages(args.index, mode, args.rounds) for mode in MODES}
    loads.append(os.getloadavg()[0])
    ref_totals: dict[str, float] = {}
    ref_name = ""
    if args.compare:
        from benchmarks.git_ref import checkout

        if args.ref_index is None:
            parser.error("--compare needs --ref-index (build it with benchmarks.http_load)")
        with checkout(args.compare) as ref:
            ref_name = ref.short
            for mode in MODES:
                ref_totals[mode] = reference_total(ref, args.ref_index, mode, args.rounds)
        loads.append(os.getloadavg()[0])
    order = ["search, all", "health", "keyword leg", "semantic leg", "windows", "hits", "response"]
    rows = [
        [stage, *(f"{found[m][stage]:.2f}" if stage in found[m] else "-" for m in MODES)]
        for stage in order
    ]
    if ref_totals:
        rows.append([f"search, all at {ref_name}", *(f"{ref_totals[m]:.2f}" for m in MODES)])
    from benchmarks.report import machine_info, markdown_table, write_section

    table = markdown_table(["stage (median ms per search)", *MODES], rows)
    print(table)
    if args.no_write:
        return
    load = f"{min(loads):.1f}-{max(loads):.1f}"
    write_section(
        SECTION,
        f"""## Where a search's server time goes (`benchmarks/http_stages.py`, issue 49)

The HTTP search handler and its JSON in one process, without the HTTP stack, on the products
index of the load benchmark, its 20 queries with cached query vectors, {args.rounds} searches
per mode after a warm-up; median ms per search of each stage (stages nest: see the script's
docstring). 1-minute load average {load}.

{table}

Machine: {machine_info(("numpy", "fastapi", "pydantic"))}.
""",
    )


if __name__ == "__main__":
    main()
