"""Symbolic links in an indexed folder never bring in files from outside it (privacy).

Plumbing tests with the deterministic fake embedder and real symbolic links in a temp folder.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import semsearch
from semsearch.sources.vault import VAULT_SCHEMA, index_folder, scan_folder
from semsearch.sources.watch import FolderWatcher, sync_folder


@pytest.fixture
def linked(tmp_path: Path) -> Path:
    """A vault with one real note and links: outside file, outside folder, inside file, loop."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.md").write_text("# Secret\n\nthe launch code is walrus\n", "utf-8")
    root = tmp_path / "vault"
    (root / "sub").mkdir(parents=True)
    (root / "note.md").write_text("# Note\n\nbees make honey\n", "utf-8")
    (root / "leak.md").symlink_to(outside / "secret.md")
    (root / "outdir").symlink_to(outside, target_is_directory=True)
    (root / "alias.md").symlink_to(root / "note.md")
    (root / "sub" / "loop").symlink_to(root, target_is_directory=True)
    return root


def test_links_outside_the_folder_are_skipped_by_name_fake_embedder(
    db: semsearch.Database, linked: Path
) -> None:
    notes = db.collection("notes", embedder="fake:32", schema=VAULT_SCHEMA)
    report = index_folder(notes, linked)
    assert sorted(notes.ids()) == ["alias.md", "note.md"]
    skipped = dict(report.skipped)
    assert set(skipped) == {"leak.md", "outdir", "sub/loop"}
    assert "outside the indexed folder" in skipped["leak.md"]
    assert "outside the indexed folder" in skipped["outdir"]
    assert "inside the indexed folder" in skipped["sub/loop"]
    assert notes.get("leak.md") == []
    assert notes.search("walrus", mode="keyword").hits == []


def test_a_link_inside_the_folder_is_followed_once_fake_embedder(
    db: semsearch.Database, linked: Path
) -> None:
    notes = db.collection("notes", embedder="fake:32", schema=VAULT_SCHEMA)
    index_folder(notes, linked)
    [alias] = notes.get("alias.md")
    assert "bees make honey" in alias.text
    # the loop back to the root is not descended: no sub/loop/... ids
    assert list(scan_folder(linked)) == ["alias.md", "leak.md", "note.md"]


def test_a_record_stored_from_an_outside_link_is_removed_on_resync_fake_embedder(
    db: semsearch.Database, linked: Path
) -> None:
    notes = db.collection("notes", embedder="fake:32", schema=VAULT_SCHEMA)
    notes.upsert([{"id": "leak.md", "text": "the launch code is walrus", "path": "leak.md"}])
    report, health = sync_folder(notes, linked)
    assert notes.get("leak.md") == []
    assert report.removed == 1
    assert health.state == "ok"  # a link not followed by policy is not a failed file


def test_watcher_skips_an_outside_link_created_later_fake_embedder(
    db: semsearch.Database, tmp_path: Path
) -> None:
    root = tmp_path / "vault"
    root.mkdir()
    (root / "note.md").write_text("# Note\n\nbees\n", "utf-8")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.md").write_text("# Secret\n\nwalrus\n", "utf-8")
    notes = db.collection("notes", embedder="fake:32", schema=VAULT_SCHEMA)
    watcher = FolderWatcher(notes, root, echo=lambda _m: None)
    watcher.sync()
    (root / "leak.md").symlink_to(outside / "secret.md")
    (root / "outdir").symlink_to(outside, target_is_directory=True)
    report = watcher.apply(["leak.md", "outdir"])
    assert sorted(notes.ids()) == ["note.md"]
    assert [rel for rel, _ in report.skipped] == ["leak.md"]
    assert watcher.failed == set()
