"""Atomic collection swap on PostgreSQL (CollectionSwap), as used by ``semsearch reembed``."""

from __future__ import annotations

import re

import semsearch
from semsearch.embedders.fake import FakeEmbedder
from semsearch.reembed import reembed
from semsearch.stores.base import CollectionSwap
from tests.contract.helpers import spells


def _tables(raw) -> list[str]:
    """The per-collection tables (semsearch_c<id>_...) in the test's schema."""
    rows = raw(
        "SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema() "
        "ORDER BY table_name"
    )
    return [r[0] for r in rows if re.fullmatch(r"semsearch_c\d+_\w+", r[0])]


def test_replace_collection_swaps_in_one_step_and_checks_the_version(pg_location, raw) -> None:
    with semsearch.connect(pg_location) as db:
        store = db.store
        assert isinstance(store, CollectionSwap)
        spells(db)
        other = db.collection("shadow", embedder=FakeEmbedder(32))
        other.upsert([{"id": "only", "text": "the replacement"}])
        version = store.collection_version("spells")
        assert store.collection_version("missing") is None
        db.collection("spells").upsert([{"id": "late", "text": "written meanwhile"}])
        assert store.replace_collection("spells", "shadow", expected_version=version) is False
        assert db.collections() == ["shadow", "spells"]
        assert store.replace_collection("spells", "shadow") is True
        assert db.collections() == ["spells"]
        assert db.collection("spells").ids() == ["only"]
    assert _tables(raw) == [
        "semsearch_c2_chunks", "semsearch_c2_kw_df", "semsearch_c2_kw_docs",
        "semsearch_c2_kw_stats", "semsearch_c2_kw_terms", "semsearch_c2_records",
    ]  # fmt: skip


def test_reembed_moves_a_collection_to_another_model(pg_location) -> None:
    with semsearch.connect(pg_location) as db:
        spells(db)
        report = reembed(db, "spells", FakeEmbedder(16))
        assert report.swapped
        coll = db.collection("spells", embedder=FakeEmbedder(16))
        assert (coll.model_id, coll.count(), coll.stats().dim) == ("fake:16", 7, 16)
        hit = coll.search("fireball explodes in a burst of flame", limit=1)[0]
        assert hit.id == "fireball" and abs(hit.score - 1.0) < 1e-5
        assert [r.id for r in coll.find({"classes": "sorcerer"})] == ["fireball"]
