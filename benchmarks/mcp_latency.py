"""Latency of `semsearch mcp` over stdio, measured with the MCP SDK's own client.

Spawns the real server on a foam-docs index (built first with the real model where --index
points, or in a temporary folder), then times round trips at the client: start-up to the first
answer (no model load), the first hybrid search (loads the model), and warm searches per mode
and `get` (p50 and p95 over ``--repeats`` rounds of 6 queries). Prints a table and rewrites the ``mcp``
section of docs/benchmarks.md (not with ``--no-write``).

    .venv/bin/python -m benchmarks.mcp_latency [--index foam.embed.db] [--repeats 10] [--no-write]
        [--compare REF [--ref-index PATH] [--tolerance 0.1]]

``--compare REF`` then runs git commit REF's own ``benchmarks/mcp_latency.py --index
--repeats`` in a subprocess (REF's tree extracted into a temporary folder; cwd and PYTHONPATH =
that folder, so its server is REF's ``semsearch mcp``) on a foam-docs index built by REF's own
``build_index`` (``--ref-index PATH``, built there if missing, else in the temporary folder),
reads the table it prints, and prints both tables and the p50 and p95 ratios current / REF per
row, with a verdict on p50 at ``--tolerance``; it rewrites the ``mcp-compare`` section instead.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from contextlib import ExitStack
from functools import partial
from pathlib import Path
from typing import Any

from benchmarks import git_ref
from benchmarks.report import machine_info, markdown_table, percentile, write_section

SECTION = "mcp"
SECTION_COMPARE = "mcp-compare"
PACKAGES = ("numpy", "torch", "sentence-transformers", "mcp")
HEADERS = ["what", "calls", "p50 ms", "p95 ms"]
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
                    await timed(partial(client.call_tool, "search", {"query": q, "mode": mode}))
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


def prepare_ref(ref: git_ref.Ref, index: Path) -> None:
    """Check that REF has this script's interface and imports its own semsearch; build REF's
    ``index`` with REF's code if missing."""
    ref.require("benchmarks/mcp_latency.py", '"--index"', '"--repeats"', "def build_index")
    print(f"{ref.short} runs with semsearch from {ref.probe('benchmarks.mcp_latency')['semsearch']}",
          file=sys.stderr)  # fmt: skip
    if ref.build_index("benchmarks.mcp_latency", "FOAM", FOAM, index):
        print(f"built {ref.short}'s index at {index}", file=sys.stderr)


def measure_ref(ref: git_ref.Ref, index: Path, repeats: int) -> list[list[object]]:
    """REF's own measurement in a subprocess on its own ``index``: the rows of the table it
    prints. The subprocess also rewrites the checkout's docs, thrown away with the checkout."""
    args = ["-m", "benchmarks.mcp_latency", "--index", str(index), "--repeats", str(repeats)]
    rows = parse_table(ref.python(args).stdout)
    if not rows:
        raise git_ref.RefError(f"{ref.short}'s mcp_latency printed no table")
    return rows


def parse_table(text: str) -> list[list[object]]:
    """The body rows of the first markdown table in ``text`` whose header is :data:`HEADERS`."""
    lines = text.splitlines()
    header = "| " + " | ".join(HEADERS) + " |"
    if header not in lines:
        return []
    rows: list[list[object]] = []
    for line in lines[lines.index(header) + 2 :]:
        if not line.startswith("|"):
            break
        rows.append([cell.strip() for cell in line.strip().strip("|").split("|")])
    return rows


def ratio_table(
    current: list[list[object]], ref: list[list[object]], tolerance: float
) -> list[list[object]]:
    """Per row of ``current`` (matched to ``ref`` by its "what"): calls, p50 and p95 ratios
    current / ref, and the verdict on p50 ("-" and missing rows give "n/a")."""

    def keyed(rows: list[list[object]]) -> list[tuple[git_ref.Key, git_ref.Figures]]:
        return [((row[0],), {"p50": _num(row[2]), "p95": _num(row[3])}) for row in rows]

    calls = {row[0]: row[1] for row in current}
    rows = git_ref.compare_rows(
        keyed(current), dict(keyed(ref)), lambda _: [("p50", False)], tolerance
    )
    return [[row[0], calls[row[0]], *row[1:]] for row in rows]


