"""`semsearch import` of malformed files, and CLI filters no store can run: a clean error naming
the problem, never a traceback, and nothing written. Plumbing tests with the fake embedder
(``fake:32``)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

import semsearch
from semsearch.cli.app import app
from semsearch.sources.records import CSV_FIELD_LIMIT, read_records

runner = CliRunner()


@pytest.fixture(autouse=True)
def fake_model(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SEMSEARCH_MODEL", "fake:32")


def import_cli(tmp_path: Path, file: Path) -> tuple[int, str]:
    index = tmp_path / "x.embed.db"
    args = ["import", str(file), "-c", "t", "--text", "name", "--index", str(index)]
    result = runner.invoke(app, args)
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    assert "Traceback" not in result.output
    return result.exit_code, result.output


CASES = {
    # name: (file content, words the error must contain)
    "latin1.csv": (b"id,name\na,caf\xe9\n", ["not UTF-8", "0xe9", "line 2", "iconv"]),
    "latin1.jsonl": (b'{"id":"a","name":"x"}\n{"id":"b","name":"caf\xe9"}\n', ["line 2"]),
    "latin1.json": (b'[{"id":"a","name":"caf\xe9"}]', ["not UTF-8", "line 1"]),
    "dup.csv": (b"id,id\na,b\n", ["'id'", "more than once"]),
    "quote.csv": (b'id,name\na,x\nb,"caf\nc,z\n', ["line 3", "unexpected end of data"]),
    "after.csv": (b'id,name\na,"x"y\n', ["line 2"]),
    # before: the cells past the header's columns were dropped without a word
    "extra.csv": (b"id,name,desc\nx1,a,b\nx2,a,b,c,d\n", ["line 3", "5 cells", "3 columns"]),
    "deep.json": (b"[" * 100_000 + b"]" * 100_000, ["too deep"]),
    "deep.jsonl": (b'{"id":"a","x":' + b"[" * 100_000 + b"]" * 100_000 + b"}\n", ["too deep"]),
    "deep9.jsonl": (b'{"id":"deep9","name":"x","x":' + b"[" * 900 + b"]" * 900 + b"}\n", ["32"]),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_fake_embedder_malformed_file_is_a_clean_error(tmp_path: Path, name: str) -> None:
    content, words = CASES[name]
    file = tmp_path / name
    file.write_bytes(content)
    code, output = import_cli(tmp_path, file)
    assert code != 0 and "error:" in output and "hint:" in output
    for word in words:
        assert word in output
    assert not (tmp_path / "x.embed.db").exists()  # validated before anything is created


def test_fake_embedder_folder_named_like_a_file_is_said_to_be_a_folder(tmp_path: Path) -> None:
    (tmp_path / "dir.json").mkdir()
    code, output = import_cli(tmp_path, tmp_path / "dir.json")
    assert code != 0 and "is a folder" in output and "no such file" not in output


def test_fake_embedder_a_short_csv_row_leaves_its_missing_cells_empty(tmp_path: Path) -> None:
    rows = list(read_records(_write(tmp_path / "short.csv", b"id,name,desc\nx8,a\nx9,b,\n")))
    assert rows == [{"id": "x8", "name": "a"}, {"id": "x9", "name": "b"}]  # no desc: null


def _write(path: Path, content: bytes) -> Path:
    path.write_bytes(content)
    return path


def test_fake_embedder_long_csv_cells_import_up_to_the_limit(tmp_path: Path) -> None:
    long = "y" * 200_000  # above Python's default csv limit of 131,072
    file = tmp_path / "long.csv"
    file.write_text(f"id,name\na,x\nb,{long}\n", encoding="utf-8")
    code, output = import_cli(tmp_path, file)
    assert code == 0, output
    with semsearch.connect(tmp_path / "x.embed.db") as db:
        assert db.collection("t").get("b")[0].text == long
    too_long = tmp_path / "too_long.csv"
    too_long.write_text(f"id,name\na,{'z' * (CSV_FIELD_LIMIT + 1)}\n", encoding="utf-8")
    with pytest.raises(semsearch.SemsearchError) as info:
        read_records(too_long)
    assert "line 2" in info.value.message and f"{CSV_FIELD_LIMIT:,}" in (info.value.hint or "")


def test_fake_embedder_csv_and_jsonl_still_accept_bom_and_crlf(tmp_path: Path) -> None:
    csv_file = tmp_path / "bom.csv"
    csv_file.write_bytes(b'\xef\xbb\xbfid,name\r\na,"caf\xc3\xa9, au lait"\r\n')
    assert read_records(csv_file) == [{"id": "a", "name": "café, au lait"}]
    jsonl = tmp_path / "crlf.jsonl"
    jsonl.write_bytes(b'\xef\xbb\xbf{"id":"a","name":"x\\u2028y"}\r\n\r\n{"id":"b"}\r\n')
    assert read_records(jsonl) == [{"id": "a", "name": "x\u2028y"}, {"id": "b"}]


@pytest.mark.parametrize(
    ("option", "words"),
    [
        (["--filter", "popularity_min=99999999999999999999999"], ["64-bit integer range"]),
        (["--filter", "price=nan"], ["finite"]),
        (["--where", json.dumps({"$or": [{"$and": [{"price": 1.5}]}]})], []),
        (["--where", "{" + '"$and":[{' * 100 + '"price":1' + "}]" * 100 + "}"], ["levels deep"]),
    ],
)
def test_fake_embedder_cli_filters_no_store_can_run_are_clean_errors(
    tmp_path: Path, option: list[str], words: list[str]
) -> None:
    file = tmp_path / "p.jsonl"
    file.write_text('{"id": "a", "name": "lamp", "price": 1.5, "popularity": 3}\n')
    index = str(tmp_path / "p.embed.db")
    fields = ["--field", "price:float", "--field", "popularity:int"]
    args = ["import", str(file), "-c", "p", "--text", "name", *fields, "--index", index]
    assert runner.invoke(app, args).exit_code == 0
    result = runner.invoke(app, ["search", "lamp", "-c", "p", "--index", index, *option])
    assert "Traceback" not in result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)
    if not words:  # a nested filter inside the limit still runs
        assert result.exit_code == 0, result.output
        return
    assert result.exit_code != 0 and "error:" in result.output and "hint:" in result.output
    for word in words:
        assert word in result.output
