"""`semsearch models`: lists local models with engine and cache state; `prepare` builds ahead."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from semsearch.cli.app import app


def test_models_lists_the_cache_state_and_prepare_builds_it(
    tiny_bert: Path, cache_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SEMSEARCH_MODEL", f"local:{tiny_bert}")
    runner = CliRunner()
    before = json.loads(runner.invoke(app, ["models", "--json"]).output)
    tiny = next(m for m in before if m["folder"] == str(tiny_bert))
    assert tiny["engine"] == "onnx" and tiny["default_precision"] == "fp32"  # as published
    packaged = before[0]
    assert packaged["model_id"] == "sentence-transformers/all-MiniLM-L6-v2?precision=int8"
    assert [(g["precision"], g["built"]) for g in tiny["cache"]] == [
        ("fp32", False),
        ("int8", False),
    ]
    made = runner.invoke(app, ["models", "prepare", "--precision", "fp32"])
    assert made.exit_code == 0, made.output
    after = json.loads(runner.invoke(app, ["models", "--json"]).output)
    graphs = next(m for m in after if m["folder"] == str(tiny_bert))["cache"]
    fp32 = next(g for g in graphs if g["precision"] == "fp32")
    assert fp32["built"] and fp32["bytes"] == Path(fp32["path"]).stat().st_size > 0
    assert Path(fp32["path"]).parent == cache_dir / "onnx"
    listing = runner.invoke(app, ["models"]).output
    assert "engine onnx" in listing and "built" in listing and "not built" in listing


def test_prepare_refuses_a_model_that_runs_on_torch(tiny_bert: Path, cache_dir: Path) -> None:
    config = (tiny_bert / "config.json").read_text().replace('"bert"', '"deberta-v2"')
    (tiny_bert / "config.json").write_text(config)
    result = CliRunner().invoke(app, ["models", "prepare", f"local:{tiny_bert}"])
    assert result.exit_code != 0
    assert "torch engine" in result.output and not (cache_dir / "onnx").exists()


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--precision", "fp8"], "unknown precision 'fp8'"),
        (["bogus:1"], "names the provider 'bogus'"),
        (["openai:text-embedding-3-small"], "names the provider 'openai'"),
    ],
)
def test_prepare_refuses_bad_input_with_the_bad_input_exit_code(
    tiny_bert: Path, cache_dir: Path, monkeypatch: pytest.MonkeyPatch, args: list[str], needle: str
) -> None:
    """These exited 8 (model unavailable), and bogus:1 was read as a folder path; bad input
    exits 4, as every CLI command's bad input does (semsearch.cli.common.EXIT_CODES)."""
    monkeypatch.setenv("SEMSEARCH_MODEL", f"local:{tiny_bert}")
    monkeypatch.setenv("COLUMNS", "200")
    result = CliRunner().invoke(app, ["models", "prepare", *args])
    assert result.exit_code == 4, result.output
    assert needle in result.output
    assert not list(cache_dir.rglob("*.onnx"))  # nothing was built
