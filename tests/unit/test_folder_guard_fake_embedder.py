"""A collection remembers the folder it was synced from; syncing another folder into it is
refused before anything is written, unless the caller re-points it (``new_folder``).

Plumbing tests with the deterministic fake embedder and real SQLite files in a temp folder.
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

import semsearch
from semsearch.cli.app import app
from semsearch.errors import FolderMismatch
from semsearch.health import read_health
from semsearch.sources.folder_guard import FOLDER_OPTION, indexed_folder
from semsearch.sources.sync import sync_folder
from semsearch.sources.vault import VAULT_SCHEMA, index_folder
from semsearch.sources.watch import FolderWatcher

runner = CliRunner()


def write(root: Path, rel: str, text: str) -> None:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


@pytest.fixture
def vault_a(tmp_path: Path) -> Path:
    root = tmp_path / "vaultA"
    write(root, "README.md", "# Vault A\n\nThe garden notes live here.\n")
    write(root, "garden/tomatoes.md", "# Tomatoes\n\nWater tomatoes deeply twice a week.\n")
    write(root, "garden/basil.md", "# Basil\n\nPinch basil flowers off early.\n")
    return root


@pytest.fixture
def vault_b(tmp_path: Path) -> Path:
    root = tmp_path / "vaultB"
    write(root, "README.md", "# Vault B\n\nThe work notes live here.\n")
    write(root, "work/plan.md", "# Plan\n\nShip the quarterly roadmap.\n")
    return root


def snapshot(db: semsearch.Database, name: str = "notes") -> dict[str, Any]:
    """Everything a refused run must leave as it was: records, texts, fields, options, health."""
    coll = db.collection(name)
    info = db.store.get_collection(name)
    assert info is not None
    records = {r.id: (r.text, r.fields) for r in coll.get(coll.ids())}
    return {
        "records": records,
        "options": info.options,
        "stats": db.store.stats(name),
        "health": read_health(db.store, name),
    }


def forget_folder(db: semsearch.Database, name: str = "notes") -> None:
    """Make the collection look like one indexed by an older semsearch (no stored folder)."""
    info = db.store.get_collection(name)
    assert info is not None
    options = {k: v for k, v in info.options.items() if k != FOLDER_OPTION}
    db.store.update_collection(dataclasses.replace(info, options=options))


def test_plumbing_fake_embedder_other_folder_is_refused_and_nothing_changes(
    db: semsearch.Database, vault_a: Path, vault_b: Path
) -> None:
    coll = db.collection("notes", schema=VAULT_SCHEMA, embedder="fake:32")
    index_folder(coll, vault_a)
    assert indexed_folder(coll) == os.path.realpath(vault_a)
    before = snapshot(db)
    with pytest.raises(FolderMismatch) as refused:
        index_folder(coll, vault_b)
    message = refused.value.message
    assert os.path.realpath(vault_a) in message and os.path.realpath(vault_b) in message
    assert "would remove 2 of its 3 records" in message  # README.md would be replaced
    assert refused.value.hint is not None
    assert "--collection" in refused.value.hint and "--new-folder" in refused.value.hint
    assert snapshot(db) == before
    # sync_folder (semsearch index, the watcher's first sync) refuses before the health write
    with pytest.raises(FolderMismatch):
        sync_folder(coll, vault_b)
    assert snapshot(db) == before
    assert read_health(db.store, "notes").state == before["health"].state


def test_plumbing_fake_embedder_same_folder_twice_is_fine(
    db: semsearch.Database, vault_a: Path, tmp_path: Path
) -> None:
    coll = db.collection("notes", schema=VAULT_SCHEMA, embedder="fake:32")
    first, _ = sync_folder(coll, vault_a)
    assert first.new == 3
    write(vault_a, "garden/mint.md", "# Mint\n\nMint spreads everywhere.\n")
    again = index_folder(coll, vault_a)
    assert (again.new, again.unchanged, again.removed) == (1, 3, 0)
    link = tmp_path / "link-to-a"  # the same folder through a symbolic link
    link.symlink_to(vault_a, target_is_directory=True)
    third = index_folder(coll, link)
    assert (third.unchanged, third.chunks_embedded) == (4, 0)
    assert indexed_folder(coll) == os.path.realpath(vault_a)


def test_plumbing_fake_embedder_moved_folder_with_new_folder_re_embeds_nothing(
    db: semsearch.Database, vault_a: Path, tmp_path: Path
) -> None:
    coll = db.collection("notes", schema=VAULT_SCHEMA, embedder="fake:32")
    index_folder(coll, vault_a)
    texts = {r.id: r.text for r in coll.get(coll.ids())}
    moved = tmp_path / "elsewhere" / "vault"
    moved.parent.mkdir()
    vault_a.rename(moved)
    with pytest.raises(FolderMismatch) as refused:
        index_folder(coll, moved)
    assert "would remove 0 of its 3 records" in refused.value.message
    report, health = sync_folder(coll, moved, new_folder=True)
    assert (report.new, report.removed, report.chunks_embedded) == (0, 0, 0)
    assert health.state == "ok"
    assert {r.id: r.text for r in coll.get(coll.ids())} == texts
    assert indexed_folder(coll) == os.path.realpath(moved)
    assert index_folder(coll, moved).unchanged == 3  # re-pointed: no option needed any more


def test_plumbing_fake_embedder_new_folder_replaces_the_other_folder(
    db: semsearch.Database, vault_a: Path, vault_b: Path
) -> None:
    coll = db.collection("notes", schema=VAULT_SCHEMA, embedder="fake:32")
    index_folder(coll, vault_a)
    report = index_folder(coll, vault_b, new_folder=True)
    assert (report.new, report.changed, report.removed) == (1, 1, 2)
    assert sorted(coll.ids()) == ["README.md", "work/plan.md"]
    assert indexed_folder(coll) == os.path.realpath(vault_b)


def test_plumbing_fake_embedder_legacy_collection_disjoint_folder_is_refused(
    db: semsearch.Database, vault_a: Path, tmp_path: Path
) -> None:
    coll = db.collection("notes", schema=VAULT_SCHEMA, embedder="fake:32")
    index_folder(coll, vault_a)
    forget_folder(db)
    before = snapshot(db)
    other = tmp_path / "other"
    write(other, "journal/monday.md", "# Monday\n\nA quiet day.\n")
    with pytest.raises(FolderMismatch) as refused:
        index_folder(coll, other)
    assert "would remove 3 of its 3 records" in refused.value.message
    assert os.path.realpath(other) in refused.value.message
    assert snapshot(db) == before
    assert indexed_folder(coll) is None


def test_plumbing_fake_embedder_legacy_collection_overlapping_folder_proceeds(
    db: semsearch.Database, vault_a: Path
) -> None:
    coll = db.collection("notes", schema=VAULT_SCHEMA, embedder="fake:32")
    index_folder(coll, vault_a)
    forget_folder(db)
    (vault_a / "garden" / "basil.md").unlink()
    write(vault_a, "garden/mint.md", "# Mint\n\nMint spreads everywhere.\n")
    report = index_folder(coll, vault_a)
    assert (report.new, report.unchanged, report.removed) == (1, 2, 1)
    assert indexed_folder(coll) == os.path.realpath(vault_a)  # stored from now on


def test_plumbing_fake_embedder_legacy_collection_sharing_only_a_readme_is_refused(
    db: semsearch.Database, vault_a: Path, vault_b: Path
) -> None:
    # vault B shares README.md with vault A: 1 of A's 3 notes, not the same folder
    coll = db.collection("notes", schema=VAULT_SCHEMA, embedder="fake:32")
    index_folder(coll, vault_a)
    forget_folder(db)
    before = snapshot(db)
    with pytest.raises(FolderMismatch) as refused:
        index_folder(coll, vault_b)
    assert "would remove 2 of its 3 records" in refused.value.message
    assert snapshot(db) == before


def test_plumbing_fake_embedder_interrupted_first_sync_still_guards_its_folder(
    db: semsearch.Database, vault_a: Path, vault_b: Path
) -> None:
    coll = db.collection("notes", schema=VAULT_SCHEMA, embedder="fake:32")

    def interrupt(done: int, total: int) -> None:
        if done:  # not the first call (0 done: the total, before anything is written)
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        index_folder(coll, vault_a, progress=interrupt)  # after the first batch is written
    assert coll.count() == 3
    assert indexed_folder(coll) == os.path.realpath(vault_a)
    with pytest.raises(FolderMismatch):
        index_folder(coll, vault_b)
    assert sorted(coll.ids()) == ["README.md", "garden/basil.md", "garden/tomatoes.md"]


def test_plumbing_fake_embedder_watcher_refuses_another_folder(
    db: semsearch.Database, vault_a: Path, vault_b: Path
) -> None:
    coll = db.collection("notes", schema=VAULT_SCHEMA, embedder="fake:32")
    index_folder(coll, vault_a)
    before = snapshot(db)
    with pytest.raises(FolderMismatch):
        FolderWatcher(coll, vault_b)
    assert snapshot(db) == before
    watcher = FolderWatcher(coll, vault_b, new_folder=True)
    watcher.sync()
    assert sorted(coll.ids()) == ["README.md", "work/plan.md"]


def test_plumbing_fake_embedder_cli_index_prints_message_and_hint_and_exits_non_zero(
    tmp_path: Path, vault_a: Path, vault_b: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SEMSEARCH_MODEL", "fake:32")
    monkeypatch.setenv("COLUMNS", "1000")  # one line per message, whatever the paths' length
    index = str(tmp_path / "t.embed.db")
    assert runner.invoke(app, ["index", str(vault_a), "--index", index]).exit_code == 0
    with semsearch.connect(index) as db:
        before = snapshot(db)
    refused = runner.invoke(app, ["index", str(vault_b), "--index", index, "--no-sentence-windows"])
    assert refused.exit_code == 5
    with semsearch.connect(index) as db:
        assert snapshot(db) == before  # not even the sentence_windows option was stored
    assert "Traceback" not in refused.output
    assert "error: collection 'notes' holds the notes of" in refused.output
    assert os.path.realpath(vault_a) in refused.output
    assert os.path.realpath(vault_b) in refused.output
    assert "would remove 2 of its 3 records" in refused.output
    assert "hint: to keep both, index" in refused.output
    assert "--collection NAME" in refused.output and "--new-folder" in refused.output
    other = runner.invoke(app, ["index", str(vault_b), "--index", index, "--collection", "work"])
    assert other.exit_code == 0, other.output
    moved = runner.invoke(app, ["index", str(vault_b), "--index", index, "--new-folder"])
    assert moved.exit_code == 0, moved.output
    assert "2 removed" in moved.output
