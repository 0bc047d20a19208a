"""Markdown folder ingestion: front matter, skipping, globs, idempotence, removals, bad files.

Plumbing tests with the deterministic fake embedder and real files in a temp folder.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import semsearch
from semsearch.sources.vault import VAULT_SCHEMA, index_folder, scan_folder, split_front_matter


def write(root: Path, rel: str, text: str | bytes) -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    root = tmp_path / "vault"
    write(
        root,
        "garden/tomatoes.md",
        "---\ntitle: Growing tomatoes\ntags: [garden, food]\nsecret_word: zanzibar\n---\n"
        "# Tomatoes\n\nWater tomatoes deeply twice a week.\n",
    )
    write(root, "work/plan.md", "# Plan\n\nShip the quarterly roadmap.\n")
    write(root, "data.csv", "not a note,x")
    write(root, ".obsidian/config.md", "# hidden config")
    write(root, "node_modules/pkg/readme.md", "# vendored")
    write(root, ".git/notes.md", "# git internals")
    return root


def test_scan_skips_hidden_node_modules_and_files_that_are_not_notes(vault: Path) -> None:
    assert list(scan_folder(vault)) == ["garden/tomatoes.md", "work/plan.md"]
    assert list(scan_folder(vault, exclude=["work/*"])) == ["garden/tomatoes.md"]
    assert list(scan_folder(vault, include=["*.csv"])) == ["data.csv"]


def test_front_matter_goes_to_fields_never_into_chunks(db: semsearch.Database, vault: Path) -> None:
    coll = db.collection("notes", schema=VAULT_SCHEMA, embedder="fake:32")
    index_folder(coll, vault)
    record = coll.get("garden/tomatoes.md")[0]
    assert record.fields["title"] == "Growing tomatoes"
    assert record.fields["tags"] == ["garden", "food"]
    assert record.fields["folder"] == "garden"
    assert record.fields["body_line"] == 6
    assert "zanzibar" not in record.text
    assert coll.search("zanzibar", mode="keyword").hits == []
    hit = coll.search("water tomatoes", mode="keyword").hits[0]
    assert hit.chunk is not None
    assert hit.chunk.heading_path == ("Tomatoes",)
    assert hit.chunk.line_start == 6  # the '# Tomatoes' line of the file


def test_split_front_matter_reports_body_line() -> None:
    front, body, line = split_front_matter("---\na: 1\nb: [x]\n---\nbody\n")
    assert front == {"a": 1, "b": ["x"]}
    assert body == "body\n"
    assert line == 5
    assert split_front_matter("no front matter") == ({}, "no front matter", 1)


def test_reindex_is_idempotent_and_tracks_changes_and_removals(
    db: semsearch.Database, vault: Path
) -> None:
    coll = db.collection("notes", schema=VAULT_SCHEMA, embedder="fake:32")
    first = index_folder(coll, vault)
    assert (first.new, first.changed, first.unchanged, first.removed) == (2, 0, 0, 0)
    again = index_folder(coll, vault)
    assert (again.new, again.changed, again.unchanged, again.removed) == (0, 0, 2, 0)
    assert again.chunks_embedded == 0

    write(vault, "work/plan.md", "# Plan\n\nShip the roadmap and hire two engineers.\n")
    (vault / "garden/tomatoes.md").unlink()
    write(vault, "garden/peppers.md", "# Peppers\n\nPeppers like heat.\n")
    third = index_folder(coll, vault)
    assert (third.new, third.changed, third.removed) == (1, 1, 1)
    assert coll.ids() == ["garden/peppers.md", "work/plan.md"]
    for mode in ("semantic", "keyword", "hybrid"):
        ids = coll.search("water tomatoes deeply", mode=mode, min_score=None).ids
        assert "garden/tomatoes.md" not in ids, mode
    assert coll.search("hire engineers", mode="keyword").ids == ["work/plan.md"]


def test_bad_files_are_reported_and_skipped(db: semsearch.Database, vault: Path) -> None:
    write(vault, "broken/latin1.md", "caf\xe9 au lait".encode("latin-1"))
    coll = db.collection("notes", schema=VAULT_SCHEMA, embedder="fake:32")
    report = index_folder(coll, vault)
    assert report.skipped == [("broken/latin1.md", "not valid UTF-8")]
    assert report.new == 2
    assert coll.count() == 2


def test_a_file_name_that_is_not_utf8_is_skipped_and_the_rest_indexed(
    db: semsearch.Database, vault: Path
) -> None:
    """Before, one such name stopped the whole run with a lone-surrogate error on the record
    id, and quarantined an index that was fine."""
    import os

    coll = db.collection("notes", schema=VAULT_SCHEMA, embedder="fake:32")
    assert index_folder(coll, vault).new == 2
    with open(os.path.join(os.fsencode(vault), b"garden", b"caf\xe9.md"), "wb") as out:
        out.write(b"# Cafe\n\nA note with a latin-1 name.\n")
    write(vault, "work/next.md", "# Next\n\nA new note beside it.\n")
    report = index_folder(coll, vault)
    ((rel, reason),) = report.skipped
    assert rel == os.fsdecode(b"garden/caf\xe9.md") and "name is not valid UTF-8" in reason
    assert (report.new, report.removed) == (1, 0) and coll.count() == 3


@pytest.mark.parametrize(
    ("content", "line"),
    [("---\ntitle: T\n---\n\n# Head\n\nword\n", 5),  # front matter, a blank line, the text
     ("\n\n\n# Head\n\nword\n", 4), ("---\ntitle: T\n---\n# Head\n\nword\n", 4),
     ("# Head\n\nword\n", 1)],
)  # fmt: skip
def test_hit_line_numbers_count_the_blank_lines_before_the_text(
    db: semsearch.Database, tmp_path: Path, content: str, line: int
) -> None:
    """The record's text is stripped, so chunk lines were counted from its first non-blank
    line as if it were the body's first: one line early per blank line (a blank line after
    front matter is common). Expected lines counted by hand in each file."""
    root = tmp_path / "lines"
    write(root, "n.md", content)
    coll = db.collection("notes", schema=VAULT_SCHEMA, embedder="fake:32")
    index_folder(coll, root)
    (hit,) = coll.search("word", mode="keyword")
    assert hit.chunk is not None and hit.chunk.line_start == line
    assert content.splitlines()[line - 1] == "# Head"


def test_a_folder_whose_only_notes_cannot_be_read_says_so(
    db: semsearch.Database, tmp_path: Path
) -> None:
    """It said "no notes found", though the note was there, only unreadable."""
    root = tmp_path / "one"
    write(root, "a.md", "# A\n\nfine\n")
    coll = db.collection("notes", schema=VAULT_SCHEMA, embedder="fake:32")
    index_folder(coll, root)
    write(root, "a.md", b"x \xff y")
    with pytest.raises(semsearch.SemsearchError) as info:
        index_folder(coll, root)
    assert "none of the 1 notes" in info.value.message and "a.md: not valid UTF-8" in (
        info.value.message
    )
    assert coll.ids() == ["a.md"]  # refused: nothing removed


def test_excluded_files_are_removed_on_reindex(db: semsearch.Database, vault: Path) -> None:
    coll = db.collection("notes", schema=VAULT_SCHEMA, embedder="fake:32")
    index_folder(coll, vault)
    report = index_folder(coll, vault, exclude=["work/*"])
    assert report.removed == 1
    assert coll.ids() == ["garden/tomatoes.md"]


def test_not_a_folder_is_a_clear_error(db: semsearch.Database, tmp_path: Path) -> None:
    coll = db.collection("notes", schema=VAULT_SCHEMA, embedder="fake:32")
    with pytest.raises(semsearch.SemsearchError) as info:
        index_folder(coll, tmp_path / "nope")
    assert info.value.hint