def _num(cell: object) -> float | None:
    try:
        return float(str(cell))
    except ValueError:
        return None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--index", type=Path, help="the foam-docs index (built there if missing)")
    parser.add_argument("--repeats", type=int, default=10, help="rounds over the 6 queries")
    git_ref.add_compare_arguments(parser, "foam-docs", "own measurement", "the p50 ratio")
    args = parser.parse_args()
    git_ref.check_indexes(parser, args)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    with ExitStack() as stack:
        tmp = Path(stack.enter_context(tempfile.TemporaryDirectory()))
        ref = stack.enter_context(git_ref.checkout(args.compare)) if args.compare else None
        ref_index = args.ref_index or tmp / "ref-foam.embed.db"
        if ref:
            prepare_ref(ref, ref_index)
        index = args.index or tmp / "foam.embed.db"
        if not index.exists():
            build_index(index)
        load_before = ", ".join(f"{x:.1f}" for x in os.getloadavg())
        rows = asyncio.run(measure(index, args.repeats))
        ref_rows = measure_ref(ref, ref_index, args.repeats) if ref else []
    if ref is None:
        body = _body(args, rows)
    else:
        body = _body_compare(args, rows, ref, ref_rows, load_before)
    print(body)
    if not args.no_write:
        write_section(SECTION_COMPARE if ref else SECTION, body)


def _body(args: argparse.Namespace, rows: list[list[object]]) -> str:
    return (
        "## MCP server latency (stdio)\n\n"
        "Round trips through the MCP SDK client to a `semsearch mcp` subprocess on the foam-docs\n"
        "index (86 notes, all-MiniLM-L6-v2), including JSON-RPC framing and the pipe.\n\n"
        f"Machine: {machine_info(PACKAGES)}.\n\n"
        f"Command: `.venv/bin/python -m benchmarks.mcp_latency --repeats {args.repeats}`\n\n"
        f"{markdown_table(HEADERS, rows)}\n"
    )


def _body_compare(
    args: argparse.Namespace,
    rows: list[list[object]],
    ref: git_ref.Ref,
    ref_rows: list[list[object]],
    load_before: str,
) -> str:
    both = [["current", *row] for row in rows] + [[ref.short, *row] for row in ref_rows]
    ratios = ratio_table(rows, ref_rows, args.tolerance)
    slower = [str(row[0]) for row in ratios if row[-1] == "slower"]
    said = (
        f"the current code is slower beyond {args.tolerance:.0%} in: {'; '.join(slower)}."
        if slower
        else f"no row reads slower beyond {args.tolerance:.0%}."
    )
    headers = ["what", "calls", "p50 ratio", "p95 ratio", "verdict"]
    return f"""## MCP server latency (stdio): the current code against commit {ref.short}

The measurement of the mcp section, run on the current code and then by commit `{ref.sha}`
("{git_ref.subject(ref.sha)}") with its own `benchmarks/mcp_latency.py`, each on the foam-docs
notes indexed by its own `build_index`. Ratios are current / {ref.short}: below 1 the current code
is faster. Semantic and hybrid rows include embedding the query with each commit's default
model. The verdict reads p50 ("slower" or "faster" beyond {args.tolerance:.0%}); the start-up and
first-search rows are one call each and vary most. "n/a": a row one side lacks.

Machine: {machine_info(PACKAGES)}; load average before the runs {load_before}.

Command: `.venv/bin/python -m benchmarks.mcp_latency --repeats {args.repeats} --compare {args.compare}`

{markdown_table(["code", *HEADERS], both)}

{markdown_table(headers, ratios)}

Reading: {said}
"""


if __name__ == "__main__":
    try:
        main()
    except git_ref.RefError as exc:
        raise SystemExit(f"--compare: {exc}") from None
