"""Each error family exits with its own documented code; `import --delete-missing`.

Plumbing tests through typer's CliRunner with SEMSEARCH_MODEL=fake:32 (the deterministic fake
embedder).
"""

from __future__ import annotations

import json
import re
import sqlite3
from pathlib import Path

import pytest
from typer.testing import CliRunner

import semsearch
from semsearch import errors
from semsearch.cli.app import app
from semsearch.cli.common import EXIT_CODES, exit_code
from semsearch.evaluation import InvalidDataset
from semsearch.health import quarantine
from semsearch.schema import SchemaConflict

runner = CliRunner()
DOCS = Path(__file__).resolve().parents[2] / "docs" / "cli.md"


@pytest.fixture(autouse=True)
def fake_model(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SEMSEARCH_MODEL", "fake:32")


@pytest.fixture
def index(tmp_path: Path) -> str:
    """An index with a `notes` collection of two notes, built with fake:32."""
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "owls.md").write_text("# Owls\n\nOwls hunt at night.\n")
    (notes / "bread.md").write_text("# Bread\n\nKnead the dough twice.\n")
    path = str(tmp_path / "n.embed.db")
    result = runner.invoke(app, ["index", str(notes), "--index", path])
    assert result.exit_code == 0, result.output
    return path


def _documented_codes() -> dict[str, int]:
    """{error class name: exit code} from the table in docs/cli.md."""
    codes: dict[str, int] = {}
    for line in DOCS.read_text().splitlines():
        row = re.match(r"\| (\d+) \|.*\| (.*) \|$", line)
        if row:
            for name in re.findall(r"`(\w+)`", row.group(2)):
                codes[name] = int(row.group(1))
    return codes


def test_the_documented_table_matches_the_mapping() -> None:
    documented = _documented_codes()
    assert documented.pop("SemsearchError") == 1
    assert documented == {cls.__name__: code for cls, code in EXIT_CODES.items()}
    assert len(set(EXIT_CODES.values())) == 7  # seven families, codes 3..9
    assert 2 not in EXIT_CODES.values()  # 2 stays typer's usage error


@pytest.mark.parametrize(
    ("exc", "code"),
    [
        (errors.IndexNotFound("x"), 3),
        (InvalidDataset("x"), 4),  # a subclass of InvalidQuery takes its family's code
        (SchemaConflict("x"), 5),
        (errors.DimensionMismatch("x"), 5),
        (errors.NotAnIndex("x"), 7),
        (errors.StoreCorrupted("x"), 7),
        (errors.EmbedderUnavailable("x"), 8),
        (errors.IndexUnhealthy("x"), 9),
        (errors.SemsearchError("x"), 1),
    ],
)
def test_exit_code_per_family(exc: errors.SemsearchError, code: int) -> None:
    assert exit_code(exc) == code


def test_usage_error_exits_2(index: str) -> None:
    result = runner.invoke(app, ["search", "owls", "--index", index, "--no-such-option"])
    assert result.exit_code == 2


def test_missing_index_exits_3(tmp_path: Path) -> None:
    result = runner.invoke(app, ["search", "owls", "--index", str(tmp_path / "no.embed.db")])
    assert result.exit_code == 3 and "semsearch index" in result.output


def test_bad_limit_exits_4(index: str) -> None:
    result = runner.invoke(app, ["search", "owls", "--index", index, "--limit", "0"])
    assert result.exit_code == 4 and "limit" in result.output


