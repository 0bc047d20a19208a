"""Collection schemas: declared, typed fields that filters may use, and the text template.

A record is a JSON object with an ``id``. The schema says which values are declared fields
(``name -> str | int | float | bool | list[str]``, read from a dotted source path such as
``school.name``; a path through a list of objects collects a list, e.g. ``classes.name``) and which
source paths make up the text that is chunked and embedded, in order. Lists of paragraphs are
joined with blank lines and empty parts are skipped. The key ``text`` is special: it is the
record's document text (like chroma's ``documents``) and is not kept among the fields.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, NoReturn, cast

from semsearch.errors import InvalidQuery, InvalidRecord, SemsearchError

__all__ = [
    "FIELD_TYPES",
    "INT64_RANGE",
    "Field",
    "FieldType",
    "Schema",
    "SchemaConflict",
    "short_int",
]

log = logging.getLogger(__name__)

#: The values an ``int`` field can hold: what every store binds (SQLite INTEGER, PostgreSQL
#: bigint, Milvus INT64). Filters use the same range (filters/values.py).
INT64_RANGE = (-(2**63), 2**63 - 1)

FieldType = Literal["str", "int", "float", "bool", "list[str]"]
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
FIELD_TYPES: tuple[FieldType, ...] = ("str", "int", "float", "bool", "list[str]")
Chunker = Literal["text", "markdown"]


class SchemaConflict(SemsearchError):
    """Raised when a collection is reopened with a schema that conflicts with the stored one."""


@dataclass(frozen=True)
class Field:
    """A declared field.

    Attributes:
        name: the field's name in filters and results.
        type: one of ``str``, ``int``, ``float``, ``bool``, ``list[str]``.
        path: dotted source path in the record (default: ``name``).
    """

    name: str
    type: FieldType
    path: str | None = None

    def __post_init__(self) -> None:
        if not _NAME.fullmatch(self.name):
            raise SemsearchError(
                f"field name {self.name!r} is not an identifier",
                hint="use letters, digits and underscores, starting with a letter or _",
            )
        if self.type not in FIELD_TYPES:
            raise SemsearchError(
                f"field {self.name!r} has unknown type {self.type!r}",
                hint=f"use one of: {', '.join(FIELD_TYPES)}",
            )

    @property
    def source(self) -> str:
        """The dotted source path the value is read from."""
        return self.path or self.name


@dataclass(frozen=True)
class Schema:
    """A collection's declared fields, text template and chunker.

    Attributes:
        fields: declared fields, usable in ``where`` filters.
        text: source paths whose values make up the embedded text, in order.
        chunker: ``"text"`` (paragraphs and sentences) or ``"markdown"`` (follows headings).
    """

    fields: tuple[Field, ...] = ()
    text: tuple[str, ...] = ("text",)
    chunker: Chunker = "text"
    _by_name: dict[str, Field] = field(default_factory=dict, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        text = (self.text,) if isinstance(self.text, str) else self.text
        _check_parts(self.fields, text, self.chunker)
        object.__setattr__(self, "fields", tuple(self.fields))
        object.__setattr__(self, "text", tuple(text))
        object.__setattr__(self, "_by_name", {f.name: f for f in self.fields})
        if len(self._by_name) != len(self.fields):
            raise SemsearchError("a schema declares the same field twice", hint="rename one")

    @classmethod
    def from_types(
        cls,
        types: Mapping[str, str],
        *,
        text: tuple[str, ...] = ("text",),
        chunker: Chunker = "text",
    ) -> Schema:
        """Build a schema from ``{"name": "type"}`` or ``{"name": "type=source.path"}``.

        Raises:
            InvalidQuery: ``types`` is not a mapping of str to str (naming what was given).
            SemsearchError: a field name that is not an identifier, or an unknown type.
        """
        if not isinstance(types, Mapping) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in types.items()
        ):
            raise InvalidQuery(
                f"types must map field names to type names (str to str), got "
                f"{type(types).__name__} ({types!r:.60})",
                hint='e.g. Schema.from_types({"level": "int", "school": "str=school.name"})',
            )
        fields = []
        for name, spec in types.items():
            type_, _, path = spec.partition("=")
            fields.append(Field(name, cast(FieldType, type_.strip()), path.strip() or None))
        return cls(tuple(fields), text, chunker)

    def field(self, name: str) -> Field | None:
        """The declared field called ``name``, or None."""
        return self._by_name.get(name)

    # -- (de)serialisation ------------------------------------------------------------------

    def to_json(self) -> str:
        """A stable JSON form stored with the collection."""
        data = {
            "fields": [{"name": f.name, "type": f.type, "path": f.path} for f in self.fields],
            "text": list(self.text),
            "chunker": self.chunker,
        }
        return json.dumps(data, sort_keys=True)

    @classmethod
    def from_json(cls, raw: str) -> Schema:
        """Inverse of :meth:`to_json`."""
        data = json.loads(raw)
        fields = tuple(Field(f["name"], f["type"], f.get("path")) for f in data["fields"])
        return cls(fields, tuple(data["text"]), data.get("chunker", "text"))

    # -- compatibility ----------------------------------------------------------------------

    def merge(self, requested: Schema) -> Schema:
        """The schema to keep when ``requested`` reopens a collection stored with ``self``.

        New fields may be added; anything else that differs raises SchemaConflict showing the
        difference.
        """
        problems = [
            f"field {f.name!r}: stored {self._describe(self.field(f.name))}, asked {self._describe(f)}"
            for f in requested.fields
            if self.field(f.name) is not None and self.field(f.name) != f
        ]
        problems += [
            f"field {f.name!r}: stored, but missing from the new schema"
            for f in self.fields
            if requested.field(f.name) is None
        ]
        if requested.text != self.text:
            problems.append(
                f"text template: stored {list(self.text)}, asked {list(requested.text)}"
            )
        if requested.chunker != self.chunker:
            problems.append(f"chunker: stored {self.chunker!r}, asked {requested.chunker!r}")
        if problems:
            raise SchemaConflict(
                "the schema conflicts with the stored one: " + "; ".join(problems),
                hint="only new fields may be added; create a new collection for other changes",
            )
        added = tuple(f for f in requested.fields if self.field(f.name) is None)
        return Schema(self.fields + added, self.text, self.chunker)

    @staticmethod
    def _describe(f: Field | None) -> str:
        if f is None:
            return "nothing"
        return f"{f.type}" + (f" from {f.path!r}" if f.path else "")

    # -- records ----------------------------------------------------------------------------

    def declared_values(self, record_id: str, record: Mapping[str, Any]) -> dict[str, Any]:
        """The declared fields' values of ``record``, type-checked (None when absent).

        Raises:
            InvalidRecord: a value has the wrong type; names the record, field and both types.
        """
        values: dict[str, Any] = {}
        for f in self.fields:
            value = resolve_path(record, f.source)
            values[f.name] = None if value is None else _coerce(record_id, f, value)
        return values

    def render(self, record: Mapping[str, Any]) -> tuple[str, bool]:
        """(text, name_only): the template's parts joined by blank lines, empty ones skipped;
        ``name_only`` is True when a multi-part template yielded only its first part."""
        parts = [_as_text(resolve_path(record, path)) for path in self.text]
        present = [p for p in parts if p]
        return "\n\n".join(present), len(self.text) > 1 and len(present) == 1 and bool(parts[0])

    def require_text(self, records: Sequence[Mapping[str, Any]]) -> None:
        """Refuse a batch in which the text template yields no text for any record: the
        template then names fields the records do not have (e.g. a typo), and nothing could be
        searched. Used by ``semsearch import`` and the HTTP API's record upserts.

        Raises:
            InvalidRecord: naming the template's paths (nothing is written).
        """
        if records and not any(self.render(r)[0] for r in records):
            raise InvalidRecord(
                f"the text fields {list(self.text)} are empty in every record, so nothing could "
                "be searched",
                hint="name the fields that hold the text with --text (e.g. --text name --text "
                'desc) or the collection\'s "text" list',
            )

    def render_text(self, record_id: str, record: Mapping[str, Any]) -> str:
        """The record's text from the template; logs a warning when it yields only its first part
        (such a record is still embedded)."""
        text, name_only = self.render(record)
        if name_only:
            log.warning("record %r: its text template yields only %r", record_id, self.text[0])
        return text


def _check_parts(fields: Any, text: Any, chunker: object) -> None:
    """Raise InvalidQuery naming the part of a Schema given with the wrong type or value: text
    not a list of str, fields not a list of Field, an unknown chunker, or a source path that
    is not valid Unicode (a lone surrogate)."""
    if not isinstance(text, list | tuple) or not all(isinstance(t, str) for t in text):
        raise InvalidQuery(
            f"text must be a list of field paths (str), got {type(text).__name__}",
            hint='e.g. text=("name", "description")',
        )
    given = type(fields).__name__
    if isinstance(fields, list | tuple):
        bad = [type(f).__name__ for f in fields if not isinstance(f, Field)]
        given = f"{given} holding {bad[0]}" if bad else ""
    if given:
        raise InvalidQuery(
            f"fields must be a list of semsearch.Field, got {given}",
            hint='e.g. fields=(Field("level", "int"),) or Schema.from_types({"level": "int"})',
        )
    if chunker not in ("text", "markdown"):
        raise InvalidQuery(
            f"chunker must be 'text' or 'markdown', got {chunker!r:.40}",
            hint='"markdown" follows headings; "text" splits paragraphs and sentences',
        )
    for path in (*text, *(f.path for f in fields if f.path)):
        try:
            path.encode("utf-8")
        except UnicodeEncodeError:
            raise InvalidQuery(
                f"schema path {path!r} holds a lone surrogate, which is not valid Unicode",
                hint="name the source paths in plain UTF-8 text",
            ) from None


def resolve_path(record: Mapping[str, Any], path: str) -> Any:
    """Read a dotted path; a list of objects along the way yields a list of values."""
    value: Any = record
    for key in path.split("."):
        if isinstance(value, Mapping):
            value = value.get(key)
        elif isinstance(value, list):
            value = [item.get(key) for item in value if isinstance(item, Mapping)]
            value = [v for v in value if v is not None]
        else:
            return None
        if value is None:
            return None
    return value


def _as_text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, list):
        return "\n\n".join(s for s in (_as_text(v) for v in value) if s)
    if isinstance(value, Mapping):
        return json.dumps(value, ensure_ascii=False, sort_keys=True)
    try:
        return str(value).strip()
    except ValueError:  # an int past Python's str() limit (4,300 digits)
        raise InvalidRecord(
            f"a text field holds {short_int(value)}, too long to write as text",
            hint="send it as a string; nothing was written",
        ) from None


def short_int(value: int) -> str:
    """An int for a message: its digits, or its size when too long to print (str() limits)."""
    return str(value) if value.bit_length() < 200 else f"a {value.bit_length()}-bit integer"


def _coerce(record_id: str, f: Field, value: Any) -> Any:
    ok: bool
    if f.type == "bool":
        ok = isinstance(value, bool)
    elif f.type == "int":
        ok = isinstance(value, int) and not isinstance(value, bool)
        if ok and not INT64_RANGE[0] <= value <= INT64_RANGE[1]:
            _refuse_number(record_id, f, value, "outside the 64-bit integer range that stores hold")
    elif f.type == "float":
        ok = isinstance(value, int | float) and not isinstance(value, bool)
        if ok:
            try:
                value = float(value)
            except OverflowError:  # an int past float's range (about 1.8e308)
                _refuse_number(record_id, f, value, "too large for a float")
    elif f.type == "str":
        ok = isinstance(value, str)
    else:
        ok = isinstance(value, list) and all(isinstance(v, str) for v in value)
    if not ok:
        shown = short_int(value) if isinstance(value, int) else json.dumps(value, default=str)
        raise InvalidRecord(
            f"record {record_id!r}: field {f.name!r} expects {f.type}, got "
            f"{_type_name(value)} ({shown[:60]})",
            hint="fix the value or declare the field with the right type; nothing was written",
        )
    return value


def _refuse_number(record_id: str, f: Field, value: int, why: str) -> NoReturn:
    raise InvalidRecord(
        f"record {record_id!r}: field {f.name!r} ({f.type}) got {short_int(value)}, {why}",
        hint=(
            f"int fields hold [{INT64_RANGE[0]}, {INT64_RANGE[1]}]; declare larger numbers as float"
            if f.type == "int"
            else "float fields hold up to about 1.8e308; keep larger numbers in a str field"
        )
        + "; nothing was written",
    )


def _type_name(value: Any) -> str:
    if isinstance(value, list):
        inner = sorted({_type_name(v) for v in value})
        return f"list[{'|'.join(inner) or 'empty'}]"
    return {bool: "bool", int: "int", float: "float", str: "str", dict: "object"}.get(
        type(value), type(value).__name__
    )
