"""A real watcher (watchfiles, in a thread) following edits to a temp copy of the foam-docs
vault. Plumbing tests with the deterministic fake embedder: each change must show up in
keyword AND semantic results within a bounded, polled wait."""

from __future__ import annotations

import os
import shutil
import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

import semsearch
from semsearch.collection import Collection
from semsearch.health import read_health
from semsearch.sources.vault import VAULT_SCHEMA, scan_folder
from semsearch.sources.watch import FolderWatcher
from tests.conftest import shared_path
from tests.watch.helpers import QuickFake, consistency_problems, copy_vault, eventually, write


class Live:
    """A watcher thread writing the index, and a second connection that searches it."""

    def __init__(self, root: Path, db_file: Path, exclude: tuple[str, ...] = ()) -> None:
        self.root, self.db_file = root, db_file
        self.writer_db = semsearch.connect(db_file)
        writer = self.writer_db.collection("notes", schema=VAULT_SCHEMA, embedder=QuickFake())
        self.watcher = FolderWatcher(writer, root, exclude=exclude, debounce_ms=50)
        assert self.watcher.start().wait(120), "the first sync did not finish"
        self.reader_db = semsearch.connect(db_file)
        self.coll: Collection = self.reader_db.collection(
            "notes", create=False, embedder=QuickFake()
        )

    def keyword_ids(self, query: str) -> list[str]:
        return self.coll.search(query, mode="keyword", limit=20).ids

    def semantic_hits(self, query: str) -> list[tuple[str, str]]:
        result = self.coll.search(query, mode="semantic", limit=5, min_score=0.3)
        return [(h.id, h.chunk.text if h.chunk else "") for h in result]

    def close(self) -> None:
        self.watcher.stop()
        self.reader_db.close()
        self.writer_db.close()


@pytest.fixture(scope="module")
def vault(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One writable copy for the module; each test edits its own files."""
    tmp = tmp_path_factory.mktemp("live")
    return copy_vault(shared_path("vault", "foam-docs"), tmp / "vault")


@pytest.fixture(scope="module")
def live(vault: Path) -> Iterator[Live]:
    handle = Live(vault, vault.parent / "live.embed.db", exclude=("drafts",))
    yield handle
    handle.close()


NEW = "# Quetzal pantry\n\nThe quetzalcoatl marmalade recipe needs bergamot zest.\n"
EDITED = "# Quetzal pantry\n\nThe xylophone tuning guide lists every mallet.\n"


def test_start_sync_indexes_the_whole_vault_fake_embedder(live: Live, vault: Path) -> None:
    on_disk = sorted(scan_folder(vault))
    assert len(on_disk) == 86  # foam-docs as shipped in ../shared/data
    assert live.coll.ids() == on_disk
    assert read_health(live.coll.store, "notes").state == "ok"


def test_create_modify_rename_delete_reach_search_fake_embedder(live: Live, vault: Path) -> None:
    write(vault, "inbox-pantry.md", NEW)
    eventually(lambda: "inbox-pantry.md" in live.keyword_ids("quetzalcoatl"), "created note")
    top = eventually(lambda: live.semantic_hits("quetzalcoatl marmalade bergamot"), "vectors")
    assert top[0][0] == "inbox-pantry.md" and "bergamot" in top[0][1]

    write(vault, "inbox-pantry.md", EDITED)
    eventually(lambda: "inbox-pantry.md" in live.keyword_ids("xylophone"), "modified note")
    assert live.keyword_ids("quetzalcoatl") == []
    assert all("quetzalcoatl" not in text for _, text in live.semantic_hits("quetzalcoatl"))
    eventually(
        lambda: (
            [i for i, _ in live.semantic_hits("xylophone tuning mallet")][:1] == ["inbox-pantry.md"]
        ),
        "modified note's vectors",
    )

    (vault / "archive").mkdir()
    os.rename(vault / "inbox-pantry.md", vault / "archive" / "pantry-moved.md")
    eventually(lambda: live.keyword_ids("xylophone") == ["archive/pantry-moved.md"], "renamed path")
    assert "inbox-pantry.md" not in live.coll.ids()
    eventually(lambda: live.semantic_hits("xylophone tuning mallet"), "renamed note's vectors")
    hit = live.coll.search("xylophone tuning mallet", limit=1).hits[0]
    assert (hit.id, hit.fields["path"], hit.fields["folder"]) == (
        "archive/pantry-moved.md",
        "archive/pantry-moved.md",
        "archive",
    )

    (vault / "archive" / "pantry-moved.md").unlink()
    eventually(lambda: live.keyword_ids("xylophone") == [], "deleted note gone (keyword)")
    assert all(i != "archive/pantry-moved.md" for i, _ in live.semantic_hits("xylophone mallet"))
    assert "archive/pantry-moved.md" not in live.coll.ids()


def test_folder_moved_out_and_back_in_fake_embedder(live: Live, vault: Path) -> None:
    under_dev = sorted(f"dev/{p}" for p in scan_folder(vault / "dev"))
    assert len(under_dev) > 5
    shutil.move(vault / "dev", vault.parent / "dev-outside")
    eventually(lambda: not any(i.startswith("dev/") for i in live.coll.ids()), "folder moved out")
    shutil.move(vault.parent / "dev-outside", vault / "dev")
    eventually(
        lambda: [i for i in live.coll.ids() if i.startswith("dev/")] == under_dev,
        "folder moved back in",
    )
    assert consistency_problems(live.db_file, live.coll) == []


def test_edits_inside_excluded_globs_are_ignored_fake_embedder(live: Live, vault: Path) -> None:
    write(vault, "drafts/secret.md", "# Draft\n\nThe wombat heist plan.\n")
    write(vault, ".hidden/notes.md", "# Hidden\n\nThe wombat vault key.\n")
    time.sleep(0.01)  # the sentinel is written after the ignored files
    write(vault, "sentinel.md", "# Sentinel\n\nA marker called ocelot.\n")
    eventually(lambda: live.keyword_ids("ocelot") == ["sentinel.md"], "sentinel indexed")
    assert live.keyword_ids("wombat") == []
    assert not any(i.startswith(("drafts/", ".hidden/")) for i in live.coll.ids())


def test_two_writes_10ms_apart_keep_the_second_fake_embedder(live: Live, vault: Path) -> None:
    first = "# Race\n\n" + "The first version mentions pelican. " * 40 + "\n"
    second = "# Race\n\nThe second version mentions flamingo only.\n"
    write(vault, "race.md", first)
    time.sleep(0.01)
    write(vault, "race.md", second)
    eventually(lambda: live.keyword_ids("flamingo") == ["race.md"], "second version indexed")
    eventually(lambda: live.keyword_ids("pelican") == [], "first version gone")
    [record] = live.coll.get("race.md")
    assert record.text == second.strip()
    expected = len(live.coll.chunk(record.text, record.fields))
    conn = sqlite3.connect(f"file:{live.db_file}?mode=ro", uri=True)
    n, distinct = conn.execute(
        "SELECT COUNT(*), COUNT(DISTINCT c.ordinal) FROM chunks c "
        "JOIN records r ON r.rowid = c.record_rowid WHERE r.id = 'race.md'"
    ).fetchone()
    conn.close()
    assert (n, distinct) == (expected, expected)
    assert expected == 1  # the short second version is one chunk
