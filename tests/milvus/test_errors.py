"""Milvus errors reach users as SemsearchErrors with hints, never as raw pymilvus exceptions."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import semsearch
from semsearch.embedders.fake import FakeEmbedder
from semsearch.errors import BackendUnavailable, NotAnIndex, StoreCorrupted
from semsearch.stores.milvus.store import MilvusStore


def test_a_file_where_the_folder_should_be_is_refused_untouched(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    path.write_bytes(b"SQLite format 3\x00 pretend milvus-lite 2 file")
    before = path.read_bytes()
    with pytest.raises(StoreCorrupted) as err:
        semsearch.connect(f"milvus-lite://{path}")
    assert err.value.hint and "untouched" in err.value.hint
    assert str(tmp_path) not in err.value.message
    assert path.read_bytes() == before


def test_a_store_in_a_missing_folder_says_the_folder_is_missing(tmp_path: Path) -> None:
    db = semsearch.connect(f"milvus-lite://{tmp_path / 'no' / 'such' / 'm.db'}")
    with pytest.raises(BackendUnavailable) as err:  # the store opens on first use
        db.collection("notes", embedder=FakeEmbedder(8))
    assert "folder does not exist" in err.value.message
    assert err.value.hint and "backup" not in err.value.hint
    assert not (tmp_path / "no").exists()


def test_a_foreign_folder_is_not_an_index(tmp_path: Path) -> None:
    folder = tmp_path / "photos.db"
    folder.mkdir()
    (folder / "cat.jpg").write_bytes(b"\xff\xd8")
    with pytest.raises(NotAnIndex):
        semsearch.connect(f"milvus-lite://{folder}")
    assert sorted(p.name for p in folder.iterdir()) == ["cat.jpg"]


def hold(location: str) -> subprocess.Popen[str]:
    """Another process that opens the Milvus Lite store (taking its lock) and keeps it open until
    a line arrives on its stdin."""
    holder = textwrap.dedent(f"""
        import sys, semsearch
        db = semsearch.connect({location!r})
        db.collection("notes", embedder="fake:8").upsert([{{"id": "a", "text": "x"}}])
        print("ready", flush=True)
        sys.stdin.readline()
        db.close()
    """)
    proc = subprocess.Popen(
        [sys.executable, "-c", holder], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
    return proc


def release(proc: subprocess.Popen[str]) -> None:
    assert proc.stdin is not None
    proc.stdin.write("\n")
    proc.stdin.flush()
    proc.wait(timeout=60)


def test_a_store_open_in_another_process_is_reported_with_a_hint(tmp_path: Path) -> None:
    location = f"milvus-lite://{tmp_path / 'busy.db'}"
    proc = hold(location)
    try:
        with pytest.raises(BackendUnavailable) as err:
            semsearch.connect(location)
        assert "another process" in err.value.message
        assert err.value.hint and "server" in err.value.hint
    finally:
        release(proc)
    with semsearch.connect(location) as db:  # the lock is free again once the holder exits
        assert db.collection("notes").count() == 1


def test_the_cli_on_a_locked_store_prints_its_error_and_no_traceback(tmp_path: Path) -> None:
    """Issue 46, item 18: Milvus Lite logged a 20-line traceback of its lock error (through
    logging's last-resort handler) before the CLI's own two lines."""
    location = f"milvus-lite://{tmp_path / 'busy.db'}"
    proc = hold(location)
    try:
        cli = subprocess.run(
            [sys.executable, "-m", "semsearch.cli.app", "search", "x", "--mode", "keyword",
             "--index", location],
            capture_output=True, text=True, timeout=120,
            env={**os.environ, "SEMSEARCH_MODEL": "fake:8"},
        )  # fmt: skip
    finally:
        release(proc)
    assert cli.returncode == 6, cli.stderr  # backend unavailable (docs/cli.md)
    assert "Traceback" not in cli.stderr and "DataDirLockedError" not in cli.stderr
    lines = cli.stderr.strip().splitlines()
    assert lines[0] == "error: the Milvus Lite store busy.db is open in another process"
    assert len(lines) == 2 and lines[1].startswith("hint: Milvus Lite allows one process")


def test_an_unreachable_server_is_backend_unavailable() -> None:
    with pytest.raises(BackendUnavailable) as err:
        semsearch.connect("http://user:secret@127.0.0.1:9/?db=x")
    assert "secret" not in str(err.value)


def test_collections_changed_behind_our_back_raise_store_corrupted(lite_location: str) -> None:
    with semsearch.connect(lite_location) as db:
        db.collection("notes", embedder=FakeEmbedder(8)).upsert([{"id": "a", "text": "x"}])
        store = db.store
        assert isinstance(store, MilvusStore)
        client = store.client()
        client.drop_collection(store.part_name("notes", "chunks") or "")  # layout 3: the only part
        with pytest.raises(StoreCorrupted):
            db.collection("notes").count()


@pytest.mark.parametrize("location", ["milvus-lite://", "http://localhost:19530/?index=DISKANN"])
def test_bad_locations_are_refused(location: str) -> None:
    with pytest.raises(BackendUnavailable):
        semsearch.connect(location)


def test_trigram_keyword_tokenizer_is_refused_clearly(mdb: semsearch.Database) -> None:
    from semsearch.errors import InvalidQuery

    with pytest.raises(InvalidQuery) as err:
        mdb.collection("notes", embedder=FakeEmbedder(8), keyword_tokenizer="trigram")
    assert err.value.hint and "porter" in err.value.hint
    assert mdb.collections() == []


def test_a_list_field_longer_than_milvus_holds_is_invalid_record_fake_embedder(
    mdb: semsearch.Database,
) -> None:
    """Milvus' ARRAY column holds 4,096 items (docs/milvus.md). Before, 4,097 raised
    StoreCorrupted with a "re-index" hint, as if the collections had been damaged."""
    schema = semsearch.Schema.from_types({"tags": "list[str]"})
    coll = mdb.collection("tagged", schema=schema, embedder="fake:16")
    coll.upsert([{"id": "kept", "text": "old text", "tags": ["a"]}])
    full = [f"t{i}" for i in range(4096)]
    coll.upsert([{"id": "full", "text": "x", "tags": full}])  # exactly the capacity: stored
    batch = [{"id": "kept", "text": "new text"}, {"id": "k", "text": "x", "tags": [*full, "one"]}]
    with pytest.raises(semsearch.InvalidRecord) as info:
        coll.upsert(batch)
    assert "'tags'" in info.value.message and "4097 items" in info.value.message
    assert "4096" in info.value.message and "nothing was written" in str(info.value.hint)
    assert [r.text for r in coll.get(["kept"])] == ["old text"]
    assert len(coll.get(["full"])[0].fields["tags"]) == 4096
