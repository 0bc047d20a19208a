"""The watcher and a full sync judge the new formats as `semsearch index` does: a new org note
is searchable with its lines, a .docx that turns unreadable is dropped with the reason, and
such skips leave the index health ok (they are by policy, not failures).

Plumbing tests with the deterministic fake embedder (keyword search); files made in the test.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import semsearch
from semsearch.sources.vault import VAULT_SCHEMA
from semsearch.sources.watch import FolderWatcher, sync_folder
from tests.formats.make import ORG, docx_bytes

pytest.importorskip("docx")


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    root = tmp_path / "notes"
    root.mkdir()
    (root / "report.docx").write_bytes(docx_bytes())
    (root / "a.md").write_text("# A\n\nThe lighthouse is red.\n", encoding="utf-8")
    return root


def test_watch_follows_org_and_docx_changes_fake_embedder(folder: Path, tmp_path: Path) -> None:
    db = semsearch.connect(tmp_path / "w.embed.db")
    coll = db.collection("notes", schema=VAULT_SCHEMA, embedder="fake:32")
    watcher = FolderWatcher(coll, folder)
    watcher.sync()
    (folder / "travel.org").write_text(ORG, encoding="utf-8")
    report = watcher.apply(["travel.org"])
    assert report.new == 1
    hit = coll.search("ibis", mode="keyword").hits[0]
    assert hit.id == "travel.org" and hit.chunk is not None
    assert (hit.chunk.line_start, hit.chunk.heading_path) == (12, ("Rivers", "Deltas"))
    (folder / "report.docx").write_bytes(b"PK\x03\x04 truncated")
    report = watcher.apply(["report.docx"])
    assert report.removed == 1
    assert report.skipped == [("report.docx", "not a readable .docx (BadZipFile); not indexed")]
    assert sorted(coll.ids()) == ["a.md", "travel.org"]
    _, health = sync_folder(coll, folder)
    assert (health.state, health.failed) == ("ok", ())
    db.close()
