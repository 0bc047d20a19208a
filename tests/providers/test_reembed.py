"""`reembed`: switch a collection's model, keeping the old vectors until the new set is done.

Plumbing tests with the deterministic fake embedder (fake:32 -> fake:16) on a real SQLite file.
"""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

import semsearch
from semsearch.cli.app import app
from semsearch.embedders.fake import FakeEmbedder
from semsearch.errors import EmbedderUnavailable
from semsearch.reembed import reembed, shadow_name
from semsearch.schema import Schema

SCHEMA = Schema.from_types({"title": "str", "year": "int"}, text=("title", "text"))
RECORDS = [
    {"id": f"r{i:03d}", "title": f"Title {i}", "year": 2000 + i % 5, "text": f"body words {i}"}
    for i in range(300)
]


class FailsAfter(FakeEmbedder):
    """fake:16 that fails (like an API outage) after ``ok_calls`` successful calls."""

    def __init__(self, ok_calls: int) -> None:
        super().__init__(16)
        self.ok_calls = ok_calls

    def _embed_batch(self, texts, kind):
        if self.calls >= self.ok_calls:
            raise EmbedderUnavailable("simulated outage", hint="wait")
        return super()._embed_batch(texts, kind)


@pytest.fixture
def built(db):
    coll = db.collection("notes", schema=SCHEMA, embedder=FakeEmbedder(32))
    coll.upsert(RECORDS)
    return coll


def test_reembed_switches_model_keeps_records_and_schema(db, built):
    before = {r.id: (r.fields, r.text) for r in built.get([r["id"] for r in RECORDS])}
    report = reembed(db, "notes", FakeEmbedder(16))

    assert report.swapped and (report.old_model, report.new_model) == ("fake:32", "fake:16")
    assert report.records == 300 and report.chunks_embedded == 300
    info = db.store.get_collection("notes")
    assert (info.model_id, info.dim) == ("fake:16", 16)
    assert Schema.from_json(info.schema_json) == SCHEMA
    assert db.collections() == ["notes"]  # the shadow is gone

    coll = db.collection("notes")
    after = {r.id: (r.fields, r.text) for r in coll.get(list(before))}
    assert after == before
    assert coll.stats().embedded == 300
    hit = coll.search("Title 7\n\nbody words 7", where={"year": 2002})[0]
    assert hit.id == "r007" and hit.score == pytest.approx(1.0, abs=1e-5)
    # the copied records hash exactly as the original template renders them
    assert coll.upsert(RECORDS).unchanged == 300


def test_failure_keeps_old_vectors_and_a_rerun_resumes(db, built):
    with pytest.raises(EmbedderUnavailable, match="simulated outage"):
        reembed(db, "notes", FailsAfter(ok_calls=8))  # 8 calls x 32 texts = 256 chunks

    info = db.store.get_collection("notes")
    assert (info.model_id, info.dim) == ("fake:32", 32)
    old = db.collection("notes", embedder=FakeEmbedder(32))
    assert old.stats().embedded == 300  # the old vectors still serve
    assert old.search("Title 7\n\nbody words 7")[0].id == "r007"
    shadow = db.store.stats(shadow_name("notes"))
    assert (shadow.records, shadow.embedded) == (300, 256)

    resumed = FakeEmbedder(16)
    report = reembed(db, "notes", resumed)
    assert report.swapped and resumed.texts_embedded == 44  # only what was missing
    assert db.store.get_collection("notes").model_id == "fake:16"
    assert db.collections() == ["notes"]


def test_same_model_is_a_no_op(db, built):
    report = reembed(db, "notes", "fake:32")
    assert not report.swapped and report.records == 300


def test_records_deleted_meanwhile_are_not_carried_over(db, built):
    with pytest.raises(EmbedderUnavailable):
        reembed(db, "notes", FailsAfter(ok_calls=1))
    built.delete(["r000", "r001"])
    built.upsert([{"id": "new", "title": "New", "year": 2030, "text": "fresh"}])
    report = reembed(db, "notes", FakeEmbedder(16))
    coll = db.collection("notes")
    assert report.records == 299 and coll.get(["r000", "new"])[0].id == "new"


def test_cli_reembed_and_reindex(db_path, monkeypatch):
    monkeypatch.delenv("SEMSEARCH_MODEL", raising=False)
    with semsearch.connect(db_path) as db:
        coll = db.collection("notes", embedder="fake:32")
        coll.upsert([{"id": "a", "text": "alpha"}, {"id": "b", "text": "beta"}], embed=False)

    runner = CliRunner()
    result = runner.invoke(app, ["reindex", "--index", str(db_path), "-c", "notes"])
    assert result.exit_code == 0, result.output
    assert "2 chunks embedded" in result.output

    result = runner.invoke(app, ["reembed", "--model", "fake:16", "--index", str(db_path)])
    assert result.exit_code == 0, result.output
    assert "fake:32 -> fake:16" in result.output
    with semsearch.connect(db_path) as db:
        assert db.store.get_collection("notes").dim == 16

    result = runner.invoke(app, ["reembed", "--model", "nope:1", "--index", str(db_path)])
    assert result.exit_code != 0 and "unknown embedding provider" in result.output


def test_a_write_during_the_reembed_is_not_lost(db, built, monkeypatch):
    """Someone writes to the old collection just before the swap: the swap is refused, another
    pass copies the write, then the swap happens."""
    store = db.store
    real = store.replace_collection
    calls = []

    def racing(target, source, expected_version=None):
        calls.append(expected_version)
        if len(calls) == 1:
            built.upsert([{"id": "late", "title": "Late", "year": 2040, "text": "written late"}])
            built.delete(["r299"])
        return real(target, source, expected_version=expected_version)

    monkeypatch.setattr(store, "replace_collection", racing)
    report = reembed(db, "notes", FakeEmbedder(16))

    assert report.swapped and len(calls) == 2
    coll = db.collection("notes")
    assert coll.model_id == "fake:16" and coll.count() == 300
    assert [r.id for r in coll.get(["late", "r299"])] == ["late"]
    assert coll.search("Late\n\nwritten late")[0].id == "late"


def test_replace_collection_compare_and_swap(db, built):
    store = db.store
    other = db.collection("other", embedder=FakeEmbedder(16))
    other.upsert([{"id": "x", "text": "x"}])
    version = store.collection_version("notes")
    built.upsert([{"id": "bump", "title": "t", "year": 1, "text": "b"}])
    assert store.replace_collection("notes", "other", expected_version=version) is False
    assert db.collections() == ["notes", "other"]  # nothing changed
    fresh = store.collection_version("notes")
    assert store.replace_collection("notes", "other", expected_version=fresh) is True
    assert db.collections() == ["notes"]
    assert db.collection("notes").ids() == ["x"]


def test_reembed_never_replaces_a_user_collection_named_like_its_shadow(tmp_path) -> None:
    import semsearch
    from semsearch.reembed import reembed

    db = semsearch.connect(tmp_path / "r.embed.db")
    db.collection("notes", embedder="fake:32").upsert([{"id": "a", "text": "alpha"}])
    user = db.collection("notes.reembed", embedder="fake:32")
    user.upsert([{"id": f"u{i}", "text": "kept"} for i in range(3)])
    with pytest.raises(semsearch.SemsearchError) as info:
        reembed(db, "notes", "fake:16")
    assert "not a reembed shadow" in info.value.message
    assert db.collection("notes.reembed").count() == 3
    assert db.collection("notes").model_id == "fake:32"
