"""One fact buried in a long note of another topic: is the right note top 1? (issue 20, item 2)

For each of the 11 cases in benchmarks/buried_facts_cases.py (the lighthouse key under the
blue pot, and 10 more of its kind), a fresh SQLite collection holds the long note with its fact,
the four other long notes without one, and 12 one-line notes near the queries' topics. The
real default model embeds everything. A case passes a mode when the note that holds the fact
ranks first and its shown chunk contains the fact.

The last column scores the same notes offline with sentence windows: each note's score is the
max of its whole-text cosine and its best sentence's cosine (every sentence embedded alone),
the multi-vector scoring the library does not do yet. It shows what sentence-level matching
would buy.

Usage: .venv/bin/python benchmarks/buried_facts.py
Writes the "buried-facts" section of docs/benchmarks.md.
"""

from __future__ import annotations

import re
import sys
import tempfile
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks import buried_facts_cases as cases
from benchmarks.report import machine_info, markdown_table, write_section
from semsearch import connect
from semsearch.embedders.local import LocalEmbedder

MODES = ("semantic", "keyword", "hybrid")
LONG = {
    "compost": cases.COMPOST, "car": cases.CAR, "recipes": cases.RECIPES,
    "work": cases.WORK, "garden": cases.GARDEN,
}  # fmt: skip
SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


def notes_for(note_id: str, template: str, fact: str) -> dict[str, str]:
    """The case's collection: its long note with the fact, the others without, distractors."""
    notes = dict(cases.DISTRACTORS)
    notes |= {other: text.format(fact="") for other, text in LONG.items() if other != note_id}
    notes[note_id] = template.format(fact=fact)
    return notes


def windowed_top(embedder: LocalEmbedder, notes: dict[str, str], query: str) -> str:
    """The top note when a note scores max(whole-note cosine, best sentence cosine)."""
    q = embedder.embed_query(query)
    ids = list(notes)
    whole = embedder.embed_documents([notes[i] for i in ids]) @ q
    best = [
        float((embedder.embed_documents([s for s in SENTENCE_END.split(notes[i]) if s]) @ q).max())
        for i in ids
    ]
    return ids[int(np.argmax(np.maximum(whole, best)))]


def main(write: bool = True) -> None:
    embedder = LocalEmbedder()
    rows, passed = [], dict.fromkeys((*MODES, "windows"), 0)
    for note_id, template, fact, query in cases.CASES:
        notes = notes_for(note_id, template, fact)
        with tempfile.TemporaryDirectory() as tmp, connect(Path(tmp) / "b.embed.db") as db:
            coll = db.collection("notes", embedder=embedder)
            coll.upsert([{"id": k, "text": v} for k, v in notes.items()])
            row = [f"{query} ({note_id})"]
            for mode in MODES:
                result = coll.search(query, mode=mode, limit=3, min_score=None)
                ok = bool(result.hits) and result.ids[0] == note_id
                ok = ok and result[0].chunk is not None and fact in result[0].chunk.text
                passed[mode] += ok
                row.append("top 1" if ok else f"no: {result.ids[0] if result.hits else '-'}")
        ok = windowed_top(embedder, notes, query) == note_id
        passed["windows"] += ok
        rows.append([*row, "top 1" if ok else "no"])
    rows.append(["**passed**", *[f"**{passed[m]} of {len(cases.CASES)}**" for m in passed]])
    table = markdown_table(["query (note)", *MODES, "semantic + sentence windows (offline)"], rows)
    body = "\n\n".join([
        "## Buried facts: one sentence inside a long note of another topic",
        "Each case holds 17 notes: the long note with the fact, four long notes without one, and "
        "12 one-line distractors near the queries' topics. Default model, SQLite store.",
        table,
        machine_info(),
    ])  # fmt: skip
    print(table)
    if write:
        write_section("buried-facts", body)


if __name__ == "__main__":
    main("--no-write" not in sys.argv)
