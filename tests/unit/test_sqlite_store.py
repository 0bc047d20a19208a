"""The SQLite store: file safety, model checks, idempotent writes, deletions, cache invalidation.

Plumbing tests: they use the deterministic fake embedder (never for claims about meaning).
"""

from __future__ import annotations

import hashlib
import sqlite3
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import semsearch
from semsearch.embedders.base import BaseEmbedder, EmbedKind
from semsearch.embedders.fake import FakeEmbedder
from semsearch.schema import Schema
from semsearch.stores.base import CollectionInfo
from semsearch.stores.sqlite.store import SQLiteStore
from tests.file_formats import stored_blobs

DOCS = [
    {"id": "a", "text": "The quick brown fox jumps over the lazy dog.", "kind": "animal"},
    {"id": "b", "text": "SQLite stores the whole database in one file.", "kind": "tech"},
    {"id": "c", "text": "Reciprocal rank fusion combines ranked lists.", "kind": "tech"},
]


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_plain_sqlite_file_is_refused_and_left_byte_for_byte_unchanged(tmp_path: Path) -> None:
    path = tmp_path / "app.embed.db"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE users (name TEXT)")
    conn.execute("INSERT INTO users VALUES ('ada')")
    conn.commit()
    conn.close()
    before = sha(path)
    with pytest.raises(semsearch.NotAnIndex) as info:
        semsearch.connect(path)
    assert info.value.hint
    assert sha(path) == before
    assert not Path(str(path) + "-wal").exists()


def test_non_sqlite_file_is_refused_and_left_unchanged(tmp_path: Path) -> None:
    path = tmp_path / "notes.embed.db"
    path.write_bytes(b"this is not a database at all\n" * 100)
    before = sha(path)
    with pytest.raises(semsearch.NotAnIndex):
        semsearch.connect(path)
    assert sha(path) == before


def test_unknown_location_names_the_supported_schemes() -> None:
    with pytest.raises(semsearch.BackendUnavailable) as info:
        semsearch.connect("redis://localhost:6379")
    assert ".embed.db" in (info.value.hint or "")
    assert "postgresql://" in (info.value.hint or "")


def test_reading_a_missing_index_does_not_create_it(tmp_path: Path) -> None:
    path = tmp_path / "missing.embed.db"
    db = semsearch.connect(path)
    assert db.collections() == []
    with pytest.raises(semsearch.IndexNotFound):
        db.collection("notes", create=False)
    assert not path.exists()


def test_model_mismatch_names_both_models_and_changes_nothing(db: semsearch.Database) -> None:
    coll = db.collection("docs", embedder=FakeEmbedder(dim=32))
    coll.upsert(DOCS)
    with pytest.raises(semsearch.ModelMismatch) as info:
        db.collection("docs", embedder=FakeEmbedder(dim=16))
    assert "fake:32" in info.value.message and "fake:16" in info.value.message
    reopened = db.collection("docs")  # no embedder: the stored model is used
    assert reopened.model_id == "fake:32"
    assert reopened.count() == 3
    assert reopened.stats().embedded == reopened.stats().chunks


def test_reopened_collection_uses_the_stored_model(db_path: Path) -> None:
    with semsearch.connect(db_path) as db:
        db.collection("docs", embedder="fake:24").upsert(DOCS)
    with semsearch.connect(db_path) as db:
        coll = db.collection("docs", create=False)
        assert coll.embedder.model_id == "fake:24"
        assert coll.embedder.dim == 24


class NaNEmbedder(FakeEmbedder):
    """Fake embedder whose output for texts containing 'fox' is NaN."""

    def _embed_batch(self, texts: list[str], kind: EmbedKind) -> np.ndarray:
        out = super()._embed_batch(texts, kind)
        for i, text in enumerate(texts):
            if "fox" in text:
                out[i] = np.nan
        return out


class ZeroEmbedder(FakeEmbedder):
    def _embed_batch(self, texts: list[str], kind: EmbedKind) -> np.ndarray:
        return np.zeros((len(texts), self.dim))


@pytest.mark.parametrize(
    ("embedder_cls", "poisoned"), [(NaNEmbedder, {"a"}), (ZeroEmbedder, {"a", "b", "c"})]
)
def test_nan_or_zero_vectors_are_never_stored(
    db: semsearch.Database, embedder_cls: type[BaseEmbedder], poisoned: set[str]
) -> None:
    # one chunk per record (short texts); only the poisoned texts fail, the others embed
    coll = db.collection("docs", embedder=embedder_cls())  # type: ignore[call-arg]
    report = coll.upsert(DOCS)
    assert not report.errors  # the embedder works: no outage
    assert set(report.failed) == poisoned and report.chunks_failed == len(poisoned)
    assert report.chunks_embedded == 3 - len(poisoned)
    stats = coll.stats()
    assert stats.records == 3 and stats.embedded == 3 - len(poisoned)
    assert stats.failed == len(poisoned) and stats.pending == 0
    # still keyword-searchable while failed
    assert coll.search("SQLite file", mode="keyword").ids[0] == "b"
    conn = sqlite3.connect(db.location)
    rows = conn.execute(
        "SELECT r.id, k.vector IS NULL AND k.vector_slot IS NULL FROM chunks k "
        "JOIN records r ON r.rowid = k.record_rowid"
    ).fetchall()
    assert {rid for rid, no_vector in rows if no_vector} == poisoned


