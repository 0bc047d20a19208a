"""After ``await db.close()`` every async verb raises BackendUnavailable ("this database is
closed"), as the sync API does, not the thread pool's RuntimeError. Real SQLite file, fake
embedder (nothing here is about meaning)."""

from __future__ import annotations

import inspect
from pathlib import Path
from typing import Any

import pytest

import semsearch
from semsearch.aio import AsyncCollection, AsyncConversationMemory, AsyncDatabase
from semsearch.embedders.fake import FakeEmbedder
from semsearch.errors import BackendUnavailable

pytestmark = pytest.mark.asyncio


def _async_verbs(cls: type) -> list[str]:
    """Names of the public coroutine methods of ``cls``."""
    return [
        n for n, f in vars(cls).items() if not n.startswith("_") and inspect.iscoroutinefunction(f)
    ]


async def _assert_closed(obj: Any, name: str) -> None:
    # the call is refused before it reaches the sync method: any value fills required arguments
    method = getattr(obj, name)
    params = inspect.signature(method).parameters.values()
    required = [p for p in params if p.default is p.empty and p.kind is p.POSITIONAL_OR_KEYWORD]
    with pytest.raises(BackendUnavailable) as info:
        await method(*["x"] * len(required))
    assert info.value.message == "this database is closed", name
    assert "semsearch.connect" in (info.value.hint or "")


async def test_every_async_verb_after_close_raises_backend_unavailable_fake(tmp_path: Path) -> None:
    db = await semsearch.aconnect(tmp_path / "a.embed.db")
    coll = await db.collection("notes", embedder=FakeEmbedder(8))
    await coll.upsert([{"id": "a", "text": "kept"}])
    memory = await db.memory(embedder=FakeEmbedder(8), background=False)
    await db.close()
    await db.close()  # closing twice is harmless, as Database.close
    verbs = {
        coll: _async_verbs(AsyncCollection),
        memory: _async_verbs(AsyncConversationMemory),
        db: [n for n in _async_verbs(AsyncDatabase) if n != "close"],
    }
    assert "count" in verbs[coll] and "search" in verbs[memory] and "collection" in verbs[db]
    for obj, names in verbs.items():
        for name in names:
            await _assert_closed(obj, name)
    with semsearch.connect(tmp_path / "a.embed.db") as again:  # the stored data is intact
        assert again.collection("notes", embedder=FakeEmbedder(8)).count() == 1
