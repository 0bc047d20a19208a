"""Shared helpers for the contract suite."""

from __future__ import annotations

import semsearch
from semsearch.collection import Collection
from semsearch.embedders.fake import FakeEmbedder
from tests.contract.spells import RECORDS, SCHEMA


def spells(database: semsearch.Database, embedder: FakeEmbedder | None = None) -> Collection:
    """The spells collection on ``database`` with the fake embedder, filled with RECORDS."""
    coll = database.collection("spells", schema=SCHEMA, embedder=embedder or FakeEmbedder(32))
    coll.upsert(RECORDS)
    return coll
