"""Helpers shared by the Milvus store tests: one-chunk records and a store of 8-d fake vectors."""

from __future__ import annotations

import hashlib
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from semsearch.results import Chunk
from semsearch.schema import Schema
from semsearch.stores.base import ChunkWrite, CollectionInfo, RecordWrite
from semsearch.stores.milvus.store import MilvusStore


def one_chunk_record(rid: str, text: str) -> RecordWrite:
    """A record of no fields whose text is one chunk; record and chunk hash = sha256(text)."""
    digest = hashlib.sha256(text.encode()).hexdigest()
    chunk = ChunkWrite(Chunk(text, 0, 0, len(text)), text, digest)
    return RecordWrite(rid, {}, {}, text, digest, [chunk])


@contextmanager
def fake8_store(folder: Path, name: str) -> Iterator[MilvusStore]:
    """A Milvus Lite store in ``folder`` with collection ``name`` (no fields, 8-d, model
    ``fake:8``), closed afterwards."""
    store = MilvusStore(f"milvus-lite://{folder / f'{name}.db'}")
    store.create_collection(CollectionInfo(name, Schema.from_types({}).to_json(), "fake:8", 8))
    try:
        yield store
    finally:
        store.close()


ROOT = Path(__file__).resolve().parents[2]

#: A write that migrates a collection, in its own process, SIGKILLed at ``where``: ``copy``
#: after the first page of the copy (before the commit point), ``drop`` when the old part
#: named ``*<suffix>`` is dropped (after it). argv: location, root, where, suffix, collection,
#: record id, text.
_KILLER = """
import os, signal, sys
sys.path.insert(0, sys.argv[2])
from semsearch.stores.milvus import migrate
from semsearch.stores.milvus.store import MilvusStore
from tests.milvus.helpers import one_chunk_record

where, suffix, name, rid, text = sys.argv[3:8]
if where == "copy":
    migrate._PAGE = 2
    real = migrate._write_page
    seen = []
    def page(*a, **k):
        real(*a, **k)
        seen.append(1)
        if len(seen) == 1:
            os.kill(os.getpid(), signal.SIGKILL)
    migrate._write_page = page
else:
    real_drop = migrate._drop
    def drop(store, names):
        if any(n.endswith(suffix) for n in names):
            os.kill(os.getpid(), signal.SIGKILL)
        real_drop(store, names)
    migrate._drop = drop
store = MilvusStore(sys.argv[1])
store.write_records(name, [one_chunk_record(rid, text)])
print("not killed")
"""


def killed_migration(
    location: str, where: str, suffix: str, collection: str, rid: str, text: str
) -> None:
    """Run, in a process of its own, a write of record ``rid`` that migrates ``collection``,
    and SIGKILL it at ``where`` (see ``_KILLER``); assert it died of the signal."""
    args = [location, str(ROOT), where, suffix, collection, rid, text]
    done = subprocess.run(
        [sys.executable, "-c", _KILLER, *args],
        capture_output=True, text=True, timeout=300, cwd=ROOT,
    )  # fmt: skip
    assert done.returncode == -signal.SIGKILL, done.stdout + done.stderr[-2000:]
