"""Import specs for the D&D 5e SRD entity cache (spells, monsters, equipment, magic items).

Each spec names the SRD file, the id field, the text template and the filterable fields, so the
library, the CLI recipe in docs/recipes/dnd5e.md and the tests build the same collections.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from semsearch.collection import Collection
from semsearch.database import Database
from semsearch.embedders.base import Embedder
from semsearch.results import UpsertReport
from semsearch.schema import Schema
from semsearch.sources.records import import_file

__all__ = ["SRD_COLLECTIONS", "SrdSpec", "load_srd"]


@dataclass(frozen=True)
class SrdSpec:
    """One SRD collection: source file, schema (fields + text template)."""

    file: str
    schema: Schema
    id_field: str = "index"


SRD_COLLECTIONS: dict[str, SrdSpec] = {
    "spells": SrdSpec(
        "5e-SRD-Spells.json",
        Schema.from_types(
            {
                "level": "int",
                "school": "str=school.name",
                "concentration": "bool",
                "ritual": "bool",
                "classes": "list[str]=classes.name",
            },
            text=("name", "desc", "higher_level"),
        ),
    ),
    "monsters": SrdSpec(
        "5e-SRD-Monsters.json",
        Schema.from_types(
            {"challenge_rating": "float", "type": "str", "size": "str", "alignment": "str"},
            text=("name", "desc", "type", "actions.name", "special_abilities.name"),
        ),
    ),
    "equipment": SrdSpec(
        "5e-SRD-Equipment.json",
        Schema.from_types(
            {"equipment_category": "str=equipment_category.name", "weapon_category": "str"},
            text=("name", "equipment_category.name", "weapon_category", "desc", "properties.name"),
        ),
    ),
    "magic_items": SrdSpec(
        "5e-SRD-Magic-Items.json",
        Schema.from_types({"rarity": "str=rarity.name"}, text=("name", "desc")),
    ),
}


def load_srd(
    db: Database,
    srd_dir: str | Path,
    names: tuple[str, ...] = tuple(SRD_COLLECTIONS),
    *,
    embedder: str | Embedder | None = None,
) -> dict[str, tuple[Collection, UpsertReport]]:
    """Import SRD files from ``srd_dir`` into collections named after :data:`SRD_COLLECTIONS`."""
    out = {}
    for name in names:
        spec = SRD_COLLECTIONS[name]
        coll = db.collection(name, schema=spec.schema, embedder=embedder)
        out[name] = (coll, import_file(coll, Path(srd_dir) / spec.file, id_field=spec.id_field))
    return out