def test_model_mismatch_exits_5_for_semantic_but_keyword_search_works_fake_embedder(
    index: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SEMSEARCH_MODEL", "fake:16")
    for mode in ("semantic", "hybrid"):
        result = runner.invoke(app, ["search", "owls", "--index", index, "--mode", mode])
        assert result.exit_code == 5, result.output
        assert "fake:32" in result.output and "fake:16" in result.output
    keyword = runner.invoke(
        app, ["search", "owls", "--index", index, "--mode", "keyword", "--json"]
    )
    assert keyword.exit_code == 0, keyword.output
    assert [hit["id"] for hit in json.loads(keyword.output)["hits"]] == ["owls.md"]


def test_schema_conflict_exits_5(tmp_path: Path) -> None:
    data = tmp_path / "items.json"
    data.write_text(json.dumps([{"id": "a", "text": "owl", "level": 1}]))
    index = str(tmp_path / "i.embed.db")
    base = ["import", str(data), "-c", "items", "--index", index, "--field"]
    assert runner.invoke(app, [*base, "level:int"]).exit_code == 0
    data.write_text(json.dumps([{"id": "a", "text": "owl", "level": "one"}]))
    result = runner.invoke(app, [*base, "level:str"])  # valid data, conflicting type
    assert result.exit_code == 5 and "level" in result.output


def test_unknown_backend_exits_6() -> None:
    result = runner.invoke(app, ["search", "owls", "--index", "mysql://localhost/x"])
    assert result.exit_code == 6 and "supported locations" in result.output


def test_a_plain_sqlite_file_exits_7_and_is_left_unchanged(tmp_path: Path) -> None:
    path = tmp_path / "other.embed.db"
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE t (x)")
    before = path.read_bytes()
    result = runner.invoke(app, ["search", "owls", "--index", str(path)])
    assert result.exit_code == 7 and "not a semsearch index" in result.output
    assert path.read_bytes() == before


def test_an_embedder_that_cannot_load_exits_8(tmp_path: Path, monkeypatch) -> None:
    index, folder = str(tmp_path / "m.embed.db"), tmp_path / "no-such-model"
    folder.mkdir()
    (folder / "config.json").write_text("{}")  # passes the check at creation, never loaded
    with semsearch.connect(index) as db:  # nothing loads the model until a text is embedded
        db.collection("notes", embedder=f"local:{folder}")
    (folder / "config.json").unlink()
    folder.rmdir()  # the model folder went away after the index was built
    monkeypatch.delenv("SEMSEARCH_MODEL")  # use the stored model, which is missing
    result = runner.invoke(app, ["search", "owls", "--index", index])
    assert result.exit_code == 8, result.output
    assert "no-such-model" in result.output


def test_a_quarantined_index_exits_9_for_semantic_search_fake_embedder(index: str) -> None:
    with semsearch.connect(index) as db:
        quarantine(db.store, "notes", "the embedder failed mid-batch")
    result = runner.invoke(app, ["search", "owls", "--index", index])
    assert result.exit_code == 9, result.output
    keyword = runner.invoke(app, ["search", "owls", "--index", index, "--mode", "keyword"])
    assert keyword.exit_code == 0, keyword.output


def _import(data: Path, index: str, *extra: str) -> object:
    return runner.invoke(app, ["import", str(data), "-c", "items", "--index", index, *extra])


def test_import_keeps_missing_records_unless_delete_missing_fake_embedder(
    tmp_path: Path,
) -> None:
    data = tmp_path / "items.json"
    index = str(tmp_path / "i.embed.db")
    data.write_text(json.dumps([{"id": k, "text": f"item {k}"} for k in ("a", "b", "c")]))
    assert _import(data, index).exit_code == 0
    data.write_text(json.dumps([{"id": "a", "text": "item a"}, {"id": "d", "text": "item d"}]))
    kept = _import(data, index)
    assert kept.exit_code == 0 and "deleted" not in kept.output
    with semsearch.connect(index) as db:
        assert db.collection("items").ids() == ["a", "b", "c", "d"]  # upsert: nothing deleted
    mirrored = _import(data, index, "--delete-missing")
    assert mirrored.exit_code == 0, mirrored.output
    assert "0 new, 0 changed, 2 unchanged, 2 deleted" in mirrored.output
    with semsearch.connect(index) as db:
        coll = db.collection("items")
        assert coll.ids() == ["a", "d"]
        assert coll.search("item", mode="keyword").ids == ["a", "d"]  # gone from search too


def test_delete_missing_refuses_an_empty_file_and_a_bad_file_deletes_nothing_fake_embedder(
    tmp_path: Path,
) -> None:
    data = tmp_path / "items.json"
    index = str(tmp_path / "i.embed.db")
    data.write_text(json.dumps([{"id": k, "text": f"item {k}"} for k in ("a", "b")]))
    assert _import(data, index).exit_code == 0
    data.write_text("[]")
    empty = _import(data, index, "--delete-missing")
    assert empty.exit_code != 0 and "refusing to delete all 2 records" in empty.output
    # a lone surrogate in the last record: the whole file is refused before any write
    data.write_text('[{"id": "a", "text": "new a"}, {"id": "z", "text": "bad \\ud800"}]')
    bad = _import(data, index, "--delete-missing")
    assert bad.exit_code == 4 and "'z'" in bad.output and "surrogate" in bad.output
    with semsearch.connect(index) as db:
        coll = db.collection("items")
        assert coll.ids() == ["a", "b"] and coll.get("a")[0].text == "item a"


@pytest.mark.parametrize(
    "last",
    [{"id": "r0", "text": "the same id again"}, {"id": "r599", "text": "bad \ud800 text"}],
    ids=["duplicate-id", "surrogate"],
)
def test_a_bad_record_in_a_later_batch_writes_no_earlier_batch_fake_embedder(
    tmp_path: Path, last: dict[str, str]
) -> None:
    records = [{"id": f"r{i}", "text": f"record {i}"} for i in range(599)] + [last]
    data = tmp_path / "many.jsonl"  # 600 records: more than one import batch (512)
    data.write_text("\n".join(json.dumps(r) for r in records) + "\n")
    index = tmp_path / "i.embed.db"
    result = _import(data, str(index))
    assert result.exit_code == 4, result.output
    assert "r0" in result.output or "r599" in result.output
    assert not index.exists()  # validated before the index was even created
