"""Index health across syncs: quarantine when the embedder fails mid-batch or the store raises,
IndexUnhealthy for semantic and hybrid search, keyword search still answering (marked
degraded), degraded with failed files listed, and repair by the next successful sync.
Plumbing tests with the deterministic fake embedder and a real SQLite file."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

import semsearch
from semsearch.collection import Collection
from semsearch.embedders.base import EmbedKind
from semsearch.errors import EmbedderUnavailable, IndexUnhealthy, SemsearchError
from semsearch.health import read_health
from semsearch.server.mcp.service import McpConfig, McpService
from semsearch.sources.vault import VAULT_SCHEMA, scan_folder
from semsearch.sources.watch import FolderWatcher, sync_folder
from tests.conftest import shared_path
from tests.watch.helpers import QuickFake, consistency_problems, copy_vault, write


class FailsFromThirdBatch(QuickFake):
    """The fake embedder, except that its third batch and every later one fail until
    ``recover()``: an embedder outage that starts mid-sync. A batch is one call with up to
    256 texts, the group Collection embeds at a time."""

    def __init__(self) -> None:
        super().__init__()
        self.batch_size = 256
        self.batches = 0
        self.broken = True

    def _embed_batch(self, texts: list[str], kind: EmbedKind) -> np.ndarray:
        self.batches += 1
        if self.broken and self.batches >= 3:
            raise EmbedderUnavailable("the embedding service went away", hint="retry later")
        return super()._embed_batch(texts, kind)

    def recover(self) -> None:
        self.broken = False


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    return copy_vault(shared_path("vault", "foam-docs"), tmp_path / "vault")


@pytest.fixture
def db(tmp_path: Path) -> Iterator[semsearch.Database]:
    database = semsearch.connect(tmp_path / "h.embed.db")
    yield database
    database.close()


def test_embedder_failing_on_third_batch_quarantines_then_sync_repairs_fake_embedder(
    db: semsearch.Database, vault: Path, tmp_path: Path
) -> None:
    embedder = FailsFromThirdBatch()
    coll = db.collection("notes", schema=VAULT_SCHEMA, embedder=embedder)
    report, health = sync_folder(coll, vault)
    assert embedder.batches >= 3  # the failure struck mid-sync, after two good batches
    assert report.chunks_embedded > 0 and report.chunks_failed > 0
    stats = coll.stats()  # the report counts as the store does (issue 46, item 19)
    assert (report.chunks_pending, report.chunks_failed) == (stats.pending, stats.failed)
    assert health.state == "quarantined"
    assert "the embedding service went away" in (health.reason or "")

    with pytest.raises(IndexUnhealthy) as raised:
        coll.search("wikilinks between notes", mode="semantic")
    assert "semsearch index" in (raised.value.hint or "")
    with pytest.raises(IndexUnhealthy):
        coll.search("wikilinks between notes", mode="hybrid")
    keyword = coll.search("wikilinks", mode="keyword")
    assert len(keyword) > 0 and keyword.degraded
    assert "quarantined" in (keyword.degraded_reason or "")
    fallback = coll.search("wikilinks", mode="semantic", fallback="keyword")
    assert (fallback.mode, fallback.degraded) == ("keyword", True)
    assert fallback.ids == keyword.ids
    stats = coll.stats()
    assert stats.health is not None and stats.health["state"] == "quarantined"
    assert stats.pending + stats.failed > 0

    embedder.recover()
    report, health = sync_folder(coll, vault)
    assert health.state == "ok" and health.reason is None
    assert report.new == report.changed == 0  # nothing on disk changed: the repair embedded
    stats = coll.stats()
    assert (stats.pending, stats.failed, stats.embedded) == (0, 0, stats.chunks)
    assert coll.search("wikilinks between notes", mode="semantic").hits
    assert not coll.search("wikilinks", mode="keyword").degraded
    assert consistency_problems(tmp_path / "h.embed.db", coll) == []


def test_store_raising_mid_sync_quarantines_fake_embedder(
    db: semsearch.Database, vault: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    coll = db.collection("notes", schema=VAULT_SCHEMA, embedder=QuickFake())
    real = coll.store.write_records
    calls = {"n": 0}

    def write_records(collection: str, records: list) -> object:  # type: ignore[type-arg]
        calls["n"] += 1
        if calls["n"] == 2:
            raise sqlite3.OperationalError("disk I/O error")
        return real(collection, records)

    monkeypatch.setattr(coll.store, "write_records", write_records)
    with pytest.raises(sqlite3.OperationalError):
        sync_folder(coll, vault)
    health = read_health(coll.store, "notes")
    assert health.state == "quarantined" and "disk I/O error" in (health.reason or "")
    with pytest.raises(IndexUnhealthy):
        coll.search("wikilinks", mode="semantic")

    monkeypatch.setattr(coll.store, "write_records", real)
    _, health = sync_folder(coll, vault)
    assert health.state == "ok"
    assert coll.ids() == sorted(scan_folder(vault))
    assert coll.search("wikilinks between notes", mode="semantic").hits


def test_ctrl_c_mid_sync_says_so_in_the_health_fake_embedder(
    db: semsearch.Database, vault: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The reason read "the sync failed: KeyboardInterrupt: " (the exception has no text)."""
    coll = db.collection("notes", schema=VAULT_SCHEMA, embedder=QuickFake())

    def interrupted(collection: str, records: list) -> object:  # type: ignore[type-arg]
        raise KeyboardInterrupt

    monkeypatch.setattr(coll.store, "write_records", interrupted)
    with pytest.raises(KeyboardInterrupt):
        sync_folder(coll, vault)
    health = read_health(coll.store, "notes")
    assert health.state == "quarantined"
    assert "interrupted (Ctrl-C)" in (health.reason or "") and "next sync" in (health.reason or "")


