"""Latency of `semsearch mcp` over stdio, measured with the MCP SDK's own client.

Spawns the real server on a foam-docs index (built first with the real model unless --index
names an existing one), then times: start-up to the first answer (no model load), the first
semantic search (loads the model), and warm searches per mode and `get`. Prints a table and
rewrites the ``mcp`` section of docs/benchmarks.md.

    .venv/bin/python -m benchmarks.mcp_latency [--index foam.embed.db] [--repeats 10]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from benchmarks.report import machine_info, markdown_table, percentile, write_section

SECTION = "mcp"
ROOT = Path(__file__).resolve().parents[1]
FOAM = ROOT.parent / "shared" / "data" / "vault" / "foam-docs"
QUERIES = [
    "how do I create links between notes",
    "daily notes template",
    "publish my notes to GitHub pages",
    "graph view of connections",
    "tags and backlinks",
    "embed one note in another",
]


def build_index(path: Path) -> None:
    """Index foam-docs into ``path`` with the default model."""
    import semsearch
    from semsearch.sources.vault import VAULT_SCHEMA, index_folder

    with semsearch.connect(path) as db:
        index_folder(db.collection("notes", schema=VAULT_SCHEMA), FOAM)


async def timed(fn: Callable[[], Awaitable[Any]]) -> float:
    """Milliseconds one awaited call takes; raises if the tool returned an error."""
    start = time.perf_counter()
    result = await fn()
    elapsed = (time.perf_counter() - start) * 1000
    if getattr(result, "is_error", False):
        raise RuntimeError(f"tool error: {result.content}")
    return elapsed


async def measure(index: Path, repeats: int) -> list[list[object]]:
    """Rows of (what, calls, p50 ms, p95 ms)."""
    from mcp import Client, StdioServerParameters
    from mcp.client.stdio import stdio_client

    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "semsearch.cli.app", "mcp", "--index", str(index)],
        env={"HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"},
        cwd=str(ROOT),
    )
    rows: list[list[object]] = []
    start = time.perf_counter()
    with open(os.devnull, "w") as devnull:
        async with Client(stdio_client(params, errlog=devnull)) as client:
            await client.call_tool("stats", {})
            rows.append(["start-up to first answer (stats)", 1, _ms(start), "-"])
            first = await timed(lambda: client.call_tool("search", {"query": QUERIES[0]}))
            rows.append(["first hybrid search (loads the model)", 1, f"{first:.0f}", "-"])
            for mode in ("semantic", "keyword", "hybrid"):
                times = [
                    await timed(
                        lambda q=q, m=mode: client.call_tool("search", {"query": q, "mode": m})
                    )
                    for _ in range(repeats)
                    for q in QUERIES
                ]
                rows.append([f"warm {mode} search, limit 10", len(times), *_p(times)])
            gets = [
                await timed(lambda: client.call_tool("get", {"id": "user/features/wikilinks.md"}))
                for _ in range(repeats)
            ]
            rows.append(["get (full note)", len(gets), *_p(gets)])
    return rows


def _ms(start: float) -> str:
    return f"{(time.perf_counter() - start) * 1000:.0f}"


def _p(times: list[float]) -> tuple[str, str]:
    return f"{percentile(times, 50):.1f}", f"{percentile(times, 95):.1f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--index", type=Path, help="an existing foam-docs index to reuse")
    parser.add_argument("--repeats", type=int, default=10, help="rounds over the 6 queries")
    args = parser.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    with tempfile.TemporaryDirectory() as tmp:
        index = args.index
        if index is None:
            index = Path(tmp) / "foam.embed.db"
            build_index(index)
        rows = asyncio.run(measure(index, args.repeats))
    table = markdown_table(["what", "calls", "p50 ms", "p95 ms"], rows)
    body = (
        "## MCP server latency (stdio)\n\n"
        "Round trips through the MCP SDK client to a `semsearch mcp` subprocess on the foam-docs\n"
        "index (86 notes, all-MiniLM-L6-v2), including JSON-RPC framing and the pipe.\n\n"
        f"Machine: {machine_info(('numpy', 'torch', 'sentence-transformers', 'mcp'))}.\n\n"
        f"Command: `.venv/bin/python -m benchmarks.mcp_latency --repeats {args.repeats}`\n\n"
        f"{table}\n"
    )
    print(body)
    write_section(SECTION, body)


if __name__ == "__main__":
    main()
