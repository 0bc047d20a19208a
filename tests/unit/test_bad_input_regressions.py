"""Bad input found by trying semsearch as a new user: each gets a clear error or is handled.

Plumbing tests with the deterministic fake embedder.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from typer.testing import CliRunner

import semsearch
from semsearch.cli.app import app
from semsearch.sources.records import import_file
from semsearch.sources.vault import VAULT_SCHEMA, index_folder

runner = CliRunner()


@pytest.fixture(autouse=True)
def fake_model(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SEMSEARCH_MODEL", "fake:32")


def test_brackets_in_ids_headings_and_queries_print_verbatim(tmp_path: Path) -> None:
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "brackets [x].md").write_text("# Uses [/] closing\n\nLink with [[wikilinks]] here.\n")
    index = str(tmp_path / "b.embed.db")
    assert runner.invoke(app, ["index", str(notes), "--index", index]).exit_code == 0
    for query in ("[/]", "foam[/bold]", "wikilinks"):
        result = runner.invoke(app, ["search", query, "--index", index, "--mode", "keyword"])
        assert result.exit_code == 0, result.output
    assert "brackets [x].md" in result.output and "Uses [/] closing" in result.output
    assert "[[wikilinks]]" in result.output


def test_index_in_a_missing_folder_is_backend_unavailable(tmp_path: Path) -> None:
    db = semsearch.connect(tmp_path / "no" / "such" / "x.embed.db")
    with pytest.raises(semsearch.BackendUnavailable) as info:
        db.collection("notes")
    assert "folder exists" in (info.value.hint or "")


def test_a_folder_given_as_index_is_refused(tmp_path: Path) -> None:
    folder = tmp_path / "dir.embed.db"
    folder.mkdir()
    with pytest.raises(semsearch.BackendUnavailable):
        semsearch.connect(folder)


def test_home_is_expanded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    with semsearch.connect("~/home.embed.db") as db:
        db.collection("notes").upsert([{"id": "a", "text": "hello"}])
    assert (tmp_path / "home.embed.db").exists()


def test_index_refuses_to_empty_a_collection_when_nothing_matches(tmp_path: Path) -> None:
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "a.md").write_text("# A\n\nalpha\n")
    empty = tmp_path / "empty"
    empty.mkdir()
    with semsearch.connect(tmp_path / "e.embed.db") as db:
        coll = db.collection("notes", schema=VAULT_SCHEMA)
        index_folder(coll, notes)
        with pytest.raises(semsearch.FolderMismatch):  # another folder: refused first
            index_folder(coll, empty)
        with pytest.raises(semsearch.SemsearchError) as info:  # re-pointed, still refused
            index_folder(coll, empty, new_folder=True)
        assert "refusing to remove all 1 records" in info.value.message
        with pytest.raises(semsearch.SemsearchError):
            index_folder(coll, notes, include=["*.txt"])
        assert coll.ids() == ["a.md"]


def test_fifo_in_a_folder_is_skipped_not_read(tmp_path: Path) -> None:
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "a.md").write_text("# A\n\nalpha\n")
    os.mkfifo(notes / "pipe.md")
    with semsearch.connect(tmp_path / "f.embed.db") as db:
        report = index_folder(db.collection("notes", schema=VAULT_SCHEMA), notes)
    assert report.new == 1


def test_byte_order_marks_are_ignored(tmp_path: Path) -> None:
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "bom.md").write_bytes("\ufeff---\ntitle: Secret title\n---\n# Body\n\ntext\n".encode())
    csv_file = tmp_path / "items.csv"
    csv_file.write_bytes("\ufeffsku,name\nk1,Kettle\n".encode())
    with semsearch.connect(tmp_path / "m.embed.db") as db:
        notes_coll = db.collection("notes", schema=VAULT_SCHEMA)
        index_folder(notes_coll, notes)
        assert notes_coll.get("bom.md")[0].fields["title"] == "Secret title"
        assert notes_coll.search("secret", mode="keyword").hits == []
        items = db.collection("items", schema=semsearch.Schema(text=("name",)))
        assert import_file(items, csv_file, id_field="sku").added == 1


def test_a_failed_import_creates_no_index_and_no_collection(tmp_path: Path) -> None:
    bad = tmp_path / "bad.csv"
    bad.write_text("id,text,n\na,alpha,1\nb,beta,x\n")
    index = tmp_path / "i.embed.db"
    result = runner.invoke(
        app, ["import", str(bad), "-c", "csv", "--field", "n:int", "--index", str(index)]
    )
    assert result.exit_code == 4
    assert not index.exists()
    ok = runner.invoke(
        app, ["import", str(bad), "-c", "csv", "--field", "n:str", "--index", str(index)]
    )
    assert ok.exit_code == 0, ok.output
    no_text = runner.invoke(
        app, ["import", str(bad), "-c", "t", "--text", "nope", "--index", str(index)]
    )
    assert no_text.exit_code == 4 and "--text" in no_text.output


def test_a_field_added_later_is_filled_in_by_the_next_import(tmp_path: Path) -> None:
    data = tmp_path / "spells.json"
    data.write_text(json.dumps([{"id": "a", "text": "fire", "duration": "1 minute"}]))
    with semsearch.connect(tmp_path / "s.embed.db") as db:
        import_file(db.collection("s"), data)
        coll = db.collection("s", schema=semsearch.Schema.from_types({"duration": "str"}))
        report = import_file(coll, data)
        assert (report.updated, report.chunks_embedded) == (1, 0)
        assert [r.id for r in coll.find({"duration": "1 minute"})] == ["a"]


def test_two_stores_creating_the_same_collection_do_not_clash(tmp_path: Path) -> None:
    path = tmp_path / "race.embed.db"
    first, second = semsearch.connect(path), semsearch.connect(path)
    first.collection("notes").upsert([{"id": "a", "text": "alpha"}])
    second.store.create_collection(first.store.get_collection("notes"))  # loses the race: no error
    assert second.collection("notes").count() == 1


@pytest.mark.parametrize("spec", ["fake:-3", "fake:abc"])
def test_bad_embedder_specs_are_clear_errors(spec: str) -> None:
    with pytest.raises(semsearch.EmbedderUnavailable):
        semsearch.connect(":memory:").collection("x", embedder=spec)


def test_a_local_spec_naming_a_folder_without_a_model_creates_no_collection(
    tmp_path: Path,
) -> None:
    (tmp_path / "empty").mkdir()
    with semsearch.connect(tmp_path / "m.embed.db") as db:
        for spec in (f"local:{tmp_path / 'missing'}", f"local:{tmp_path / 'empty'}"):
            with pytest.raises(semsearch.EmbedderUnavailable) as info:
                db.collection("notes", embedder=spec)
            assert "no sentence-transformers model" in info.value.message and info.value.hint
        assert db.collections() == []


def test_upsert_of_a_single_dict_says_to_pass_a_list() -> None:
    coll = semsearch.connect(":memory:").collection("x")
    with pytest.raises(semsearch.InvalidRecord) as info:
        coll.upsert({"id": "a", "text": "alpha"})  # type: ignore[arg-type]
    assert "list" in info.value.message
