"""A watcher process for test_crash.py: ``python watch_child.py ROOT INDEX DELAY_S``.

Runs a real FolderWatcher (full sync, then events) with the memoised fake embedder, slowed
by DELAY_S per batch of 16 texts so a test can kill it mid-sync. Writes go in transactions of
8 files (vault.FILES_PER_BATCH) so a kill lands between committed batches.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import numpy as np

import semsearch
from semsearch.embedders.base import EmbedKind
from semsearch.sources import vault
from semsearch.sources.watch import FolderWatcher
from tests.watch.helpers import QuickFake


class SlowFake(QuickFake):
    """The memoised fake embedder, sleeping ``delay`` seconds per batch of 16 texts."""

    def __init__(self, delay: float) -> None:
        super().__init__()
        self.batch_size = 16
        self.delay = delay

    def _embed_batch(self, texts: list[str], kind: EmbedKind) -> np.ndarray:
        time.sleep(self.delay)
        return super()._embed_batch(texts, kind)


def main() -> None:
    root, index, delay = sys.argv[1], sys.argv[2], float(sys.argv[3])
    vault.FILES_PER_BATCH = 8
    db = semsearch.connect(index)
    coll = db.collection("notes", schema=vault.VAULT_SCHEMA, embedder=SlowFake(delay))
    watcher = FolderWatcher(coll, root, echo=lambda line: print(line, flush=True))
    watcher.run()


if __name__ == "__main__":
    main()