def test_unreadable_note_degrades_and_is_listed_fake_embedder(
    db: semsearch.Database, vault: Path
) -> None:
    coll = db.collection("notes", schema=VAULT_SCHEMA, embedder=QuickFake())
    write(vault, "inbox/broken.md", b"# Broken\n\n\xff\xfe not utf-8\n")
    _, health = sync_folder(coll, vault)
    assert health.state == "degraded"
    assert health.failed == ("inbox/broken.md",) and health.failed_count == 1
    assert coll.search("wikilinks between notes", mode="semantic").hits  # still usable
    assert not coll.search("wikilinks", mode="keyword").degraded

    write(vault, "inbox/broken.md", "# Broken\n\nNow it is fine.\n")
    _, health = sync_folder(coll, vault)
    assert (health.state, health.failed) == ("ok", ())


def test_watcher_batch_after_outage_returns_index_to_ok_fake_embedder(
    db: semsearch.Database, vault: Path
) -> None:
    embedder = FailsFromThirdBatch()
    coll = db.collection("notes", schema=VAULT_SCHEMA, embedder=embedder)
    watcher = FolderWatcher(coll, vault)
    watcher.sync()
    assert read_health(coll.store, "notes").state == "quarantined"
    embedder.recover()
    write(vault, "inbox/after.md", "# After\n\nThe outage is over.\n")
    watcher.apply(["inbox/after.md"])  # one batch, as the event loop would apply it
    assert read_health(coll.store, "notes").state == "ok"
    assert coll.stats().pending == 0
    assert "inbox/after.md" in coll.search("outage", mode="keyword").ids


def test_a_note_turned_unreadable_leaves_the_index_as_a_full_sync_would_fake_embedder(
    db: semsearch.Database, vault: Path, tmp_path: Path
) -> None:
    """The watcher kept the note's old text searchable while a full sync removed it: the two
    disagreed about the same folder. Both now drop it and list it as failed."""
    coll = db.collection("notes", schema=VAULT_SCHEMA, embedder=QuickFake())
    write(vault, "inbox/stale.md", "# Stale\n\nhello staletok\n")
    watcher = FolderWatcher(coll, vault)
    watcher.sync()
    assert "inbox/stale.md" in coll.search("staletok", mode="keyword").ids
    write(vault, "inbox/stale.md", b"x \xff y")
    report = watcher.apply(["inbox/stale.md"])
    assert report.removed == 1 and coll.search("staletok", mode="keyword").ids == []
    health = read_health(coll.store, "notes")
    assert health.state == "degraded" and health.failed == ("inbox/stale.md",)
    watched = sorted(coll.ids())
    other = semsearch.connect(tmp_path / "full.embed.db")
    full = other.collection("notes", schema=VAULT_SCHEMA, embedder=QuickFake())
    sync_folder(full, vault)
    assert sorted(full.ids()) == watched
    other.close()


