"""`semsearch import` and search filters on the CLI (fake embedder: plumbing only)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from semsearch.cli.app import app

runner = CliRunner()
ITEMS = [
    {
        "sku": "a1",
        "name": "Navy school blazer",
        "desc": "Dark wool blazer",
        "price": 49.5,
        "tags": ["uniform"],
    },
    {
        "sku": "b2",
        "name": "Grey hoodie",
        "desc": "Cotton hooded sweatshirt",
        "price": 20,
        "tags": ["casual"],
    },
    {"sku": "c3", "name": "Lunch box", "desc": "Blue plastic lunch box", "price": 8, "tags": []},
]
FIELDS = ["--field", "price:float", "--field", "tags:list[str]"]


@pytest.fixture(autouse=True)
def fake_model(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SEMSEARCH_MODEL", "fake:32")


def run(*args: str) -> object:
    return runner.invoke(app, list(args))


def test_import_json_twice_then_filtered_search(tmp_path: Path) -> None:
    data = tmp_path / "items.json"
    data.write_text(json.dumps(ITEMS))
    index = str(tmp_path / "i.embed.db")
    base = [
        "import",
        str(data),
        "-c",
        "items",
        "--id-field",
        "sku",
        "--text",
        "name",
        "--text",
        "desc",
        *FIELDS,
        "--index",
        index,
    ]
    first = run(*base)
    assert first.exit_code == 0, first.output
    assert "records: 3 new, 0 changed, 0 unchanged" in first.output
    second = run(*base)
    assert "records: 0 new, 0 changed, 3 unchanged; chunks embedded: 0" in second.output

    found = run(
        "search",
        "blazer",
        "-c",
        "items",
        "--mode",
        "keyword",
        "--filter",
        "price_max=30",
        "--index",
        index,
        "--json",
    )
    assert found.exit_code == 0, found.output
    assert json.loads(found.stdout)["hits"] == []  # the blazer costs 49.5
    cheap = run(
        "search", "", "-c", "items", "--where", '{"price": {"$lt": 30}}', "--index", index, "--json"
    )
    doc = json.loads(cheap.stdout)
    assert doc["mode"] == "structured" and sorted(h["id"] for h in doc["hits"]) == ["b2", "c3"]
    tagged = run(
        "search", "", "-c", "items", "--filter", "tags=uniform", "--index", index, "--json"
    )
    assert [h["id"] for h in json.loads(tagged.stdout)["hits"]] == ["a1"]

    bad = run("search", "x", "-c", "items", "--filter", "price=cheap", "--index", index)
    assert bad.exit_code == 4 and "not a float" in bad.output
    unknown = run("search", "x", "-c", "items", "--filter", "colour=red", "--index", index)
    assert unknown.exit_code == 4 and "price" in unknown.output  # lists the valid fields


def test_csv_cells_are_typed_and_a_bad_cell_writes_nothing(tmp_path: Path) -> None:
    index = str(tmp_path / "c.embed.db")
    good = tmp_path / "good.csv"
    good.write_text("sku,name,price,tags\nx1,Red scarf,12.5,winter;wool\nx2,Sun hat,9,summer\n")
    result = run(
        "import",
        str(good),
        "-c",
        "c",
        "--id-field",
        "sku",
        "--text",
        "name",
        *FIELDS,
        "--index",
        index,
    )
    assert result.exit_code == 0, result.output
    listing = run("search", "", "-c", "c", "--filter", "tags=wool", "--index", index, "--json")
    assert [h["id"] for h in json.loads(listing.stdout)["hits"]] == ["x1"]

    bad = tmp_path / "bad.csv"
    bad.write_text("sku,name,price\ny1,Gloves,4\ny2,Mittens,four\n")
    failed = run(
        "import",
        str(bad),
        "-c",
        "c",
        "--id-field",
        "sku",
        "--text",
        "name",
        *FIELDS,
        "--index",
        index,
    )
    assert failed.exit_code == 4
    assert "CSV line 3" in failed.output and "'price'" in failed.output
    stats = json.loads(run("stats", "--index", index, "--json").stdout)
    assert stats["collections"][0]["records"] == 2  # nothing from the bad file was written


def test_bad_inputs_are_clear_errors(tmp_path: Path) -> None:
    index = str(tmp_path / "e.embed.db")
    broken = tmp_path / "broken.jsonl"
    broken.write_text('{"id": "a", "text": "ok"}\n{"id": "b", "text": \n')
    result = run("import", str(broken), "-c", "e", "--index", index)
    assert result.exit_code != 0 and "line 2" in result.output and "Traceback" not in result.output
    no_type = run("import", str(broken), "-c", "e", "--field", "level", "--index", index)
    assert no_type.exit_code != 0 and "NAME:TYPE" in no_type.output
    missing_id = tmp_path / "noid.json"
    missing_id.write_text(json.dumps([{"name": "x"}]))
    result = run("import", str(missing_id), "-c", "e", "--id-field", "sku", "--index", index)
    assert result.exit_code == 4 and "'sku'" in result.output


def test_import_set_gives_every_record_a_field_fake_embedder(tmp_path: Path) -> None:
    data = tmp_path / "items.json"
    data.write_text(json.dumps([{**ITEMS[0], "shop": "old"}, *ITEMS[1:]]))
    index = str(tmp_path / "i.embed.db")
    base = ["import", str(data), "-c", "items", "--id-field", "sku", "--text", "name"]
    done = run(*base, "--field", "shop:str", "--set", "shop=uniform-shop", "--index", index)
    assert done.exit_code == 0, done.output
    found = run("search", "", "-c", "items", "--where", '{"shop": "uniform-shop"}', "--json",
                "--index", index)  # fmt: skip
    assert sorted(h["id"] for h in json.loads(found.stdout)["hits"]) == ["a1", "b2", "c3"]
    for bad, words in (("shop", "NAME=VALUE"), ("=x", "NAME=VALUE"), ("id=z", "record id")):
        refused = run(*base, "--set", bad, "--index", index)
        assert refused.exit_code != 0 and words in refused.output, refused.output
