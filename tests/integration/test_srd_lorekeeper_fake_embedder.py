"""The D&D recipe by the LoreKeeper conventions (issue 46, item 16), on the real SRD files.

- the creatures collection is named ``creatures``; an index built with ``monsters`` (the earlier
  recipe) still opens and searches;
- every record's ``document`` field names its source book, ``srd-5e``;
- equipment and magic items have ``item_type`` and ``rarity`` where the data holds them;
- a creature's text holds each special ability's and action's description, not only its name.

Real SRD data (../shared/data/dnd5e_srd, skipped where absent, a failure under CI=true); the
deterministic fake embedder, because these are fields, filters and texts, not meaning (the real
model's test of finding a creature by what it does is in test_srd_entities.py). Every expected
value is read from the JSON files here.
"""

from __future__ import annotations

import json
import unicodedata
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

import semsearch
from semsearch.cli.app import app
from semsearch.sources.srd import SRD_DOCUMENT, load_srd, open_srd
from tests.conftest import shared_path

FILES = {
    "spells": "5e-SRD-Spells.json",
    "creatures": "5e-SRD-Monsters.json",
    "equipment": "5e-SRD-Equipment.json",
    "magic_items": "5e-SRD-Magic-Items.json",
}


@pytest.fixture(scope="module")
def srd_dir() -> Path:
    return shared_path("dnd5e_srd")


@pytest.fixture(scope="module")
def data(srd_dir: Path) -> dict[str, list[dict[str, Any]]]:
    return {name: json.loads((srd_dir / file).read_text()) for name, file in FILES.items()}


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory, srd_dir: Path):
    database = semsearch.connect(tmp_path_factory.mktemp("srd") / "dnd.embed.db")
    load_srd(database, srd_dir, embedder="fake:32")
    yield database
    database.close()


def _ids(records: list[dict[str, Any]], keep) -> set[str]:  # type: ignore[no-untyped-def]
    return {r["index"] for r in records if keep(r)}


def test_collections_are_named_by_the_lorekeeper_conventions_fake_embedder(db, data) -> None:
    assert db.collections() == ["creatures", "equipment", "magic_items", "spells"]
    for name, records in data.items():
        assert db.collection(name).count() == len(records)


def test_every_record_names_its_source_book_fake_embedder(db, data) -> None:
    assert SRD_DOCUMENT == "srd-5e"
    for name, records in data.items():
        coll = db.collection(name)
        found = {r.id for r in coll.find({"document": "srd-5e"}, limit=10_000)}
        assert found == {r["index"] for r in records}, name
        assert coll.find({"document": {"$ne": "srd-5e"}}, limit=10) == []


@pytest.mark.parametrize("name", ["equipment", "magic_items"])
def test_items_have_item_type_and_rarity_where_the_data_holds_them_fake_embedder(
    db, data, name
) -> None:
    records, coll = data[name], db.collection(name)
    kinds = {r["equipment_category"]["name"] for r in records}
    assert len(kinds) >= 5  # Weapon, Armor, ... (each a filter below)
    for kind in kinds:
        expected = _ids(records, lambda r, k=kind: r["equipment_category"]["name"] == k)
        assert {r.id for r in coll.find({"item_type": kind}, limit=10_000)} == expected, kind
    rarities = {r["rarity"]["name"] for r in records if "rarity" in r}
    for rarity in rarities:
        expected = _ids(records, lambda r, k=rarity: r.get("rarity", {}).get("name") == k)
        assert {r.id for r in coll.find({"rarity": rarity}, limit=10_000)} == expected, rarity
    if name == "magic_items":
        assert {"Legendary", "Rare", "Common"} <= rarities
    else:  # the SRD's mundane equipment holds no rarity: the field is declared and empty
        assert rarities == set()
        assert coll.find({"rarity": {"$in": ["Common", "Rare"]}}, limit=10) == []


def test_creature_text_holds_each_ability_and_action_description_fake_embedder(db, data) -> None:
    stored = {r.id: r.text for r in db.collection("creatures").find(None, limit=10_000)}
    checked = 0
    for creature in data["creatures"]:
        text = stored[creature["index"]]
        for part in creature.get("special_abilities", []) + creature.get("actions", []):
            assert part["name"] in text, (creature["index"], part["name"])
            desc = unicodedata.normalize("NFC", part["desc"].strip())
            assert desc in text, (creature["index"], part["name"])
            checked += 1
    assert checked > 1000  # the SRD's 334 creatures have well over a thousand of them


def test_an_index_built_with_monsters_still_opens_and_searches_fake_embedder(
    tmp_path: Path, srd_dir: Path, data, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the earlier recipe's command, as docs/recipes/dnd5e.md gave it
    monkeypatch.setenv("SEMSEARCH_MODEL", "fake:32")
    index = tmp_path / "old.embed.db"
    done = CliRunner().invoke(app, [
        "import", str(srd_dir / "5e-SRD-Monsters.json"), "--collection", "monsters",
        "--id-field", "index", "--text", "name", "--text", "desc", "--text", "type",
        "--text", "actions.name", "--text", "special_abilities.name",
        "--field", "challenge_rating:float", "--field", "type:str", "--field", "size:str",
        "--field", "alignment:str", "--index", str(index),
    ])  # fmt: skip
    assert done.exit_code == 0, done.output
    undead = _ids(data["creatures"], lambda r: r["type"] == "undead")
    with semsearch.connect(index) as old:
        monsters = old.collection("monsters")
        assert {r.id for r in monsters.find({"type": "undead"}, limit=1000)} == undead
        assert monsters.search("goblin", mode="keyword", limit=1).ids == ["goblin"]
        creatures = open_srd(old, "creatures")  # the new name reads the old collection
        assert creatures.name == "monsters" and creatures.count() == len(data["creatures"])
        assert creatures.search("goblin", mode="keyword", limit=1).ids == ["goblin"]
    done = CliRunner().invoke(
        app, ["search", "goblin", "-c", "monsters", "--mode", "keyword", "--index", str(index)]
    )
    assert done.exit_code == 0 and "goblin" in done.stdout, done.output


def test_open_srd_prefers_the_new_name_and_refuses_an_unknown_one_fake_embedder(db) -> None:
    assert open_srd(db, "creatures").name == "creatures"
    with pytest.raises(semsearch.IndexNotFound):
        open_srd(db, "dragons")
    with pytest.raises(semsearch.SemsearchError, match="creatures"):
        load_srd(db, shared_path("dnd5e_srd"), ("monsters",))  # renamed: the hint says so