def test_reupsert_is_idempotent_and_embeds_nothing(db: semsearch.Database) -> None:
    emb = FakeEmbedder()
    coll = db.collection("docs", embedder=emb)
    first = coll.upsert(DOCS)
    assert (first.added, first.updated, first.unchanged) == (3, 0, 0)
    embedded_texts = emb.texts_embedded
    second = coll.upsert(DOCS)
    assert (second.added, second.updated, second.unchanged) == (0, 0, 3)
    assert second.chunks_embedded == 0
    assert emb.texts_embedded == embedded_texts


def test_fields_only_change_updates_fields_without_reembedding(db: semsearch.Database) -> None:
    emb = FakeEmbedder()
    coll = db.collection("docs", embedder=emb)
    coll.upsert(DOCS)
    calls = emb.texts_embedded
    report = coll.upsert([{**DOCS[0], "kind": "fox"}])
    assert report.updated == 1 and report.chunks_embedded == 0
    assert emb.texts_embedded == calls
    assert coll.get("a")[0].fields["kind"] == "fox"


def test_changed_text_reuses_vectors_of_unchanged_chunks(db: semsearch.Database) -> None:
    emb = FakeEmbedder(max_tokens=12)
    coll = db.collection("docs", embedder=emb)
    paragraphs = [f"Paragraph {i} talks about topic number {i} in detail." for i in range(4)]
    coll.upsert([{"id": "long", "text": "\n\n".join(paragraphs)}])
    chunks_before = coll.stats().chunks
    assert chunks_before == 4  # each paragraph is 10 tokens, two never fit in 12
    paragraphs[2] = "Paragraph two was rewritten entirely with other words."
    report = coll.upsert([{"id": "long", "text": "\n\n".join(paragraphs)}])
    assert report.chunks_embedded == 1 and report.chunks_reused == 3


def test_delete_removes_record_from_every_search_path(db: semsearch.Database) -> None:
    coll = db.collection("docs", embedder="fake:32")
    coll.upsert(DOCS)
    assert coll.delete(["b", "nope"]) == 1
    assert coll.get("b") == []
    assert coll.count() == 2
    assert "b" not in coll.search("SQLite database file", mode="keyword").ids
    assert "b" not in coll.search("SQLite database file", min_score=None).ids
    assert "b" not in coll.search("SQLite database file", mode="hybrid").ids


def test_another_process_write_is_seen_by_the_next_search(db_path: Path) -> None:
    db = semsearch.connect(db_path)
    coll = db.collection("docs", embedder="fake:32")
    coll.upsert(DOCS[:2])
    assert "c" not in coll.search("rank fusion lists", min_score=None).ids  # warm the cache
    script = (
        "import semsearch;"
        f"c = semsearch.connect({str(db_path)!r}).collection('docs');"
        "c.upsert([{'id': 'c', 'text': 'Reciprocal rank fusion combines ranked lists.'}])"
    )
    subprocess.run([sys.executable, "-c", script], check=True)
    assert coll.search("rank fusion lists", min_score=None).ids[0] == "c"
    db.close()


def test_invalid_record_writes_nothing(db: semsearch.Database) -> None:
    coll = db.collection("docs", embedder="fake:32")
    with pytest.raises(semsearch.InvalidRecord) as info:
        coll.upsert([DOCS[0], {"text": "no id here"}])
    assert "id" in info.value.message
    with pytest.raises(semsearch.InvalidRecord):
        coll.upsert([DOCS[0], DOCS[0]])
    assert coll.count() == 0


def test_drop_collection_removes_it(db: semsearch.Database) -> None:
    db.collection("docs", embedder="fake:32").upsert(DOCS)
    db.collection("other", embedder="fake:32").upsert(DOCS[:1])
    assert db.collections() == ["docs", "other"]
    assert db.drop_collection("docs") is True
    assert db.collections() == ["other"]
    assert db.collection("other").count() == 1
    assert db.drop_collection("docs") is False


def test_vectors_are_stored_as_unit_float16_values(db: semsearch.Database) -> None:
    coll = db.collection("docs", embedder="fake:32")
    coll.upsert(DOCS)
    rows = list(stored_blobs(sqlite3.connect(db.location)).values())
    assert [len(r) for r in rows] == [64, 64, 64]  # 32 values x 2 bytes
    vectors = np.stack([np.frombuffer(r, dtype="<f2") for r in rows]).astype(np.float32)
    # half precision keeps 11 significant bits: each value within 2^-11 of the unit vector's
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-3)


def test_plumbing_store_opened_before_the_file_existed_sees_it_once_another_writer_creates_it(
    tmp_path,
) -> None:
    """Two connections to a path that does not exist yet (two server workers, or a server and a
    CLI): the one that never wrote still finds what the other created."""
    path = str(tmp_path / "late.embed.db")
    reader, writer = SQLiteStore(path), SQLiteStore(path)
    assert reader.list_collections() == [] and not reader.exists()
    writer.create_collection(CollectionInfo("notes", Schema().to_json(), "fake:8", None, {}))
    assert [c.name for c in reader.list_collections()] == ["notes"]
    assert reader.exists()
    reader.close()
    writer.close()
