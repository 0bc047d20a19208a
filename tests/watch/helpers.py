"""Helpers for the live-folder tests: a bounded poll, a temp vault copy, index consistency."""

from __future__ import annotations

import json
import shutil
import sqlite3
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import numpy as np

from semsearch.collection import Collection
from semsearch.embedders.fake import FakeEmbedder

T = TypeVar("T")


class QuickFake(FakeEmbedder):
    """The fake embedder (model id ``fake:<dim>``, same vectors) with its word vectors
    memoised, so syncing a whole vault stays quick on a loaded machine. Plumbing only."""

    def __init__(self, dim: int = 256, max_tokens: int = 256) -> None:
        super().__init__(dim, max_tokens)
        self._memo: dict[str, np.ndarray] = {}

    def _word_vector(self, word: str) -> np.ndarray:
        vector = self._memo.get(word)
        if vector is None:
            vector = self._memo[word] = super()._word_vector(word)
        return vector


#: Upper bound of every wait for the watcher (seconds); polls end as soon as the check holds.
DEADLINE_S = 60.0


def eventually(check: Callable[[], T], what: str, deadline_s: float = DEADLINE_S) -> T:
    """Poll ``check`` until it returns a truthy value; fail after ``deadline_s`` seconds."""
    end = time.monotonic() + deadline_s
    last: T = check()
    while not last:
        if time.monotonic() > end:
            raise AssertionError(f"not within {deadline_s:.0f} s: {what} (last: {last!r})")
        time.sleep(0.05)
        last = check()
    return last


def copy_vault(source: Path, dest: Path) -> Path:
    """A writable copy of a real vault."""
    shutil.copytree(source, dest)
    return dest


def write(root: Path, rel: str, text: str | bytes) -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


def consistency_problems(db_file: Path, coll: Collection) -> list[str]:
    """Read the SQLite file directly (sqlite3, read-only) and list every inconsistency:
    chunk rows without a record (orphan vectors), duplicate ordinals, and records whose
    stored chunk count differs from re-chunking their stored text with ``coll.chunk``."""
    conn = sqlite3.connect(f"file:{db_file}?mode=ro", uri=True)
    try:
        problems = [
            f"orphan chunk {cid}"
            for (cid,) in conn.execute(
                "SELECT c.id FROM chunks c LEFT JOIN records r ON r.rowid = c.record_rowid "
                "WHERE r.rowid IS NULL"
            )
        ]
        rows = conn.execute(
            "SELECT r.id, r.text, r.fields, COUNT(c.id), COUNT(DISTINCT c.ordinal) "
            "FROM records r LEFT JOIN chunks c ON c.record_rowid = r.rowid GROUP BY r.rowid"
        ).fetchall()
    finally:
        conn.close()
    for rid, text, fields, n, distinct in rows:
        expected = len(coll.chunk(text, json.loads(fields)))
        if n != expected or distinct != n:
            problems.append(f"{rid}: {n} chunks ({distinct} ordinals), text gives {expected}")
    return problems
