"""Sentence windows (semsearch.windows) and Hit.highlight: plumbing with the fake embedder.

Expected spans are counted by hand from the texts; expected scores are cosines computed here
from the fake embedder's own vectors, not read from the store.
"""

from __future__ import annotations

import hashlib
import sqlite3
from pathlib import Path

import numpy as np
import pytest

import semsearch
from semsearch.embedders.fake import FakeEmbedder
from semsearch.highlight import keyword_highlight
from semsearch.sources.vault import VAULT_SCHEMA
from semsearch.stores.sqlite.schema import SCHEMA_VERSION
from semsearch.windows import window_spans
from tests.file_formats import as_older_format

NOTE = "Compost needs air and water every week. The lighthouse key is under the blue pot."
# "Compost needs air and water every week." is chars 0..39; the second sentence 40..81.
FIRST, SECOND = (0, 39), (40, 81)
SECOND_SENTENCE = "The lighthouse key is under the blue pot."


def test_window_spans_cut_sentences_and_merge_short_fragments() -> None:
    assert window_spans(NOTE) == [FIRST, SECOND]
    # "See above." (2 words, 10 chars) joins the sentence before it
    text = (
        "The boiler pressure should stay near one and a half bar. See above. "
        "The plumber comes back on Tuesday morning."
    )
    assert window_spans(text) == [(0, 67), (68, 110)]
    assert window_spans("A long first sentence of the note. Fig. 2") == []  # merged: one left
    assert window_spans("One sentence only, however long it may be.") == []
    # a short title on its own line is a label, not a window (it would match its words anywhere)
    title = "Cure Wounds\n\nA creature you touch regains hit points. This spell has no effect on undead."
    assert window_spans(title) == [(13, 53), (54, 89)]
    assert window_spans("First point of the list is here\n- second item of the list here") == [
        (0, 31),
        (32, 62),
    ]


def test_keyword_highlight_marks_the_sentence_with_most_query_terms() -> None:
    assert keyword_highlight(NOTE, "lighthouse keys") == SECOND
    assert keyword_highlight(NOTE, "compost water") == FIRST
    assert keyword_highlight(NOTE, "zebra") is None
    assert keyword_highlight("One sentence only, however long.", "sentence") is None


def cos(a: np.ndarray, b: np.ndarray) -> float:
    return float(a @ b / np.linalg.norm(a) / np.linalg.norm(b))


def stored_cos(q: np.ndarray, v: np.ndarray) -> float:
    """A chunk's score as the store computes it: the query against the float16 stored vector."""
    return float(q @ v.astype(np.float16).astype(np.float32))


def expected_mix(fake, query: str, text: str, spans: list[tuple[int, int]]) -> float:
    q = fake.embed_query(query)
    chunk = cos(q, fake.embed_documents([text])[0])
    windows = fake.embed_documents([text[a:b] for a, b in spans])
    return 0.5 * chunk + 0.5 * max(cos(q, w) for w in windows)


def test_semantic_score_mixes_chunk_and_best_window_and_highlights_it(db, fake_embedder) -> None:
    coll = db.collection("notes", embedder=fake_embedder)
    coll.upsert([{"id": "long", "text": NOTE}, {"id": "one", "text": "A kitchen note on bread."}])
    hits = {h.id: h for h in coll.search("lighthouse key", limit=5, min_score=None)}
    assert hits["long"].score == pytest.approx(
        expected_mix(fake_embedder, "lighthouse key", NOTE, [FIRST, SECOND]), abs=2e-3
    )
    assert hits["long"].highlight == SECOND
    one = "A kitchen note on bread."
    q = fake_embedder.embed_query("lighthouse key")
    assert hits["one"].score == pytest.approx(
        stored_cos(q, fake_embedder.embed_documents([one])[0]), abs=1e-6
    )
    assert hits["one"].highlight is None  # one sentence: nothing marks a window out
    kw = coll.search("lighthouse", mode="keyword", limit=1)
    assert kw[0].highlight == SECOND
    hybrid = coll.search("lighthouse key", mode="hybrid", limit=1)
    assert hybrid[0].id == "long" and hybrid[0].highlight == SECOND


class RecordingFake(FakeEmbedder):
    """The fake embedder, remembering every document text it embedded."""

    def __init__(self) -> None:
        super().__init__(dim=32, max_tokens=64)
        self.seen: list[str] = []

    def embed_documents(self, texts):  # type: ignore[no-untyped-def]
        self.seen += list(texts)
        return super().embed_documents(texts)


def test_windows_are_embedded_under_their_chunks_heading_breadcrumb(db) -> None:
    fake = RecordingFake()
    coll = db.collection("notes", schema=VAULT_SCHEMA, embedder=fake)
    text = "# Garden\n\n## Shed\n\nCompost needs air and water every week. " + SECOND_SENTENCE
    coll.upsert([{"id": "garden.md", "text": text, "title": "Garden"}])
    # the first short line is a label, dropped; "## Shed" merges into the sentence after it
    windows = ["## Shed\n\nCompost needs air and water every week.", SECOND_SENTENCE]
    assert fake.seen == [f"Garden > Shed\n\n{t}" for t in [text, *windows]]  # chunk, windows
    hit = coll.search("lighthouse key", limit=1, min_score=None)[0]
    q = fake.embed_query("lighthouse key")
    chunk = cos(q, fake.embed_documents([f"Garden > Shed\n\n{text}"])[0])
    best = max(cos(q, v) for v in fake.embed_documents([f"Garden > Shed\n\n{w}" for w in windows]))
    assert hit.score == pytest.approx(0.5 * chunk + 0.5 * best, abs=2e-3)
    assert hit.chunk is not None and hit.highlight is not None
    assert hit.chunk.text[slice(*hit.highlight)] == SECOND_SENTENCE


