"""Long queries are embedded in windows and combined: the arithmetic, the result, the CLI note.

Plumbing with the fake embedder (a 64-token window; a token is a word or a punctuation mark).
The expected vector is worked out here from the fake embedder's own window vectors.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

import semsearch
from semsearch.cli.app import app
from semsearch.embedders.fake import FakeEmbedder
from semsearch.long_query import embed_query_windows

WORDS = [f"w{n}" for n in range(150)]  # 150 tokens: windows of 64, 64 and 22


def test_windows_are_combined_by_token_weighted_mean_fake_embedder() -> None:
    emb = FakeEmbedder(32)
    text = " ".join(WORDS)
    got = embed_query_windows(emb, text)
    parts = [" ".join(WORDS[i : i + 64]) for i in (0, 64, 128)]
    mean = sum(w * emb.embed_query(p) for w, p in zip((64, 64, 22), parts, strict=True))
    expected = mean / np.linalg.norm(mean)
    assert got.windows == 3 and got.tokens == 150
    assert np.allclose(got.vector, expected, atol=1e-6)
    assert np.isclose(np.linalg.norm(got.vector), 1.0)
    short = embed_query_windows(emb, "just a few words")
    assert short.windows == 1 and np.allclose(short.vector, emb.embed_query("just a few words"))


def test_search_result_says_the_query_was_windowed_fake_embedder(tmp_path: Path) -> None:
    with semsearch.connect(tmp_path / "q.embed.db") as db:
        coll = db.collection("q", embedder=FakeEmbedder(32))
        coll.upsert([{"id": "a", "text": "w1 w2 w3"}])
        result = coll.search(" ".join(WORDS), min_score=None)
        assert result.query_windows == 3
        assert result.notes == (
            "the query is 150 tokens, longer than the model's window of 64: embedded in 3 "
            "windows and combined (token-weighted mean)",
        )
        assert coll.search("w1", min_score=None).query_windows == 1
        assert coll.search("w1", mode="keyword").query_windows == 0


def test_cli_prints_a_note_for_a_long_query_fake_embedder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SEMSEARCH_MODEL", "fake:32")
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "a.md").write_text("# A\n\nw1 w2 w3\n")
    index = str(tmp_path / "n.embed.db")
    runner = CliRunner()
    assert runner.invoke(app, ["index", str(notes), "--index", index]).exit_code == 0
    result = runner.invoke(app, ["search", " ".join(WORDS), "--index", index])
    assert result.exit_code == 0
    assert "note: the query is 150 tokens" in " ".join(result.output.split())
