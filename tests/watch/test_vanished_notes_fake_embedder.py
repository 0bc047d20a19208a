"""Notes renamed or deleted while a full sync runs (issue 46, item 20): a file listed by the scan
and gone when its turn to be read comes is a removal, not a failure. Before, it was reported as
unreadable ("cannot be read: No such file or directory") and marked the index degraded until
the next run.

Plumbing test with the deterministic fake embedder, a real SQLite file and real files removed
and renamed on disk between two batches of the sync.
"""

from __future__ import annotations

from pathlib import Path

import semsearch
from semsearch.embedders.fake import FakeEmbedder
from semsearch.sources.vault import FILES_PER_BATCH, VAULT_SCHEMA
from semsearch.sources.watch import sync_folder


def make_vault(root: Path, n: int) -> list[str]:
    root.mkdir()
    names = [f"n{i:03d}.md" for i in range(n)]
    for i, name in enumerate(names):
        (root / name).write_text(f"# Note {i}\n\nabout topic {i}\n")
    return names


def test_notes_vanishing_mid_sync_are_removals_not_failures_fake_embedder(tmp_path: Path) -> None:
    vault = tmp_path / "vault"
    names = make_vault(vault, 2 * FILES_PER_BATCH + 2)
    later = names[FILES_PER_BATCH + 5], names[FILES_PER_BATCH + 6]  # read in the second batch
    with semsearch.connect(tmp_path / "v.embed.db") as db:
        coll = db.collection("notes", schema=VAULT_SCHEMA, embedder=FakeEmbedder(32))
        first, health = sync_folder(coll, vault)
        assert (first.new, health.state) == (len(names), "ok")

        def vanish(done: int, total: int) -> None:  # after the first batch
            if done == FILES_PER_BATCH:
                (vault / later[0]).unlink()
                (vault / later[1]).rename(vault / "renamed.md")

        report, health = sync_folder(coll, vault, progress=vanish)
        assert report.skipped == []  # not "cannot be read"
        assert health.state == "ok" and health.failed == ()
        assert report.removed == 2
        assert set(later).isdisjoint(coll.ids())  # their old text is gone from every search
        assert "renamed.md" not in coll.ids()  # the scan did not list it: the next run adds it
        again, health = sync_folder(coll, vault)
        assert (again.new, again.removed, health.state) == (1, 0, "ok")
        assert "renamed.md" in coll.ids() and len(coll.ids()) == len(names) - 1


def test_a_new_note_vanishing_before_its_first_read_is_not_reported_fake_embedder(
    tmp_path: Path,
) -> None:
    vault = tmp_path / "vault"
    names = make_vault(vault, FILES_PER_BATCH + 3)
    gone = names[-1]

    def vanish(done: int, total: int) -> None:
        if done == FILES_PER_BATCH:
            (vault / gone).unlink()

    with semsearch.connect(tmp_path / "v.embed.db") as db:
        coll = db.collection("notes", schema=VAULT_SCHEMA, embedder=FakeEmbedder(32))
        report, health = sync_folder(coll, vault, progress=vanish)
        assert (report.new, report.removed, report.skipped) == (len(names) - 1, 0, [])
        assert health.state == "ok" and gone not in coll.ids()
