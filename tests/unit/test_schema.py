"""Schemas: declared fields, nested paths, text templates, validation and reopening rules."""

from __future__ import annotations

import logging

import pytest

import semsearch
from semsearch.schema import Field, Schema, SchemaConflict, resolve_path

SPELL = {
    "index": "acid-arrow",
    "name": "Acid Arrow",
    "desc": [
        "A shimmering green arrow streaks toward a target.",
        "The target takes 4d4 acid damage.",
    ],
    "higher_level": [],
    "level": 2,
    "school": {"name": "Evocation"},
    "classes": [{"name": "Wizard"}, {"name": "Sorcerer"}],
    "concentration": False,
}
SPELL_SCHEMA = Schema(
    fields=(
        Field("level", "int"),
        Field("school", "str", "school.name"),
        Field("classes", "list[str]", "classes.name"),
        Field("concentration", "bool"),
    ),
    text=("name", "desc", "higher_level"),
)


def test_nested_paths_and_lists_of_objects() -> None:
    assert resolve_path(SPELL, "school.name") == "Evocation"
    assert resolve_path(SPELL, "classes.name") == ["Wizard", "Sorcerer"]
    assert resolve_path(SPELL, "missing.path") is None
    values = SPELL_SCHEMA.declared_values("acid-arrow", SPELL)
    assert values == {
        "level": 2,
        "school": "Evocation",
        "classes": ["Wizard", "Sorcerer"],
        "concentration": False,
    }


def test_text_template_joins_paragraphs_and_skips_empty_parts() -> None:
    text = SPELL_SCHEMA.render_text("acid-arrow", SPELL)
    assert text == (
        "Acid Arrow\n\nA shimmering green arrow streaks toward a target.\n\n"
        "The target takes 4d4 acid damage."
    )


def test_name_only_text_is_embedded_with_a_warning(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="semsearch.schema"):
        text = SPELL_SCHEMA.render_text("bare", {"name": "Bare Spell", "desc": [], "level": 1})
    assert text == "Bare Spell"
    assert "bare" in caplog.text and "only" in caplog.text


def test_wrong_type_names_record_field_and_both_types(db: semsearch.Database) -> None:
    coll = db.collection("spells", schema=SPELL_SCHEMA, embedder="fake:32")
    bad = {**SPELL, "index": "oops", "id": "oops", "level": "two"}
    with pytest.raises(semsearch.InvalidRecord) as info:
        coll.upsert([{**SPELL, "id": "acid-arrow"}, bad])
    message = info.value.message
    assert "'oops'" in message and "'level'" in message
    assert "expects int" in message and "got str" in message
    assert coll.count() == 0  # nothing from the batch was written


def test_bool_is_not_an_int_and_int_is_a_float() -> None:
    schema = Schema((Field("n", "int"), Field("x", "float")))
    with pytest.raises(semsearch.InvalidRecord):
        schema.declared_values("r", {"n": True})
    assert schema.declared_values("r", {"n": 3, "x": 2}) == {"n": 3, "x": 2.0}


def test_numbers_no_store_can_hold_are_refused_with_the_field_named(
    db: semsearch.Database,
) -> None:
    """Before: 10**30 in an int field was stored as a REAL (and no filter could match it, as
    filters refuse it), 10**400 in a float field and a 5,000-digit int as text raised a bare
    OverflowError / ValueError."""
    schema = Schema((Field("n", "int"), Field("x", "float")))
    top = 2**63 - 1  # int64, worked out from the stores' column types
    assert schema.declared_values("r", {"n": top, "x": 10**300}) == {"n": top, "x": 1e300}
    assert schema.declared_values("r", {"n": -top - 1})["n"] == -(2**63)
    for values, words in (({"n": top + 1}, "64-bit"), ({"n": -(2**63) - 1}, "64-bit"),
                          ({"x": 10**400}, "too large for a float")):  # fmt: skip
        with pytest.raises(semsearch.InvalidRecord) as info:
            schema.declared_values("r1", values)
        assert words in info.value.message and "'r1'" in info.value.message
        assert "nothing was written" in info.value.hint
    coll = db.collection("nums", schema=schema, embedder="fake:16")
    coll.upsert([{"id": "kept", "text": "kept", "n": 1}])
    for record in ({"id": "a", "text": "x", "n": 10**30}, {"id": "b", "text": 10**5000}):
        with pytest.raises(semsearch.InvalidRecord):
            coll.upsert([record])
    assert coll.count() == 1 and coll.get("kept") is not None


def test_schema_model_and_dim_are_stored_with_the_collection(db_path) -> None:
    with semsearch.connect(db_path) as db:
        db.collection("spells", schema=SPELL_SCHEMA, embedder="fake:32").upsert(
            [{**SPELL, "id": "a"}]
        )
    with semsearch.connect(db_path) as db:
        coll = db.collection("spells")
        assert coll.schema == SPELL_SCHEMA
        stats = coll.stats()
        assert (stats.model_id, stats.dim) == ("fake:32", 32)
        assert stats.fields == {
            "level": "int",
            "school": "str",
            "classes": "list[str]",
            "concentration": "bool",
        }


def test_conflicting_schema_shows_the_difference(db: semsearch.Database) -> None:
    db.collection("spells", schema=SPELL_SCHEMA, embedder="fake:32")
    changed = Schema(
        fields=(Field("level", "float"), *SPELL_SCHEMA.fields[1:]), text=SPELL_SCHEMA.text
    )
    with pytest.raises(SchemaConflict) as info:
        db.collection("spells", schema=changed)
    assert "field 'level': stored int, asked float" in info.value.message


def test_adding_a_field_is_allowed(db: semsearch.Database) -> None:
    db.collection("spells", schema=SPELL_SCHEMA, embedder="fake:32")
    extended = Schema(
        fields=(*SPELL_SCHEMA.fields, Field("ritual", "bool")), text=SPELL_SCHEMA.text
    )
    coll = db.collection("spells", schema=extended)
    assert coll.schema.field("ritual") is not None
    assert db.collection("spells").schema.field("ritual") is not None


def test_invalid_field_declarations() -> None:
    with pytest.raises(semsearch.SemsearchError):
        Field("level", "integer")  # type: ignore[arg-type]
    with pytest.raises(semsearch.SemsearchError):
        Field("bad name", "str")
    assert Schema.from_types({"school": "str=school.name"}).field("school") == Field(
        "school", "str", "school.name"
    )


def test_upsert_warns_once_for_many_name_only_records(
    db: semsearch.Database, caplog: pytest.LogCaptureFixture
) -> None:
    coll = db.collection("spells", schema=SPELL_SCHEMA, embedder="fake:32")
    bare = [{"id": f"s{i}", "name": f"Spell {i}", "level": 1} for i in range(50)]
    with caplog.at_level(logging.WARNING, logger="semsearch.collection"):
        report = coll.upsert(bare)
    warnings = [r for r in caplog.records if r.name == "semsearch.collection"]
    assert len(warnings) == 1 and "50 record(s)" in warnings[0].getMessage()
    assert report.chunks_embedded == 50  # still embedded
