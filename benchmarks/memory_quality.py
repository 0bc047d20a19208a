"""Conversation memory recall by mode: semantic, keyword and hybrid, with the real model.

Data: every turn of ../shared/data/conversations (Topical-Chat and SGD, 13,296 turns) in one
ConversationMemory, spread over 40 users as tests/memory/datasets.py assigns them. Topical-Chat
turns carry no judgements; they are the distractors a real history holds.

Judged queries, made mechanically from SGD's own annotations (never from our results):

- "exact" queries: every span that SGD annotates as a name-like slot value (restaurant_name,
  place_name, street_address, phone_number, artist, album, track) in a turn. The query is the
  slot's name in words and the value ("restaurant name Sakoon"); the relevant messages are that
  user's turns annotated with the same slot and value (case-insensitive). These are the exact
  words users search their chats for.
- "meaning" queries: one hand-written paraphrase per SGD intent (INTENT_QUERIES, none of which
  copies the data's wording); the relevant messages are that user's turns whose annotation
  starts the intent (INFORM_INTENT).

Metric: recall@5 = |relevant in the top 5| / min(|relevant|, 5), averaged per query kind, the
search run as ``memory.search(user, query, limit=5, mode=...)`` with its default threshold.

Usage: .venv/bin/python benchmarks/memory_quality.py [--users 40]
Writes the "memory-quality" section of docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.report import machine_info, markdown_table, write_section
from semsearch import connect
from semsearch.memory.conversation import ConversationMemory
from semsearch.memory.types import MEMORY_MODES
from tests.memory.datasets import load_conversations, user_for

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "conversations"
NAME_SLOTS = (
    "restaurant_name", "place_name", "street_address", "phone_number", "artist", "album", "track",
)  # fmt: skip
INTENT_QUERIES = {
    "SearchHotel": "looking for somewhere to stay overnight",
    "ReserveHotel": "booking a room for my trip",
    "ReserveRestaurant": "getting a table for dinner",
    "LookupMusic": "finding some songs to listen to",
    "PlayMedia": "putting a film on",
}
K = 5

Judged = dict[tuple[str, str, str], set[tuple[str, int]]]  # (kind, user, query) -> messages


def judgements(users: int) -> Judged:
    """Relevant (conversation id, turn index) per (kind, user, query), from SGD annotations."""
    sgd = json.loads((DATA / "sgd" / "test_dialogues_001.json").read_text())
    out: Judged = defaultdict(set)
    for dialogue in sgd:
        cid = f"sgd-{dialogue['dialogue_id']}"
        user = user_for(cid, users)
        for index, turn in enumerate(dialogue["turns"]):
            text = turn["utterance"]
            for frame in turn["frames"]:
                for span in frame.get("slots", []):
                    if span["slot"] in NAME_SLOTS:
                        value = text[span["start"] : span["exclusive_end"]]
                        query = f"{span['slot'].replace('_', ' ')} {value}".lower()
                        out["exact", user, query].add((cid, index))
                for action in frame["actions"]:
                    if action["act"] == "INFORM_INTENT":
                        query = INTENT_QUERIES[action["canonical_values"][0]]
                        out["meaning", user, query].add((cid, index))
    return out


def main(users: int, write: bool = True) -> None:
    conversations = load_conversations(DATA, users)
    judged = judgements(users)
    with tempfile.TemporaryDirectory() as tmp:
        memory = ConversationMemory(connect(Path(tmp) / "memory.embed.db"), background=False)
        address: dict[str, tuple[str, int]] = {}
        started = time.perf_counter()
        for conv in conversations:
            for index, (role, text) in enumerate(conv.turns):
                ref = memory.add_message(
                    conv.user_id, conv.conversation_id, role, text, topics=conv.topics
                )
                address[ref.id] = (conv.conversation_id, index)
        memory.backfill()
        load_s = time.perf_counter() - started
        scores: dict[tuple[str, str], list[float]] = defaultdict(list)
        for (kind, user, query), relevant in judged.items():
            for mode in MEMORY_MODES:
                hits = memory.search(user, query, limit=K, mode=mode)
                found = {address[h.message.id] for h in hits}
                scores[kind, mode].append(len(found & relevant) / min(len(relevant), K))
        memory.close()
    counts = {kind: sum(1 for k in judged if k[0] == kind) for kind in ("exact", "meaning")}
    rows = [
        [f"{kind} ({counts[kind]} queries)"]
        + [f"{sum(scores[kind, m]) / len(scores[kind, m]):.3f}" for m in MEMORY_MODES]
        for kind in ("exact", "meaning")
    ]
    every = {m: [s for kind in ("exact", "meaning") for s in scores[kind, m]] for m in MEMORY_MODES}
    rows.append(["all"] + [f"{sum(v) / len(v):.3f}" for v in every.values()])
    table = markdown_table(["recall@5", *MEMORY_MODES], rows)
    body = "\n\n".join([
        "## Conversation memory: recall@5 by search mode",
        f"{sum(len(c.turns) for c in conversations):,} messages of {len(conversations)} "
        f"conversations over {users} users, embedded with the default model in {load_s:.0f} s. "
        "Judgements come from SGD's annotations (benchmarks/memory_quality.py says how); "
        "recall@5 = relevant in the top 5 / min(relevant, 5).",
        table,
        machine_info(),
    ])  # fmt: skip
    print(table)
    if write:
        write_section("memory-quality", body)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--users", type=int, default=40)
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args()
    main(args.users, write=not args.no_write)
