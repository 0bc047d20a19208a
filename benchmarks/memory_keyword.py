"""What per-user BM25 costs conversation memory's keyword search, by the size of a user's history.

Memory ranks keyword queries with BM25 counted over the user's own messages
(semsearch/memory/keyword.py): on SQLite the keyword sidecar counts inside the user filter;
elsewhere (and while the sidecar rebuilds) memory reads every message in the user's scope and
builds postings of them. The store's own keyword search (``Collection.search(mode="keyword")``
with the same ``user_id`` filter) is the yardstick: it answers from the collection-wide index,
with word statistics of every user, which memory no longer uses.

Data: every turn of ../shared/data/conversations (13,296 messages) in one memory, spread over
``--users`` users as tests/memory/datasets.py assigns them (fewer users: longer histories).
Queries: the SGD slot-value queries of benchmarks/memory_quality.py (e.g. "restaurant name
Sakoon"), each asked by the user it belongs to. Messages stay pending (no embedding: the
keyword leg does not read vectors). Times are medians of the queries, after the sidecar is
built (as the first search leaves it).

Usage: .venv/bin/python benchmarks/memory_keyword.py [--users 40,4,1] [--no-write]
Writes the "memory-keyword" section of docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from functools import partial
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.memory_quality import DATA, judgements
from benchmarks.report import machine_info, markdown_table, write_section
from semsearch import connect
from semsearch.embedders.fake import FakeEmbedder
from semsearch.memory.conversation import ConversationMemory
from semsearch.memory.keyword import keyword_by_reading
from tests.memory.datasets import load_conversations

QUERIES = 60


def measure(users: int) -> list[object]:
    """One table row: users, messages per user, p50 ms of the three ways (module docstring)."""
    conversations = load_conversations(DATA, users)
    asked = [(user, query) for kind, user, query in judgements(users) if kind == "exact"]
    asked = asked[:QUERIES]
    with tempfile.TemporaryDirectory() as tmp:
        memory = ConversationMemory(
            connect(Path(tmp) / "memory.embed.db"), embedder=FakeEmbedder(32), background=False
        )
        for conv in conversations:
            memory.add_conversation(conv.user_id, conv.conversation_id, conv.turns)
        sizes = [memory.stats(user).messages for user, _ in asked]
        coll = memory.collection
        coll.store.refresh_keyword_index(coll.name)  # the sidecar, as after a first search
        times: dict[str, list[float]] = {"memory": [], "reading": [], "store": []}
        for user, query in asked:  # interleaved, so load drifts hit all alike
            where = {"user_id": user}
            calls = {
                "memory": partial(memory.search, user, query, mode="keyword"),
                "reading": partial(keyword_by_reading, coll, query, 5, where),
                "store": partial(coll.search, query, mode="keyword", limit=5, where=where),
            }
            for name, call in calls.items():
                start = time.perf_counter()
                call()
                times[name].append(time.perf_counter() - start)
        memory.close()
    p50 = {name: statistics.median(t) * 1000 for name, t in times.items()}
    return [
        users,
        f"{statistics.median(sizes):,.0f}",
        *(f"{p50[name]:.1f}" for name in ("memory", "reading", "store")),
    ]


def main(user_counts: list[int], write: bool) -> None:
    rows = [measure(u) for u in user_counts]
    table = markdown_table(
        [
            "users", "messages per user (median)", "memory.search keyword p50 ms (SQLite sidecar)",
            "scoring by reading the user's messages p50 ms (Milvus; SQLite while its sidecar rebuilds)",
            "Collection.search keyword p50 ms (all users' statistics)",
        ],
        rows,
    )  # fmt: skip
    body = "\n\n".join([
        "## Conversation memory: the cost of per-user keyword statistics",
        "13,296 messages of ../shared/data/conversations in one SQLite memory; "
        f"{QUERIES} SGD slot-value queries, each by its own user, median times, interleaved: "
        "`memory.search(mode=\"keyword\")` (BM25 over the user's messages only, counted by "
        "the SQLite keyword sidecar, messages read back included), the same scores computed "
        "by reading every message of the user (`memory.keyword.keyword_by_reading`, the path "
        "on Milvus and while the sidecar rebuilds), and `Collection.search` "
        "in keyword mode with the same user filter (collection-wide statistics: what memory "
        "used before). Command: `.venv/bin/python benchmarks/memory_keyword.py`.",
        table,
        machine_info(("numpy",)),
    ])  # fmt: skip
    print(table)
    if write:
        write_section("memory-keyword", body)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--users", default="40,4,1", help="comma-separated user counts")
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args()
    main([int(u) for u in args.users.split(",")], write=not args.no_write)
