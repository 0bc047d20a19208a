"""A small hand-made collection for the contract suite, with expected filter results.

Every field type is declared, and some records lack some fields, so absent-field semantics are
exercised. The expected ids below were worked out by hand from the table, not by running code:

    id        level school       ritual weight classes
    alarm     1     abjuration   True   0.5    wizard, ranger
    cure      1     evocation    False  -      cleric, druid
    detect    1     divination   True   -      wizard, cleric, druid
    fireball  3     evocation    False  1.5    wizard, sorcerer
    light     0     evocation    False  0.0    wizard, cleric
    note      -     -            -      -      -
    wish      9     conjuration  False  9.0    wizard
"""

from __future__ import annotations

from typing import Any

from semsearch.schema import Schema

SCHEMA = Schema.from_types(
    {"level": "int", "school": "str", "ritual": "bool", "weight": "float", "classes": "list[str]"}
)

RECORDS: list[dict[str, Any]] = [
    {"id": "alarm", "text": "alarm sets a ward against intrusion", "level": 1,
     "school": "abjuration", "ritual": True, "weight": 0.5, "classes": ["wizard", "ranger"]},
    {"id": "cure", "text": "cure wounds heals a creature you touch", "level": 1,
     "school": "evocation", "ritual": False, "classes": ["cleric", "druid"]},
    {"id": "detect", "text": "detect magic senses the presence of magic", "level": 1,
     "school": "divination", "ritual": True, "classes": ["wizard", "cleric", "druid"]},
    {"id": "fireball", "text": "fireball explodes in a burst of flame", "level": 3,
     "school": "evocation", "ritual": False, "weight": 1.5, "classes": ["wizard", "sorcerer"]},
    {"id": "light", "text": "light makes an object shed bright light", "level": 0,
     "school": "evocation", "ritual": False, "weight": 0.0, "classes": ["wizard", "cleric"]},
    {"id": "note", "text": "a plain note without declared fields"},
    {"id": "wish", "text": "wish is the mightiest spell of all", "level": 9,
     "school": "conjuration", "ritual": False, "weight": 9.0, "classes": ["wizard"]},
]  # fmt: skip

ALL_IDS = sorted(r["id"] for r in RECORDS)

#: (filter, expected ids sorted) for every operator and combinator, derived from the table.
FILTER_CASES: list[tuple[dict[str, Any], list[str]]] = [
    ({"level": 1}, ["alarm", "cure", "detect"]),
    ({"level": {"$eq": 3}}, ["fireball"]),
    ({"level": {"$ne": 1}}, ["fireball", "light", "note", "wish"]),
    ({"level": {"$gt": 1}}, ["fireball", "wish"]),
    ({"level": {"$gte": 1}}, ["alarm", "cure", "detect", "fireball", "wish"]),
    ({"level": {"$lt": 1}}, ["light"]),
    ({"level": {"$lte": 1}}, ["alarm", "cure", "detect", "light"]),
    ({"level": {"$in": [0, 9]}}, ["light", "wish"]),
    ({"level": {"$nin": [0, 1]}}, ["fireball", "note", "wish"]),
    ({"level_min": 1, "level_max": 3}, ["alarm", "cure", "detect", "fireball"]),
    ({"school": "evocation"}, ["cure", "fireball", "light"]),
    ({"school": {"$gt": "d"}}, ["cure", "detect", "fireball", "light"]),
    ({"school": {"$lte": "conjuration"}}, ["alarm", "wish"]),
    ({"school": {"$in": ["abjuration", "divination"]}}, ["alarm", "detect"]),
    ({"ritual": True}, ["alarm", "detect"]),
    ({"ritual": False}, ["cure", "fireball", "light", "wish"]),
    ({"ritual": {"$ne": True}}, ["cure", "fireball", "light", "note", "wish"]),
    ({"weight": {"$gte": 1.0}}, ["fireball", "wish"]),
    ({"weight": {"$lt": 1}}, ["alarm", "light"]),
    ({"weight": 0.0}, ["light"]),
    ({"classes": "wizard"}, ["alarm", "detect", "fireball", "light", "wish"]),
    ({"classes": {"$contains": "cleric"}}, ["cure", "detect", "light"]),
    ({"classes": {"$ne": "wizard"}}, ["cure", "note"]),
    ({"classes": {"$in": ["ranger", "druid"]}}, ["alarm", "cure", "detect"]),
    ({"classes": {"$nin": ["wizard", "cleric"]}}, ["note"]),
    ({"$or": [{"level": 9}, {"school": "abjuration"}]}, ["alarm", "wish"]),
    ({"$and": [{"level": 1}, {"ritual": True}]}, ["alarm", "detect"]),
    ({"$not": {"level": 1}}, ["fireball", "light", "note", "wish"]),
    ({"$not": {"classes": "wizard"}}, ["cure", "note"]),
    ({"$not": {"$or": [{"ritual": True}, {"weight": {"$gt": 1}}]}}, ["cure", "light", "note"]),
]
