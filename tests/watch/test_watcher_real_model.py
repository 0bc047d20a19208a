"""The watcher with the real model (all-MiniLM-L6-v2): a note written while the watcher runs is
found by meaning, by a question that shares no word with it, and a rewrite moves the answer."""

from __future__ import annotations

from pathlib import Path

import pytest

import semsearch
from semsearch.sources.vault import VAULT_SCHEMA
from semsearch.sources.watch import FolderWatcher
from tests.conftest import shared_path
from tests.watch.helpers import copy_vault, eventually, write

pytestmark = pytest.mark.slow

GREENHOUSE = (
    "# Greenhouse\n\nTomatoes and peppers ripen under glass in early spring; "
    "keep the beds warm and water them every morning.\n"
)
QUESTION = "how do I cultivate vegetables indoors"


def test_new_note_found_by_meaning_while_watching_real_model(minilm, tmp_path: Path) -> None:
    vault = copy_vault(shared_path("vault", "foam-docs", "dev"), tmp_path / "vault")
    with semsearch.connect(tmp_path / "real.embed.db") as db:
        coll = db.collection("notes", schema=VAULT_SCHEMA, embedder=minilm)
        watcher = FolderWatcher(coll, vault, debounce_ms=50)
        assert watcher.start().wait(120)
        try:
            before = coll.search(QUESTION, limit=1, min_score=None).hits[0]
            assert before.id != "greenhouse.md"
            write(vault, "greenhouse.md", GREENHOUSE)
            top = eventually(
                lambda: (
                    coll.search(QUESTION, limit=1).ids == ["greenhouse.md"]
                    and coll.search(QUESTION, limit=1).hits[0]
                ),
                "the new note to answer by meaning",
            )
            assert top.score > before.score  # cosine similarity in [-1, 1]
            write(vault, "greenhouse.md", "# Billing\n\nInvoices are due in thirty days.\n")
            eventually(
                lambda: coll.search(QUESTION, limit=1, min_score=None).ids != ["greenhouse.md"],
                "the rewritten note to stop answering",
            )
        finally:
            watcher.stop()
