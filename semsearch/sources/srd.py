"""Import specs for the D&D 5e SRD entity cache (spells, creatures, equipment, magic items).

Each spec names the SRD file, the id field, the text template and the filterable fields, so the
library, the CLI recipe in docs/recipes/dnd5e.md and the tests build the same collections. They
follow the LoreKeeper conventions: the collections are ``spells``, ``creatures``, ``equipment``
and ``magic_items``; every record's ``document`` field names its source book
(:data:`SRD_DOCUMENT`); equipment and magic items have ``item_type`` (the equipment category)
and ``rarity`` where the data holds them (the SRD gives a rarity to magic items only); a
creature's text holds each special ability's and action's name and description, so a creature
is found by what it does.

An index built by the earlier recipe, whose creatures collection is ``monsters``, still opens
and searches under that name (its schema is stored with it); :func:`open_srd` reads it when
asked for ``creatures``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from semsearch.collection import Collection
from semsearch.database import Database
from semsearch.embedders.base import Embedder
from semsearch.errors import SemsearchError
from semsearch.results import UpsertReport
from semsearch.schema import Schema
from semsearch.sources.records import import_file

__all__ = ["FORMER_NAMES", "SRD_COLLECTIONS", "SRD_DOCUMENT", "SrdSpec", "load_srd", "open_srd"]

#: The source book of every record of these files: the ``document`` field's value.
SRD_DOCUMENT = "srd-5e"

#: Names an earlier recipe gave a collection (current name -> earlier name).
FORMER_NAMES = {"creatures": "monsters"}


@dataclass(frozen=True)
class SrdSpec:
    """One SRD collection: source file, schema (fields + text template)."""

    file: str
    schema: Schema
    id_field: str = "index"


def _schema(fields: dict[str, str], text: tuple[str, ...]) -> Schema:
    return Schema.from_types({**fields, "document": "str"}, text=text)


_ITEM_FIELDS = {"item_type": "str=equipment_category.name", "rarity": "str=rarity.name"}

SRD_COLLECTIONS: dict[str, SrdSpec] = {
    "spells": SrdSpec(
        "5e-SRD-Spells.json",
        _schema(
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
    "creatures": SrdSpec(
        "5e-SRD-Monsters.json",
        _schema(
            {"challenge_rating": "float", "type": "str", "size": "str", "alignment": "str"},
            text=(
                "name",
                "desc",
                "type",
                "special_abilities.name",
                "special_abilities.desc",
                "actions.name",
                "actions.desc",
            ),
        ),
    ),
    "equipment": SrdSpec(
        "5e-SRD-Equipment.json",
        _schema(
            {
                "equipment_category": "str=equipment_category.name",
                "weapon_category": "str",
                **_ITEM_FIELDS,
            },
            text=("name", "equipment_category.name", "weapon_category", "desc", "properties.name"),
        ),
    ),
    "magic_items": SrdSpec(
        "5e-SRD-Magic-Items.json", _schema(dict(_ITEM_FIELDS), text=("name", "desc"))
    ),
}


def load_srd(
    db: Database,
    srd_dir: str | Path,
    names: tuple[str, ...] = tuple(SRD_COLLECTIONS),
    *,
    embedder: str | Embedder | None = None,
) -> dict[str, tuple[Collection, UpsertReport]]:
    """Import SRD files from ``srd_dir`` into collections named after :data:`SRD_COLLECTIONS`,
    each record's ``document`` set to :data:`SRD_DOCUMENT`.

    Returns:
        ``{name: (collection, report)}`` in the order of ``names``.
    Raises:
        SemsearchError: a name that is not an SRD collection (``monsters`` is now
            ``creatures``).
        SchemaConflict: the index holds a collection of that name with another schema.
        InvalidRecord: as :func:`semsearch.sources.records.import_file`.
    """
    out = {}
    for name in names:
        spec = _spec(name)
        coll = db.collection(name, schema=spec.schema, embedder=embedder)
        report = import_file(
            coll, Path(srd_dir) / spec.file, id_field=spec.id_field,
            constants={"document": SRD_DOCUMENT},
        )  # fmt: skip
        out[name] = (coll, report)
    return out


def open_srd(db: Database, name: str, *, embedder: str | Embedder | None = None) -> Collection:
    """Open the SRD collection ``name`` of an index built before: the collection of that name,
    else the one the earlier recipe named (:data:`FORMER_NAMES`: ``monsters`` for
    ``creatures``), with its stored schema.

    Raises:
        IndexNotFound: neither exists (the hint lists the index's collections).
        ModelMismatch: as :meth:`semsearch.Database.collection`.
    """
    former = FORMER_NAMES.get(name)
    if former is not None and name not in db.collections() and former in db.collections():
        name = former
    return db.collection(name, create=False, embedder=embedder)


def _spec(name: str) -> SrdSpec:
    spec = SRD_COLLECTIONS.get(name)
    if spec is None:
        renamed = {old: new for new, old in FORMER_NAMES.items()}.get(name)
        raise SemsearchError(
            f"no SRD collection {name!r}" + (f": it is now {renamed!r}" if renamed else ""),
            hint=f"SRD collections: {', '.join(SRD_COLLECTIONS)}",
        )
    return spec
