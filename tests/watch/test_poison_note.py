"""A note whose text the model cannot embed (NaN, Inf or zero vector) fails alone in a sync:
the other notes are embedded, the health is ``degraded`` naming the note and why (not
``quarantined``: the embedder works), and the next sync retries only that note (issue 24).
Plumbing tests with the deterministic fake embedder and a real SQLite file."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

import semsearch
from semsearch.embedders.base import EmbedKind
from semsearch.sources.vault import VAULT_SCHEMA
from semsearch.sources.watch import FolderWatcher, sync_folder
from tests.watch.helpers import QuickFake, write


class PoisonFake(QuickFake):
    """The quick fake embedder, with NaN for any text containing "poison" while ``poison_on``."""

    def __init__(self) -> None:
        super().__init__()
        self.poison_on = True

    def _embed_batch(self, texts: list[str], kind: EmbedKind) -> np.ndarray:
        out = np.asarray(super()._embed_batch(texts, kind), dtype=np.float64)
        for i, text in enumerate(texts):
            if self.poison_on and "poison" in text:
                out[i] = np.nan
        return out


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    root = tmp_path / "vault"
    for i in range(20):
        extra = " poison" if i == 7 else ""
        write(root, f"n{i:02d}.md", f"# Note {i}\n\nGardens and topic {i % 4}.{extra}\n")
    return root


@pytest.fixture
def db(tmp_path: Path) -> Iterator[semsearch.Database]:
    with semsearch.connect(tmp_path / "v.embed.db") as database:
        yield database


def test_poison_note_degrades_and_is_named_fake_embedder(
    db: semsearch.Database, vault: Path
) -> None:
    emb = PoisonFake()
    coll = db.collection("notes", schema=VAULT_SCHEMA, embedder=emb)
    report, health = sync_folder(coll, vault)
    assert report.errors == [] and [rel for rel, _ in report.failed] == ["n07.md"]
    assert health.state == "degraded" and health.failed == ("n07.md",)
    assert "n07.md" in (health.reason or "") and "NaN" in (health.reason or "")
    stats = coll.stats()
    assert stats.records == 20 and stats.failed == 1 and stats.pending == 0
    assert stats.embedded == stats.chunks - 1  # every other note embedded
    assert coll.search("gardens topic 3", limit=20, min_score=None).ids  # semantic works
    # the next sync retries only the failed note, which fails again: still degraded
    before = emb.texts_embedded
    _, again = sync_folder(coll, vault)
    assert emb.texts_embedded - before == 1 and again.state == "degraded"
    # once the model can embed it, a sync embeds it and the index is ok
    emb.poison_on = False
    _, healed = sync_folder(coll, vault)
    assert healed.state == "ok" and coll.stats().failed == 0


def test_watcher_names_a_poison_note_fake_embedder(db: semsearch.Database, vault: Path) -> None:
    emb = PoisonFake()
    coll = db.collection("notes", schema=VAULT_SCHEMA, embedder=emb)
    emb.poison_on = False
    sync_folder(coll, vault)
    emb.poison_on = True
    write(vault, "n03.md", "# Note 3\n\nNow with poison.\n")
    watcher = FolderWatcher(coll, vault)
    report = watcher.apply(["n03.md"])
    assert [rel for rel, _ in report.failed] == ["n03.md"]
    health = coll.stats().health or {}
    assert health["state"] == "degraded" and health["failed"] == ["n03.md"]
