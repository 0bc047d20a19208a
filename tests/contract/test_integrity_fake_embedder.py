"""Integrity under faults on every backend (issue 24): poison texts, a dimension that changes
mid-call, chunks left pending by a crash, ghost hits, and cosine scores kept in [-1, 1].

Plumbing tests with the deterministic fake embedder; each expected value is worked out from
the inputs (how many records, which one is poisoned), not read back from the code.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from numpy.typing import NDArray

import semsearch
from semsearch.embedders.base import EmbedKind
from semsearch.embedders.fake import FakeEmbedder
from tests.contract.conftest import StoreUnderTest
from tests.contract.helpers import as_stored, vector_leg

NOTES = [
    {"id": f"n{i:02d}", "text": f"note {i} about topic {i % 4} and gardens"} for i in range(20)
]
POISON_ID = "n07"


class PoisonEmbedder(FakeEmbedder):
    """Fake embedder whose vector for any text containing "poison" is NaN, Inf or zero."""

    def __init__(self, kind: str = "nan") -> None:
        super().__init__(32)
        self.kind = kind
        self.model_id = "fake:32"
        self.poison_on = True

    def _embed_batch(self, texts: list[str], kind: EmbedKind) -> NDArray[np.floating]:
        out = super()._embed_batch(texts, kind)
        bad = {"nan": np.nan, "inf": np.inf, "zero": 0.0}[self.kind]
        for i, text in enumerate(texts):
            if self.poison_on and "poison" in text:
                out[i] = bad
        return out


def poisoned_notes() -> list[dict[str, Any]]:
    return [{**n, "text": n["text"] + " poison"} if n["id"] == POISON_ID else n for n in NOTES]


@pytest.mark.parametrize("kind", ["nan", "inf", "zero"])
def test_one_bad_vector_fails_only_its_record_fake_embedder(
    database: semsearch.Database, kind: str
) -> None:
    emb = PoisonEmbedder(kind)
    coll = database.collection("notes", embedder=emb)
    report = coll.upsert(poisoned_notes())
    # 20 one-chunk notes, one poisoned: 19 embedded, 1 failed, named, and no outage reported
    assert (report.added, report.chunks_embedded, report.chunks_failed) == (20, 19, 1)
    assert list(report.failed) == [POISON_ID]
    assert {"nan": "NaN", "inf": "Inf", "zero": "zero"}[kind] in report.failed[POISON_ID]
    assert report.errors == []
    stats = coll.stats()
    assert (stats.embedded, stats.failed, stats.pending) == (19, 1, 0)
    hits = coll.search("note 3 about topic 3 and gardens", min_score=None, limit=20)
    assert hits.ids[0] == "n03" and POISON_ID not in hits.ids and len(hits) == 19
    # reindex retries only the failed text, and it fails alone again without raising
    before = emb.texts_embedded
    again = coll.reindex()
    assert emb.texts_embedded - before == 1
    assert (again.chunks_embedded, again.chunks_failed, list(again.failed)) == (0, 1, [POISON_ID])
    # once the model can embed it, reindex embeds exactly that one
    emb.poison_on = False
    fixed = coll.reindex()
    assert (fixed.chunks_embedded, fixed.chunks_failed) == (1, 0)
    assert (coll.stats().embedded, coll.stats().failed) == (20, 0)


def test_poison_texts_never_hold_back_pending_chunks_fake_embedder(
    database: semsearch.Database,
) -> None:
    """embed_pending (the background worker's step) takes never-tried chunks before chunks
    that failed alone, so a failed text at the head of the queue blocks nothing."""
    emb = PoisonEmbedder("nan")
    coll = database.collection("notes", embedder=emb)
    coll.upsert([{"id": "a0", "text": "poison first"}])  # fails alone: status failed
    coll.upsert(NOTES[:3], embed=False)  # 3 pending chunks, stored after the failed one
    assert coll.embed_pending(3) == 3
    assert (coll.stats().embedded, coll.stats().failed) == (3, 1)


def test_a_batch_of_only_poison_texts_does_not_end_the_backlog_fake_embedder(
    database: semsearch.Database,
) -> None:
    coll = database.collection("notes", embedder=PoisonEmbedder("zero"))
    coll.upsert([{"id": f"p{i}", "text": f"poison {i}"} for i in range(3)], embed=False)
    coll.upsert([{"id": f"q{i}", "text": f"fine {i}"} for i in range(2)], embed=False)
    # the first batch of 3 holds only poison texts; the two fine ones come after
    assert coll.embed_pending(3) == 2
    assert coll.embed_pending(3) == 0  # only the poison texts are left, tried once more
    assert (coll.stats().embedded, coll.stats().failed) == (2, 3)


class ShiftingEmbedder(FakeEmbedder):
    """Fake embedder whose output turns 16-d in the middle of a call, once ``armed``.

    ``declared=False``: from its second batch on it returns 16-d vectors while still declaring
    32 (a wrapper bug). ``declared=True``: after its first ``embed_documents`` call it declares
    and returns 16 (a remote model reconfigured).
    """

    def __init__(self, declared: bool) -> None:
        super().__init__(32)
        self.declared = declared
        self.armed = False
        self.switched = False
        self.batches = 0

    @property
    def dim(self) -> int:
        return 16 if self.declared and self.switched else 32

    def embed_documents(self, texts: Any) -> NDArray[np.float32]:
        out = super().embed_documents(texts)
        if self.armed and self.declared:
            self.switched = True
        return out

    def _embed_batch(self, texts: list[str], kind: EmbedKind) -> NDArray[np.floating]:
        if self.armed and not self.declared:
            self.batches += 1
            self.switched = self.batches > 1
        width = 16 if self.switched else 32
        return np.ones((len(texts), width)) + np.arange(width) * 0.01 * len(texts[0])


@pytest.mark.parametrize(
    ("declared", "embedded", "pending", "failed"), [(False, 0, 44, 216), (True, 216, 0, 44)]
)
def test_dimension_change_mid_upsert_reports_and_keeps_old_vectors_fake_embedder(
    database: semsearch.Database, declared: bool, embedded: int, pending: int, failed: int
) -> None:
    emb = ShiftingEmbedder(declared)
    coll = database.collection("docs", embedder=emb)
    first = [{"id": f"d{i:03d}", "text": f"first text {i}"} for i in range(300)]
    assert coll.upsert(first).chunks_embedded == 300
    # 40 records unchanged, 260 rewritten: the first write transaction (256 records) holds
    # 216 changed ones, embedded as one group; the second holds the other 44.
    # declared=False: the first group fails at its second batch (nothing of it is stored, its
    # 216 chunks are marked failed) and the second group is never tried (44 stay pending);
    # declared=True: the first group is stored, the second group fails (44 marked failed).
    second = first[:40] + [{"id": r["id"], "text": "second " + r["text"]} for r in first[40:]]
    emb.armed = True
    report = coll.upsert(second)  # before the fix: DimensionMismatch, half applied
    assert (report.unchanged, report.updated, report.chunks_embedded) == (40, 260, embedded)
    assert (report.chunks_pending, report.chunks_failed) == (pending, failed)
    assert any("16" in e for e in report.errors)
    stats = coll.stats()
    assert stats.records == 300 and stats.embedded == 40 + embedded
    assert (stats.pending, stats.failed) == (pending, failed)  # the report agrees (issue 46)
    assert coll.get("d299")[0].text == "second first text 299"  # every record written
    assert coll.vectors(["d000"])["d000"][0] is not None  # old vector of an unchanged chunk


def test_the_report_of_a_dimension_change_agrees_with_stats_fake_embedder(
    database: semsearch.Database,
) -> None:
    """Issue 46, item 19: 300 new records whose embedder turned 16-d: the first group of 256 is
    tried and marked failed, the other 44 are never tried. The report said 300 pending and 0
    failed while ``stats()`` said 44 pending and 256 failed."""
    emb = ShiftingEmbedder(declared=False)
    coll = database.collection("docs", embedder=emb)
    assert coll.upsert([{"id": "seed", "text": "fixes the dimension at 32"}]).chunks_embedded == 1
    emb.armed = True  # from its next call's second batch on, 16-d vectors
    report = coll.upsert([{"id": f"n{i:03d}", "text": f"new text {i}"} for i in range(300)])
    assert (report.added, report.chunks_embedded) == (300, 0)
    assert (report.chunks_pending, report.chunks_failed) == (44, 256)
    stats = coll.stats()
    assert (stats.pending, stats.failed) == (44, 256)
    assert report.failed == {}  # no text failed alone: the embedder did (see errors)
    assert any("16" in e for e in report.errors)


def test_rerun_upsert_embeds_chunks_left_pending_fake_embedder(
    database: semsearch.Database,
) -> None:
    coll = database.collection("docs", embedder=FakeEmbedder(32))
    # ids with glob characters exercise the prefix match narrowed to the exact ids
    recs = [{"id": i, "text": f"text of {i}"} for i in ("a", "b", "c*", "c*d", "e[1]")]
    coll.upsert(recs, embed=False)  # what a crash between the two transactions leaves
    counted = coll.upsert(recs, embed=False)
    assert (counted.unchanged, counted.chunks_pending, counted.chunks_embedded) == (5, 5, 0)
    rerun = coll.upsert(recs)
    assert (rerun.unchanged, rerun.chunks_embedded, rerun.chunks_pending) == (5, 5, 0)
    assert (coll.stats().pending, coll.stats().embedded) == (0, 5)
    # only the named records: another record's pending chunk is left for the worker
    coll.upsert([{"id": "c", "text": "text of c"}], embed=False)
    assert coll.upsert(recs[2:3]).chunks_embedded == 0  # "c*" is embedded already
    assert coll.stats().pending == 1


def _after_first_call(fn: Callable[..., Any], action: Callable[[], None]) -> Callable[..., Any]:
    done = []

    def wrapped(*args: Any, **kwargs: Any) -> Any:
        out = fn(*args, **kwargs)
        if not done:
            done.append(True)
            action()
        return out

    return wrapped


@pytest.mark.parametrize("mode", ["semantic", "keyword", "hybrid"])
def test_no_ghost_hit_for_a_record_deleted_after_ranking_fake_embedder(
    store: StoreUnderTest, database: semsearch.Database, mode: str, monkeypatch: Any
) -> None:
    """A record deleted (by another connection) between ranking and the read of the hits'
    fields and chunks never comes back as a hit with ``fields == {}`` / ``chunk is None``."""
    coll = database.collection("docs", embedder=FakeEmbedder(32))
    coll.upsert([{"id": f"r{i}", "text": f"gardens {i}", "tag": i} for i in range(6)])
    other = store.connect()

    def delete_r0() -> None:
        other.collection("docs", embedder=FakeEmbedder(32)).delete(["r0"])

    leg = "keyword_search" if mode == "keyword" else vector_leg(coll.store)
    monkeypatch.setattr(coll.store, leg, _after_first_call(getattr(coll.store, leg), delete_r0))
    try:
        result = coll.search("gardens 0", mode=mode, min_score=None, limit=6)
    finally:
        other.close()
    assert "r0" not in result.ids
    assert len(result) == 5  # ranked again: the five live records
    for hit in result:
        assert hit.chunk is not None and hit.fields == {"tag": int(hit.id[1:])}


def _overshooting_unit_vector(store: object, dim: int = 32) -> NDArray[np.float32]:
    """A float32 unit vector whose dot product with itself as the store keeps it (float16 on
    SQLite) rounds above 1 (and with its opposite below -1), found by trying seeds."""
    for seed in range(10_000):
        v = np.random.default_rng(seed).standard_normal(dim).astype(np.float32)
        v /= np.linalg.norm(v)
        both = as_stored(store, np.stack([v, -v])) @ v
        if both[0] > 1.0 and both[1] < -1.0:
            return v
    raise AssertionError("no seed gave an overshooting vector")


class FixedEmbedder(FakeEmbedder):
    """Fake embedder: texts containing "down" get -v, every other text v."""

    def __init__(self, v: NDArray[np.float32]) -> None:
        super().__init__(v.shape[0])
        self.v = v

    def _embed_batch(self, texts: list[str], kind: EmbedKind) -> NDArray[np.floating]:
        return np.stack([-self.v if "down" in t else self.v for t in texts])


def test_cosine_scores_stay_in_range_fake_embedder(database: semsearch.Database) -> None:
    v = _overshooting_unit_vector(database.store)
    coll = database.collection("docs", embedder=FixedEmbedder(v))
    coll.upsert([{"id": "same", "text": "up"}, {"id": "opposite", "text": "down"}])
    for exact in (False, True):
        hits = coll.search("up", min_score=None, exact=exact).hits
        assert [h.id for h in hits] == ["same", "opposite"]
        assert -1.0 <= hits[1].score <= hits[0].score <= 1.0
        assert hits[0].score == pytest.approx(1.0, abs=1e-6)
        assert hits[1].score == pytest.approx(-1.0, abs=1e-6)