def test_option_off_gives_chunk_cosine_and_stores_no_windows(db, fake_embedder) -> None:
    coll = db.collection("plain", embedder=fake_embedder, sentence_windows=False)
    coll.upsert([{"id": "long", "text": NOTE}])
    hit = coll.search("lighthouse key", limit=1, min_score=None)[0]
    q = fake_embedder.embed_query("lighthouse key")
    assert hit.score == pytest.approx(
        stored_cos(q, fake_embedder.embed_documents([NOTE])[0]), abs=1e-6
    )
    assert hit.highlight is None
    assert window_rows(db.store.location) == 0
    reopened = db.collection("plain", embedder=fake_embedder)
    assert reopened.info.options["sentence_windows"] is False


def window_rows(path: str) -> int:
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return int(conn.execute("SELECT COUNT(*) FROM chunk_windows").fetchone()[0])
    finally:
        conn.close()


def test_windows_are_deleted_with_their_record_and_kept_for_shared_content(
    db, fake_embedder
) -> None:
    coll = db.collection("notes", embedder=fake_embedder)
    other = "Bread wants a hot oven for forty minutes. Salt goes in at the start."
    coll.upsert([{"id": "a", "text": NOTE}, {"id": "b", "text": other}, {"id": "c", "text": NOTE}])
    assert window_rows(db.store.location) == 2  # a and c share one content hash
    coll.delete(["a"])
    assert window_rows(db.store.location) == 2  # c still holds that content
    assert coll.search("lighthouse key", limit=1, min_score=None)[0].highlight == SECOND
    coll.delete(["c"])
    assert window_rows(db.store.location) == 1
    coll.upsert([{"id": "b", "text": "Now a single sentence about bread."}])
    assert window_rows(db.store.location) == 0  # rewritten: its old windows went with it


def as_format_2(path: Path, vector: np.ndarray) -> None:
    """Turn a one-chunk file into what semsearch wrote before format 3: no windows table (nor
    the tables of later formats), and the chunk's ``vector`` as a float32 blob (formats
    before 5)."""
    as_older_format(path, 2, ["chunk_windows", "record_changes"])
    conn = sqlite3.connect(path)
    conn.execute("UPDATE chunks SET vector = ?", (vector.astype("<f4").tobytes(),))
    conn.commit()
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_format_2_file_searches_unchanged_until_a_write_migrates_it(db_path, fake_embedder) -> None:
    db = semsearch.connect(db_path)
    db.collection("notes", embedder=fake_embedder).upsert([{"id": "long", "text": NOTE}])
    db.close()
    as_format_2(db_path, fake_embedder.embed_documents([NOTE])[0])
    before = digest(db_path)

    db = semsearch.connect(db_path)
    coll = db.collection("notes", embedder=fake_embedder)
    hit = coll.search("lighthouse key", limit=1, min_score=None)[0]
    q = fake_embedder.embed_query("lighthouse key")
    assert hit.score == pytest.approx(cos(q, fake_embedder.embed_documents([NOTE])[0]))
    assert hit.highlight is None
    assert digest(db_path) == before  # the read changed nothing on disk

    coll.upsert([{"id": "new", "text": "Bread wants a hot oven. Salt goes in at the start."}])
    conn = sqlite3.connect(f"file:{db_path}?mode=ro", uri=True)
    version = conn.execute("SELECT MAX(version) FROM semsearch_migrations").fetchone()[0]
    conn.close()
    assert version == SCHEMA_VERSION
    assert window_rows(str(db_path)) == 1  # the new record's; the old chunk keeps none
    assert coll.search("lighthouse key", limit=1, min_score=None)[0].score == pytest.approx(
        hit.score, abs=1e-3
    )  # the same vector, now float16
    db.close()


def window_blobs(path: Path) -> list[bytes]:
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return [bytes(r[0]) for r in conn.execute("SELECT vectors FROM chunk_windows")]
    finally:
        conn.close()


def test_format_6_float16_windows_search_as_before_and_new_windows_are_int8(
    db_path, fake_embedder
) -> None:
    """Windows written before format 7 (float16 blobs) keep scoring and highlighting; the
    next write stores its windows as int8 codes: 2 header bytes + 1 byte a value."""
    db = semsearch.connect(db_path)
    db.collection("notes", embedder=fake_embedder).upsert([{"id": "long", "text": NOTE}])
    db.close()
    as_older_format(db_path, 6, [])
    dim = fake_embedder.dim
    assert [len(b) for b in window_blobs(db_path)] == [2 * 2 * dim]  # two float16 windows

    db = semsearch.connect(db_path)
    coll = db.collection("notes", embedder=fake_embedder)
    hit = coll.search("lighthouse key", limit=1, min_score=None)[0]
    want = expected_mix(fake_embedder, "lighthouse key", NOTE, [FIRST, SECOND])
    assert hit.score == pytest.approx(want, abs=2e-3) and hit.highlight == SECOND
    other = "Bread wants a hot oven. Salt goes in at the start."
    coll.upsert([{"id": "bread", "text": other}])
    assert sorted(len(b) for b in window_blobs(db_path)) == [2 * dim + 2, 2 * 2 * dim]
    again = {h.id: h for h in coll.search("lighthouse key", limit=2, min_score=None)}
    assert again["long"].score == pytest.approx(hit.score, abs=1e-6)  # old blob, same read
    bread = expected_mix(fake_embedder, "lighthouse key", other, window_spans(other))
    assert again["bread"].score == pytest.approx(bread, abs=3e-3)  # int8 windows
    db.close()
