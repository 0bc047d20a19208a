"""Shared helpers for benchmark scripts: machine/version info and docs/benchmarks.md sections.

Each benchmark owns one section of docs/benchmarks.md, delimited by HTML comments
``<!-- section:NAME -->`` ... ``<!-- /section:NAME -->``; writing it replaces only that section.
"""

from __future__ import annotations

import os
import platform
import statistics
from collections.abc import Sequence
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path

__all__ = ["machine_info", "markdown_table", "percentile", "write_section"]

DOC = Path(__file__).resolve().parents[1] / "docs" / "benchmarks.md"
HEADER = (
    "# Benchmarks\n\n"
    "Every figure here is measured by a script in `benchmarks/` that prints its table and\n"
    "rewrites its own section below. Each section names the machine, versions, load and the\n"
    "exact command. Tests never assert wall-clock times; these numbers are the record.\n"
)


def machine_info(packages: Sequence[str] = ("numpy", "torch", "sentence-transformers")) -> str:
    """One line: CPU count, RAM, Python, package versions, load average, date (UTC)."""
    versions = []
    for name in packages:
        try:
            versions.append(f"{name} {metadata.version(name)}")
        except metadata.PackageNotFoundError:
            versions.append(f"{name} (not installed)")
    mem_gib = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    return (
        f"{os.cpu_count()} cores, {mem_gib:.0f} GiB, {platform.machine()}, Python "
        f"{platform.python_version()}, {', '.join(versions)}; load average {load}; "
        f"{datetime.now(UTC):%Y-%m-%d %H:%M} UTC"
    )


def percentile(values: Sequence[float], q: float) -> float:
    """The q-th percentile (0-100) with linear interpolation (statistics.quantiles, inclusive)."""
    if len(values) == 1:
        return float(values[0])
    cuts = statistics.quantiles(values, n=100, method="inclusive")
    return (
        float(cuts[int(q) - 1]) if 1 <= q <= 99 else float(max(values) if q >= 100 else min(values))
    )


def markdown_table(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    """A GitHub markdown table."""
    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def write_section(name: str, body: str, doc: Path = DOC) -> None:
    """Replace (or append) the section NAME of ``doc`` (docs/benchmarks.md) with ``body``."""
    start, end = f"<!-- section:{name} -->", f"<!-- /section:{name} -->"
    text = doc.read_text(encoding="utf-8") if doc.exists() else HEADER
    block = f"{start}\n{body.strip()}\n{end}"
    if start in text and end in text:
        head, rest = text.split(start, 1)
        text = head + block + rest.split(end, 1)[1]
    else:
        text = text.rstrip() + "\n\n" + block + "\n"
    doc.write_text(text, encoding="utf-8")
