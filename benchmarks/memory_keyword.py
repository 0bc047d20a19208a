"""What per-user BM25 costs conversation memory's keyword search, by the size of a user's history.

Memory ranks keyword queries with BM25 counted over the user's own messages
(semsearch/memory/keyword.py): each search reads every message in the user's scope and builds
postings of them. The store's own keyword search (``Collection.search(mode="keyword")`` with
the same ``user_id`` filter) is the yardstick: it answers from the collection-wide index, with
word statistics of every user, which memory no longer uses.

Data: every turn of ../shared/data/conversations (13,296 messages) in one memory, spread over
``--users`` users as tests/memory/datasets.py assigns them (fewer users: longer histories).
Queries: the SGD slot-value queries of benchmarks/memory_quality.py (e.g. "restaurant name
Sakoon"), each asked by the user it belongs to. Messages stay pending (no embedding: the
keyword leg does not read vectors). Times are medians of the queries, after one warm-up search.

Usage: .venv/bin/python benchmarks/memory_keyword.py [--users 40,4,1] [--no-write]
Writes the "memory-keyword" section of docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.memory_quality import DATA, judgements
from benchmarks.report import machine_info, markdown_table, write_section
from semsearch import connect
from semsearch.embedders.fake import FakeEmbedder
from semsearch.memory.conversation import ConversationMemory
from tests.memory.datasets import load_conversations

QUERIES = 60


def measure(users: int) -> list[object]:
    """One table row: users, messages per user, p50 ms of memory and of the store, ratio."""
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
        ours: list[float] = []
        store: list[float] = []
        memory.search(*asked[0], mode="keyword")
        for user, query in asked:  # interleaved, so load drifts hit both alike
            start = time.perf_counter()
            memory.search(user, query, mode="keyword")
            ours.append(time.perf_counter() - start)
            start = time.perf_counter()
            coll.search(query, mode="keyword", limit=5, where={"user_id": user})
            store.append(time.perf_counter() - start)
        memory.close()
    p50, base = statistics.median(ours) * 1000, statistics.median(store) * 1000
    return [
        users,
        f"{statistics.median(sizes):,.0f}",
        f"{p50:.1f}",
        f"{base:.1f}",
        f"{p50 / base:.1f}",
    ]


def main(user_counts: list[int], write: bool) -> None:
    rows = [measure(u) for u in user_counts]
    table = markdown_table(
        [
            "users", "messages per user (median)", "memory keyword p50 ms",
            "store keyword p50 ms (all users' statistics)", "ratio",
        ],
        rows,
    )  # fmt: skip
    body = "\n\n".join([
        "## Conversation memory: the cost of per-user keyword statistics",
        "13,296 messages of ../shared/data/conversations in one SQLite memory; "
        f"{QUERIES} SGD slot-value queries, each by its own user, median time of "
        "`memory.search(mode=\"keyword\")` (BM25 over the user's messages only) against the "
        "store's keyword search with the same user filter (collection-wide statistics), "
        "interleaved. Command: `.venv/bin/python benchmarks/memory_keyword.py`.",
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
