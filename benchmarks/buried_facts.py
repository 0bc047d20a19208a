"""One fact buried in a long note of another topic: is the right note top 1? (issue 20, item 2)

For each of the 11 cases in benchmarks/buried_facts_cases.py (the lighthouse key under the
blue pot, and 10 more of its kind), a fresh SQLite collection holds the long note with its fact,
the four other long notes without one, and 12 one-line notes near the queries' topics. The
real default model embeds everything. A case passes a mode when the note that holds the fact
ranks first and its shown chunk contains the fact, with each mode's default floor on (what a
user gets: a hit the floor removes does not count).

Columns: each mode as the library runs it (sentence windows on, the default), then semantic and
hybrid on a collection made with ``sentence_windows=False`` (chunk cosine only, the scoring
before windows), and whether the top hit's ``highlight`` is exactly the fact's sentence.

Usage: .venv/bin/python benchmarks/buried_facts.py
Writes the "buried-facts" section of docs/benchmarks.md.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks import buried_facts_cases as cases
from benchmarks.report import machine_info, markdown_table, write_section
from semsearch import Collection, connect
from semsearch.embedders.local import LocalEmbedder

MODES = ("semantic", "keyword", "hybrid")
LONG = {
    "compost": cases.COMPOST, "car": cases.CAR, "recipes": cases.RECIPES,
    "work": cases.WORK, "garden": cases.GARDEN,
}  # fmt: skip


def notes_for(note_id: str, template: str, fact: str) -> dict[str, str]:
    """The case's collection: its long note with the fact, the others without, distractors."""
    notes = dict(cases.DISTRACTORS)
    notes |= {other: text.format(fact="") for other, text in LONG.items() if other != note_id}
    notes[note_id] = template.format(fact=fact)
    return notes


def passes(coll: Collection, query: str, mode: str, note_id: str, fact: str) -> tuple[bool, str]:
    """(the note with the fact ranks first and its chunk holds the fact, what ranked first)."""
    result = coll.search(query, mode=mode, limit=3)
    ok = bool(result.hits) and result.ids[0] == note_id
    ok = ok and result[0].chunk is not None and fact in result[0].chunk.text
    return ok, result.ids[0] if result.hits else "-"


def main(write: bool = True) -> None:
    embedder = LocalEmbedder()
    columns = (*MODES, "semantic, windows off", "hybrid, windows off", "highlight = fact")
    rows, passed = [], dict.fromkeys(columns, 0)
    for note_id, template, fact, query in cases.CASES:
        notes = [{"id": k, "text": v} for k, v in notes_for(note_id, template, fact).items()]
        with tempfile.TemporaryDirectory() as tmp, connect(Path(tmp) / "b.embed.db") as db:
            on = db.collection("notes", embedder=embedder)
            off = db.collection("plain", embedder=embedder, sentence_windows=False)
            on.upsert(notes)
            off.upsert(notes)
            outcomes = [passes(on, query, mode, note_id, fact) for mode in MODES]
            outcomes += [passes(off, query, mode, note_id, fact) for mode in ("semantic", "hybrid")]
            top = on.search(query, limit=1, min_score=None)[0]  # the highlight, floor or not
            span = top.highlight
            marked = top.chunk is not None and span is not None
            marked = marked and top.chunk.text[span[0] : span[1]] == fact.strip()  # type: ignore[union-attr,index]
            outcomes.append((marked, "other sentence"))
        row = [f"{query} ({note_id})"]
        for column, (ok, got) in zip(columns, outcomes, strict=True):
            passed[column] += ok
            row.append(
                "top 1"
                if ok and not column.startswith("highlight")
                else "yes"
                if ok
                else f"no: {got}"
            )
        rows.append(row)
    rows.append(["**passed**", *[f"**{passed[m]} of {len(cases.CASES)}**" for m in passed]])
    table = markdown_table(["query (note)", *columns], rows)
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
