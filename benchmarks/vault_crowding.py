"""Do notes made of many short sections crowd out the answer? (issue 20, fault 2)

Indexes the foam-docs vault (86 notes; its hub ``index.md`` splits into about 150 small chunks)
with the real default model and asks the 24 judged questions of benchmarks/vault_queries.py.
Reports, per mode, MRR@10, how often the answer is first and in the top 3, and how often the hub
note is in the top 3 although it answers none of them.

It also scores the semantic leg offline with a record score that pays for its number of chunks,
``max chunk cosine - lam * ln(chunks of the record)``: the best of many chunks is high by chance
more often than the best of few. The library ranks records by their best chunk (lam = 0).

Usage: .venv/bin/python benchmarks/vault_crowding.py
Writes the "vault-crowding" section of docs/benchmarks.md.
"""

from __future__ import annotations

import math
import sys
import tempfile
from collections import Counter, defaultdict
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.report import machine_info, markdown_table, write_section
from benchmarks.vault_queries import HUB, QUESTIONS
from semsearch import connect
from semsearch.embedders.local import LocalEmbedder
from semsearch.sources.vault import VAULT_SCHEMA, index_folder

VAULT = Path(__file__).resolve().parents[2] / "shared" / "data" / "vault" / "foam-docs"
LAMBDAS = (0.0, 0.01, 0.02, 0.03, 0.05)


def scores(rank: Callable[[str], list[str]]) -> list[str]:
    """MRR@10, answer first, answer in top 3, hub in top 3, over QUESTIONS."""
    mrr = first = top3 = hub = 0.0
    for question, answer in QUESTIONS.items():
        ids = rank(question)[:10]
        place = ids.index(answer) + 1 if answer in ids else None
        mrr += 1 / place if place else 0.0
        first += place == 1
        top3 += bool(place and place <= 3)
        hub += HUB in ids[:3]
    n = len(QUESTIONS)
    return [f"{mrr / n:.3f}", f"{first:.0f}/{n}", f"{top3:.0f}/{n}", f"{hub:.0f}/{n}"]


def main(write: bool = True) -> None:
    embedder = LocalEmbedder()
    with tempfile.TemporaryDirectory() as tmp, connect(Path(tmp) / "foam.embed.db") as db:
        coll = db.collection("notes", schema=VAULT_SCHEMA, embedder=embedder)
        index_folder(coll, VAULT)
        rows = [
            [f"{mode} (library)", *scores(lambda q, m=mode: coll.search(q, mode=m, limit=10, min_score=None).ids)]
            for mode in ("semantic", "keyword", "hybrid")
        ]  # fmt: skip
        every = {q: coll.store.vector_search("notes", embedder.embed_query(q), 5000, None, True)
                 for q in QUESTIONS}  # fmt: skip
        chunks = Counter(c.record_id for c in next(iter(every.values())))
    for lam in LAMBDAS:

        def rank(question: str, lam: float = lam) -> list[str]:
            best: dict[str, float] = defaultdict(lambda: -2.0)
            for c in every[question]:
                best[c.record_id] = max(best[c.record_id], c.score)
            penalised = {r: s - lam * math.log(chunks[r]) for r, s in best.items()}
            return sorted(penalised, key=lambda r: (-penalised[r], r))

        rows.append([f"semantic, max - {lam:g} ln(chunks) (offline)", *scores(rank)])
    table = markdown_table(
        ["ranking", "MRR@10", "answer first", "answer in top 3", "hub in top 3"], rows
    )
    body = "\n\n".join([
        "## Vault crowding: a hub note of many short sections against the pages that answer",
        f"foam-docs, 86 notes; `{HUB}` has {chunks[HUB]} chunks. 24 judged questions "
        "(benchmarks/vault_queries.py). Default model, SQLite store, exact scan.",
        table,
        machine_info(),
    ])  # fmt: skip
    print(table)
    if write:
        write_section("vault-crowding", body)


if __name__ == "__main__":
    main("--no-write" not in sys.argv)
