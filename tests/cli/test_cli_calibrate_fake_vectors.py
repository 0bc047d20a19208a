"""`semsearch models calibrate` plumbing with the deterministic fake embedder (never for meaning):
the estimate is the 85th percentile of the pairwise cosines, `--save` round-trips it into the
thresholds every face uses, and bad input is refused with exit 4. The real-model check against
MiniLM's known threshold is tests/integration/test_calibration_minilm.py.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

import semsearch
from semsearch.cli.app import app
from semsearch.embedders.fake import FakeEmbedder
from semsearch.embedders.saved_thresholds import calibration_file
from semsearch.embedders.thresholds import default_min_score, guess_note, model_threshold

runner = CliRunner()
MODEL = "acme/unmeasured-v1"
WORDS = [
    "bee",
    "hive",
    "honey",
    "wax",
    "flower",
    "garden",
    "river",
    "stone",
    "cloud",
    "rain",
    "wind",
    "snow",
    "moss",
    "fern",
    "oak",
]


@pytest.fixture(autouse=True)
def own_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SEMSEARCH_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("SEMSEARCH_MODEL", raising=False)


def texts(n: int) -> list[str]:
    rng = np.random.default_rng(7)
    return [" ".join(rng.choice(WORDS, size=6)) + f" note{i}" for i in range(n)]


def embedder(model_id: str) -> FakeEmbedder:
    made = FakeEmbedder(dim=32, max_tokens=64)
    made.model_id = model_id  # a model no table names (unlike fake:<dim>)
    return made


def build(tmp_path: Path, model_id: str, n: int) -> str:
    path = str(tmp_path / "notes.embed.db")
    with semsearch.connect(path) as db:
        coll = db.collection("notes", embedder=embedder(model_id))
        coll.upsert({"id": f"r{i}", "text": t} for i, t in enumerate(texts(n)))
    return path


def calibrate_cli(path: str, model: str, *extra: str):
    return runner.invoke(
        app, ["models", "calibrate", model, "--index", path, "--collection", "notes", *extra]
    )


def test_save_makes_the_estimate_the_models_default_fake_vectors(tmp_path: Path) -> None:
    path = build(tmp_path, MODEL, 60)
    emb = embedder(MODEL)
    assert model_threshold(MODEL).guess and guess_note(emb) is not None

    result = calibrate_cli(path, MODEL, "--save", "--json")
    assert result.exit_code == 0, result.output
    printed = json.loads(result.output)

    # independently: the 85th percentile of the cosines of all 1,770 distinct pairs
    vectors = np.asarray(emb.embed_documents(texts(60)), np.float64)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    cosines = (vectors @ vectors.T)[np.triu_indices(60, 1)]
    expected = float(np.quantile(cosines, 0.85))
    assert printed["records"] == 60 and printed["random_pairs"]["count"] == 1770
    assert abs(printed["threshold"] - expected) <= 0.01  # float16 storage, 0.01 rounding

    saved = json.loads(calibration_file().read_text(encoding="utf-8"))[MODEL]
    assert saved["threshold"] == printed["threshold"]
    assert default_min_score(emb) == printed["threshold"]
    assert default_min_score(embedder(MODEL + "?precision=int8")) == printed["threshold"]
    assert model_threshold(MODEL).basis == "saved"
    assert guess_note(emb) is None


def test_without_save_nothing_is_stored_and_it_stays_a_guess_fake_vectors(tmp_path: Path) -> None:
    path = build(tmp_path, MODEL, 60)
    result = calibrate_cli(path, MODEL)
    assert result.exit_code == 0, result.output
    assert "threshold 0." in result.output and "not saved" in result.output
    assert not calibration_file().exists()
    assert guess_note(embedder(MODEL)) is not None


def test_another_model_than_the_collections_is_refused_fake_vectors(tmp_path: Path) -> None:
    path = build(tmp_path, MODEL, 60)
    result = calibrate_cli(path, "acme/other-model", "--save")
    assert result.exit_code == 4
    assert f"embedded with {MODEL}, not acme/other-model" in result.output
    assert not calibration_file().exists()


def test_too_few_records_are_refused_fake_vectors(tmp_path: Path) -> None:
    path = build(tmp_path, MODEL, 20)
    result = calibrate_cli(path, MODEL)
    assert result.exit_code == 4
    assert "has 20 records with embedded chunks" in result.output
    assert "at least 50" in result.output


def test_save_is_refused_for_a_packaged_model_fake_vectors(tmp_path: Path) -> None:
    packaged = "sentence-transformers/all-MiniLM-L6-v2"
    path = build(tmp_path, packaged, 60)
    result = calibrate_cli(path, "all-MiniLM-L6-v2", "--save")
    assert result.exit_code == 4
    assert "has a packaged threshold (0.34)" in result.output
    assert not calibration_file().exists()
    assert model_threshold(packaged).basis == "calibrated"
