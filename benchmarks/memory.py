"""Conversation memory benchmark: 100,000 messages across 1,000 users on one SQLite file.

Measures:
- ``add_message`` latency p50/p95 while the background worker embeds (the call stores the
  message and queues it; it never waits for the embedding);
- ``search()`` and ``context()`` latency p50/p95 on random users (warm);
- background embedding throughput: messages/s from the first ``add_message`` until the worker
  is idle, with the REAL model (all-MiniLM-L6-v2) on a smaller sample;
- the real model's ``embed_query`` p50, the part of search/context latency that the fake
  embedder leaves out.

The 100,000 messages are real turns (Topical-Chat + SGD, 13,296 turns, cycled) spread over
1,000 users x 5 conversations x 20 messages. Their vectors come from the deterministic FAKE
embedder at dimension 384 (same size as the real model's vectors) so that loading 100k
messages takes minutes, not an hour on 2 shared cores: the add/search/context rows measure the
memory's plumbing (store, filters, ranking, token counting), not the model.

Usage: .venv/bin/python benchmarks/memory.py [--messages 100000] [--users 1000]
           [--queries 300] [--real-sample 1000]
Writes the "memory" section of docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.report import machine_info, markdown_table, percentile, write_section
from semsearch.embedders.fake import FakeEmbedder
from semsearch.memory.conversation import ConversationMemory
from tests.memory.datasets import load_conversations

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "conversations"
PER_CONVERSATION = 20
CONVERSATIONS_PER_USER = 5


def real_turns() -> list[tuple[str, str]]:
    """Every turn of both data sets, in file order, as (role, content)."""
    return [turn for c in load_conversations(DATA) for turn in c.turns]


def load(
    memory: ConversationMemory, turns: list[tuple[str, str]], messages: int, users: int
) -> float:
    """Store ``messages`` messages (one transaction per conversation); returns seconds."""
    start = time.perf_counter()
    per_user = max(1, messages // users)
    conversations = max(1, per_user // PER_CONVERSATION)
    k = 0
    for u in range(users):
        for c in range(conversations):
            chunk = [turns[(k + i) % len(turns)] for i in range(PER_CONVERSATION)]
            k += PER_CONVERSATION
            memory.add_conversation(f"user-{u:04d}", f"conv-{c}", chunk)
    return time.perf_counter() - start


def timed(fn: Callable[[], object], n: int) -> list[float]:
    """Milliseconds per call, n calls."""
    out = []
    for _ in range(n):
        t = time.perf_counter()
        fn()
        out.append((time.perf_counter() - t) * 1000)
    return out


def plumbing(
    folder: Path, args: argparse.Namespace, turns: list[tuple[str, str]]
) -> list[list[object]]:
    """The 100k-message part with the fake embedder: load, backfill, add, search, context."""
    path = str(folder / "memory-100k.embed.db")
    memory = ConversationMemory(path, embedder=FakeEmbedder(384, max_tokens=254), background=False)
    load_s = load(memory, turns, args.messages, args.users)
    t = time.perf_counter()
    memory.backfill()
    backfill_s = time.perf_counter() - t
    memory.close()
    print(
        f"loaded {args.messages} messages in {load_s:.0f} s, embedded (fake) in {backfill_s:.0f} s"
    )

    rng = random.Random(7)
    memory = ConversationMemory(path, embedder=FakeEmbedder(384, max_tokens=254))  # with worker
    queries = [rng.choice(turns)[1] for _ in range(args.queries)]
    users = [f"user-{rng.randrange(args.users):04d}" for _ in range(args.queries)]
    memory.search(users[0], queries[0])  # warm the vector cache
    it = iter(range(10**9))

    def search() -> None:
        i = next(it) % args.queries
        memory.search(users[i], queries[i], limit=5, min_score=0.3)

    def context() -> None:
        i = next(it) % args.queries
        memory.context(users[i], "conv-0", queries[i], min_score=0.3)

    search_ms = timed(search, args.queries)
    context_ms = timed(context, args.queries)

    def add() -> None:
        i = next(it) % args.queries
        memory.add_message(users[i], "conv-new", "user", queries[i])

    add_ms = timed(add, args.queries)  # the worker embeds these in the background meanwhile
    memory.close(drain=True, timeout=600)
    rows = [
        ["add_message (store + queue; worker embedding meanwhile)", *_p(add_ms), args.queries],
        ["search(limit=5), fake query embedding", *_p(search_ms), args.queries],
        [
            "context(recent=20, semantic=3, 4000 tokens), fake query embedding",
            *_p(context_ms),
            args.queries,
        ],
        [
            f"load {args.messages:,} messages (add_conversation of 20)",
            f"{load_s:.0f} s total",
            "",
            1,
        ],
    ]
    return rows


def _p(ms: list[float]) -> list[str]:
    return [f"{percentile(ms, 50):.2f}", f"{percentile(ms, 95):.2f}"]


def real_model(
    folder: Path, args: argparse.Namespace, turns: list[tuple[str, str]]
) -> list[list[object]]:
    """Background embedding throughput and query embedding latency with the real model."""
    from semsearch.embedders.local import LocalEmbedder

    embedder = LocalEmbedder()
    embedder.embed_query("warm up")  # load the model before timing
    query_ms = timed(lambda: embedder.embed_query("where should we eat tonight?"), 50)
    memory = ConversationMemory(str(folder / "memory-real.embed.db"), embedder=embedder)
    start = time.perf_counter()
    for i in range(args.real_sample):
        role, content = turns[i % len(turns)]
        memory.add_message(f"user-{i % 50:02d}", f"conv-{i % 7}", role, content)
    added_s = time.perf_counter() - start
    memory.wait_idle(timeout=3600)
    total_s = time.perf_counter() - start
    stats = memory.stats()
    memory.close()
    assert stats.pending == 0 and stats.failed == 0, stats
    rate = args.real_sample / total_s
    print(
        f"real model: {args.real_sample} messages added in {added_s:.1f} s, embedded by {total_s:.1f} s"
    )
    return [
        [f"background embedding, real model, {args.real_sample:,} messages", f"{rate:.0f} messages/s",
         f"{stats.embedded} chunks", args.real_sample],
        ["embed_query, real model (add to search/context rows)", *_p(query_ms), 50],
    ]  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=100_000)
    parser.add_argument("--users", type=int, default=1000)
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--real-sample", type=int, default=1000)
    parser.add_argument("--no-write", action="store_true", help="print only")
    args = parser.parse_args()
    turns = real_turns()
    before = machine_info()
    with tempfile.TemporaryDirectory(prefix="semsearch-memory-bench-") as tmp:
        rows = plumbing(Path(tmp), args, turns) + real_model(Path(tmp), args, turns)
    table = markdown_table(["operation", "p50 ms (or rate)", "p95 ms", "n"], rows)
    command = "python benchmarks/memory.py " + " ".join(sys.argv[1:])
    body = (
        "## Conversation memory\n\n"
        f"{args.messages:,} messages across {args.users:,} users (5 conversations x 20 real "
        "turns each) in one SQLite file. add/search/context use the deterministic fake embedder "
        "at 384 dimensions, so they measure the memory's plumbing; add the real model's "
        "`embed_query` p50 to search/context for end-to-end latency. Background embedding "
        "throughput uses the real model (all-MiniLM-L6-v2, CPU) on a smaller sample. "
        "`add_message` never includes embedding: it stores and queues.\n\n"
        f"{table}\n\n"
        f"Machine at start: {before}.  \nAt end: {machine_info()}.  \n"
        f"Command: `{command.strip()}`\n"
    )
    print(body)
    if not args.no_write:
        write_section("memory", body)


if __name__ == "__main__":
    main()
