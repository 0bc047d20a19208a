"""Every store keeps the folder a collection was synced from, so a sync of another folder is
refused on every store, also from a new connection (plumbing with the fake embedder)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from semsearch.errors import FolderMismatch
from semsearch.sources.folder_guard import indexed_folder
from semsearch.sources.vault import VAULT_SCHEMA, index_folder
from tests.contract.conftest import StoreUnderTest


def test_plumbing_fake_embedder_folder_is_kept_and_guarded_on_every_store(
    store: StoreUnderTest, tmp_path: Path
) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    for root, rel in ((a, "README.md"), (a, "otters.md"), (b, "README.md"), (b, "seals.md")):
        root.mkdir(exist_ok=True)
        (root / rel).write_text(f"# {rel}\n\nNotes of {root.name}.\n", encoding="utf-8")
    with store.connect() as db:
        index_folder(db.collection("notes", schema=VAULT_SCHEMA, embedder="fake:32"), a)
    with store.connect() as db:
        coll = db.collection("notes", embedder="fake:32")
        assert indexed_folder(coll) == os.path.realpath(a)
        texts = {r.id: r.text for r in coll.get(coll.ids())}
        with pytest.raises(FolderMismatch, match="would remove 1 of its 2 records"):
            index_folder(coll, b)
        assert {r.id: r.text for r in coll.get(coll.ids())} == texts
        assert index_folder(coll, b, new_folder=True).removed == 1
        assert indexed_folder(coll) == os.path.realpath(b)
