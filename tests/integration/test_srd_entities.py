"""A real D&D 5e entity cache: typed filters ranked by meaning, with the real model."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

import semsearch
from semsearch.sources.srd import SRD_DOCUMENT, load_srd
from tests.conftest import shared_path

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def srd_dir() -> Path:
    return shared_path("dnd5e_srd")


@pytest.fixture(scope="module")
def srd(tmp_path_factory: pytest.TempPathFactory, srd_dir: Path, minilm) -> semsearch.Database:
    db = semsearch.connect(tmp_path_factory.mktemp("srd") / "srd.embed.db")
    load_srd(db, srd_dir, ("spells", "creatures"), embedder=minilm)
    return db


def test_healing_spells_at_level_1_put_cure_wounds_first(srd: semsearch.Database) -> None:
    spells = srd.collection("spells")
    result = spells.search("spells that heal wounds", where={"level": 1}, limit=5)
    assert result.ids[0] == "cure-wounds"
    assert all(hit.fields["level"] == 1 for hit in result)


def test_life_draining_undead_up_to_cr_5(srd: semsearch.Database, srd_dir: Path) -> None:
    creatures = srd.collection("creatures")
    result = creatures.search(
        "undead monsters that drain life", where={"challenge_rating_max": 5}, limit=3
    )
    assert len(result) == 3
    source = {m["index"]: m for m in json.loads((srd_dir / "5e-SRD-Monsters.json").read_text())}
    for hit in result:
        assert source[hit.id]["challenge_rating"] <= 5
        assert source[hit.id]["type"] == "undead"


def test_find_level_9_spells_is_exact(srd: semsearch.Database, srd_dir: Path) -> None:
    spells = json.loads((srd_dir / "5e-SRD-Spells.json").read_text())
    expected = {s["index"] for s in spells if s["level"] == 9}
    found = srd.collection("spells").find({"level": 9}, limit=1000)
    assert {r.id for r in found} == expected
    assert len(expected) == sum(1 for s in spells if s["level"] == 9) > 0


def test_reimport_changes_nothing_and_field_change_is_not_reembedded(
    srd: semsearch.Database, srd_dir: Path, tmp_path: Path
) -> None:
    spells = srd.collection("spells")
    again = load_srd(srd, srd_dir, ("spells",))["spells"][1]
    assert (again.added, again.updated, again.chunks_embedded) == (0, 0, 0)
    assert again.unchanged == 319
    data = json.loads((srd_dir / "5e-SRD-Spells.json").read_text())
    fireball = next(s for s in data if s["index"] == "fireball")
    fireball["ritual"] = True  # a non-text field
    changed = tmp_path / "spells.json"
    changed.write_text(json.dumps(data))
    from semsearch.sources.records import import_file

    report = import_file(spells, changed, id_field="index", constants={"document": SRD_DOCUMENT})
    assert (report.updated, report.chunks_embedded) == (1, 0)
    assert "fireball" in {r.id for r in spells.find({"ritual": True}, limit=1000)}
    assert spells.get("fireball")[0].fields["ritual"] is True


# Issue 46, item 16: a creature is found by what it does, described in its special abilities
# and actions, not only by its name and type. Each query paraphrases descriptions; the expected
# creatures are those whose ability or action description matches the pattern (read from the
# JSON here, not from any search). With names alone in the text, none of these came first.
DOES = [
    (
        "a creature whose touch gives a disease so that you can only breathe underwater",
        r"diseased.{0,300}breathe only underwater",
        1,
    ),
    ("monster that dissolves wooden weapons that strike it", r"corrode", 3),
    ("a creature whose bite turns its victim to stone", r"petrif", 2),
]


@pytest.mark.parametrize(("query", "pattern", "top"), DOES, ids=[q for q, _, _ in DOES])
def test_a_creature_is_found_by_what_it_does(
    srd: semsearch.Database, srd_dir: Path, query: str, pattern: str, top: int
) -> None:
    creatures = json.loads((srd_dir / "5e-SRD-Monsters.json").read_text())
    expected = {
        c["index"]
        for c in creatures
        for part in c.get("special_abilities", []) + c.get("actions", [])
        if re.search(pattern, part.get("desc", ""), re.I | re.S)
    }
    assert 1 <= len(expected) <= 5, expected  # the pattern picks out what the query describes
    result = srd.collection("creatures").search(query, limit=top)
    assert len(result) == top and set(result.ids) <= expected, (result.ids, expected)