def test_health_is_read_by_another_connection(db: semsearch.Database, vault: Path) -> None:
    """The state lives in the index file, not in the process that wrote it."""
    embedder = FailsFromThirdBatch()
    coll: Collection = db.collection("notes", schema=VAULT_SCHEMA, embedder=embedder)
    sync_folder(coll, vault)
    with semsearch.connect(db.store.location) as other:
        seen = other.collection("notes", create=False, embedder=QuickFake())
        assert seen.stats().health["state"] == "quarantined"  # type: ignore[index]
        with pytest.raises(IndexUnhealthy):
            seen.search("notes", mode="semantic")
    service = McpService(McpConfig(location=db.store.location, model="fake:256"))
    try:
        [row] = service.stats()["collections"]
    finally:
        service.close()
    assert row["index_health"]["state"] == "quarantined"
    assert row["semantic"]["usable"] is False
    assert "quarantined" in row["semantic"]["reason"]


def test_http_answers_503_for_semantic_while_quarantined_fake_embedder(
    db: semsearch.Database, vault: Path
) -> None:
    from fastapi.testclient import TestClient

    from semsearch.server.http.app import create_app
    from semsearch.server.http.state import ServerState

    sync_folder(db.collection("notes", schema=VAULT_SCHEMA, embedder=FailsFromThirdBatch()), vault)
    state = ServerState(db, embedder=QuickFake())
    try:
        with TestClient(create_app(state), base_url="http://127.0.0.1") as client:
            semantic = client.post(
                "/collections/notes/search", json={"query": "wikilinks", "mode": "semantic"}
            )
            assert semantic.status_code == 503 and "quarantined" in semantic.text
            keyword = client.post(
                "/collections/notes/search", json={"query": "wikilinks", "mode": "keyword"}
            )
            assert keyword.status_code == 200 and keyword.json()["degraded"] is True
            health = client.get("/health").json()
            assert health["status"] == "ok"  # liveness
            assert health["index_health"]["notes"]["state"] == "quarantined"
    finally:
        state.worker.stop()


def test_a_non_note_file_event_writes_nothing_fake_embedder(
    db: semsearch.Database, vault: Path
) -> None:
    coll = db.collection("notes", schema=VAULT_SCHEMA, embedder=QuickFake())
    watcher = FolderWatcher(coll, vault)
    watcher.sync()
    version = db.store.collection_version("notes")  # type: ignore[attr-defined]
    write(vault, "attachments/diagram.png", b"\x89PNG not a note")
    report = watcher.apply(["attachments/diagram.png", "attachments"])
    assert (report.new, report.removed) == (0, 0)
    assert db.store.collection_version("notes") == version  # type: ignore[attr-defined]


def test_failed_paths_respect_each_face_privacy_fake_embedder(
    db: semsearch.Database, vault: Path
) -> None:
    """MCP stats hides failed paths outside its scope; the key-less /health lists none."""
    from fastapi.testclient import TestClient

    from semsearch.server.http.app import create_app
    from semsearch.server.http.state import ServerState

    coll = db.collection("notes", schema=VAULT_SCHEMA, embedder=QuickFake())
    write(vault, "private/diary.md", b"\xff\xfe secret")
    write(vault, "inbox/broken.md", b"\xff\xfe broken")
    _, health = sync_folder(coll, vault)
    assert health.failed == ("inbox/broken.md", "private/diary.md")

    service = McpService(McpConfig(db.store.location, exclude=("private",), model="fake:256"))
    try:
        [row] = service.stats()["collections"]
    finally:
        service.close()
    assert row["index_health"]["state"] == "degraded"
    assert row["index_health"]["failed"] == ["inbox/broken.md"]

    state = ServerState(db, embedder=QuickFake())
    try:
        with TestClient(create_app(state), base_url="http://127.0.0.1") as client:
            public = client.get("/health").json()["index_health"]["notes"]
    finally:
        state.worker.stop()
    assert (public["state"], public["failed"], public["failed_count"]) == ("degraded", [], 2)


def test_a_wrong_folder_raises_without_touching_the_health(
    db: semsearch.Database, tmp_path: Path
) -> None:
    coll = db.collection("notes", schema=VAULT_SCHEMA, embedder=QuickFake())
    with pytest.raises(SemsearchError, match="is not a folder"):
        sync_folder(coll, tmp_path / "missing")
    assert read_health(db.store, "notes").state == "ok"


def test_sync_folder_expands_a_home_relative_path_fake_embedder(
    db: semsearch.Database, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    write(tmp_path / "notes", "a.md", "# A\n\nthe lighthouse key is under the blue pot\n")
    coll = db.collection("notes", schema=VAULT_SCHEMA, embedder=QuickFake())
    report, health = sync_folder(coll, "~/notes")
    assert (report.new, health.state) == (1, "ok")
    assert coll.get("a.md") is not None
