"""Checks of Python API input, in one place: records, their text, ids and paging arguments.

:class:`semsearch.Collection` runs these before it touches the store, so bad input raises
:class:`~semsearch.errors.InvalidRecord` or :class:`~semsearch.errors.InvalidQuery` naming the
argument, the type received and the type expected, and nothing is written. Search arguments are
checked by :func:`semsearch.search.validate_request`, which uses :func:`check_text` too.

Text must be valid Unicode: a lone UTF-16 surrogate (``"\\ud800"``, which ``json.loads`` makes
from an unpaired ``\\uD800`` escape) cannot be stored in UTF-8, so it is refused with the
position of the first one.
"""

from __future__ import annotations

import hashlib
import json
import math
import unicodedata
from collections.abc import Callable, Iterable, Mapping
from typing import Any, NamedTuple

from semsearch.errors import InvalidFilter, InvalidQuery, InvalidRecord, SemsearchError
from semsearch.schema import Schema, resolve_path

__all__ = [
    "MAX_VALUE_DEPTH",
    "NUL_HINT",
    "SURROGATE_HINT",
    "PreparedRecord",
    "as_ids",
    "check_page",
    "check_text",
    "check_unique",
    "order_fields",
    "prepare_record",
    "surrogate_at",
    "type_name",
]

#: The hint of every lone-surrogate error (Python API, CLI, HTTP, MCP).
SURROGATE_HINT = (
    "the text holds half of a UTF-16 surrogate pair, which is not valid Unicode (JSON with an "
    "unpaired \\uD800-\\uDFFF escape makes one); remove or replace that character"
)


#: The hint of every NUL-character error (queries, record ids, paths and filter values).
NUL_HINT = (
    "remove the NUL (\\x00) characters: PostgreSQL text cannot hold them, so every store "
    "refuses them here alike"
)

#: Most nested lists/objects in one record field value (``{"a": [[1]]}``: field ``a`` is 2 deep).
#: As JSON-heavy stores cap it (e.g. Couchbase, 32); deeper values broke reading them back:
#: pydantic's JSON serializer fails past a few hundred levels and Python's recursion at ~1000.
MAX_VALUE_DEPTH = 32


class PreparedRecord(NamedTuple):
    """A validated record: id, fields (without id and text), declared values, text, hash."""

    id: str
    fields: dict[str, Any]
    attrs: dict[str, Any]
    text: str
    content_hash: str


def type_name(value: object) -> str:
    """The name of ``value``'s type, as error messages show it (``NoneType`` for None)."""
    return type(value).__name__


def surrogate_at(text: str) -> int | None:
    """The 0-based character position of the first lone surrogate in ``text``, or None."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        return exc.start
    return None


def check_text(
    name: str,
    value: object,
    error: type[SemsearchError] = InvalidQuery,
    *,
    optional: bool = False,
    no_nul: bool = False,
) -> None:
    """Raise ``error`` unless ``value`` is a str (or None when ``optional``) of valid Unicode,
    and with ``no_nul`` also when it holds a NUL (U+0000), which PostgreSQL text cannot hold:
    queries and record ids are refused so on every store alike.

    The message names the argument, the type received and the expected type, or the position of
    the first lone surrogate or NUL.
    """
    if value is None and optional:
        return
    if not isinstance(value, str):
        expected = "str or None" if optional else "str"
        raise error(
            f"{name} must be {expected}, got {type_name(value)}", hint=f"pass {name} as text"
        )
    position = surrogate_at(value)
    if position is not None:
        raise error(
            f"{name} holds a lone surrogate {value[position]!r} at character {position}",
            hint=SURROGATE_HINT,
        )
    if no_nul and "\x00" in value:
        raise error(
            f"{name} holds a NUL character (\\x00) at character {value.index(chr(0))}",
            hint=NUL_HINT,
        )


def prepare_record(
    schema: Schema, record: object, name_only: list[str] | None = None
) -> PreparedRecord:
    """Validate one record for ``Collection.upsert`` and derive its text and content hash.

    Args:
        schema: the collection's schema (declared fields, text template).
        record: a JSON object with an ``id`` (non-empty str or int).
        name_only: the record's id is appended when a multi-part template yields only its
            first part (``upsert`` logs one warning for them).
    Raises:
        InvalidRecord: not a JSON object; no usable id (or one holding a NUL); a field value
            nested deeper than :data:`MAX_VALUE_DEPTH`; a declared field of the wrong type; a
            text value that is not a str, number, list or object; a value JSON cannot hold (NaN,
            an infinity, a set...); or text that is not valid Unicode. The message names the
            record and the field (a dotted path such as ``stats.hp`` or ``scores[2]``).
    """
    if not isinstance(record, Mapping):
        raise InvalidRecord(
            f"a record must be a JSON object (dict), got {type_name(record)}",
            hint='{"id": "a", "text": "..."}',
        )
    raw_id = record.get("id")
    if isinstance(raw_id, bool) or not isinstance(raw_id, str | int) or not str(raw_id).strip():
        raise InvalidRecord(
            f"record without a usable id: id={raw_id!r} ({type_name(raw_id)})",
            hint="give every record a non-empty string id",
        )
    record_id = str(raw_id)
    check_text("record id", record_id, InvalidRecord, no_nul=True)
    _check_depth(record_id, record)
    for path in schema.text:
        _check_text_value(record_id, path, resolve_path(record, path))
    fields = {k: v for k, v in record.items() if k not in ("id", "text")}
    attrs = schema.declared_values(record_id, record)
    text, only_first = schema.render(record)
    text = unicodedata.normalize("NFC", text)  # keyword search matches across normal forms
    if only_first and name_only is not None:
        name_only.append(record_id)
    try:  # attrs are in the hash so a newly declared field is filled in on the next upsert
        digest = json.dumps(
            [fields, text, attrs], sort_keys=True, ensure_ascii=False, allow_nan=False
        )
    except (TypeError, ValueError) as exc:
        raise _not_json_error(record_id, record, exc) from exc
    try:
        encoded = digest.encode("utf-8")
    except UnicodeEncodeError:
        raise _surrogate_error(record_id, record) from None
    return PreparedRecord(record_id, fields, attrs, text, hashlib.sha256(encoded).hexdigest())


def _check_depth(record_id: str, record: Mapping[str, Any]) -> None:
    """Raise InvalidRecord when a field value nests deeper than MAX_VALUE_DEPTH (no recursion)."""
    stack: list[tuple[str, Any, int]] = [(str(k), v, 1) for k, v in record.items()]
    while stack:
        field, value, depth = stack.pop()
        if isinstance(value, Mapping):
            children: Iterable[Any] = value.values()
        elif isinstance(value, list | tuple):
            children = value
        else:
            continue
        if depth > MAX_VALUE_DEPTH:
            raise InvalidRecord(
                f"record {record_id!r}: field {field!r} nests lists/objects more than "
                f"{MAX_VALUE_DEPTH} levels deep; nothing from this call was written",
                hint=f"flatten the value to at most {MAX_VALUE_DEPTH} levels, or store it as a "
                "JSON string",
            )
        stack.extend((field, child, depth + 1) for child in children)


def _check_text_value(record_id: str, path: str, value: Any) -> None:
    """Text template values: str, finite number, JSON object, None, or a list of those."""
    if isinstance(value, list):
        for item in value:
            _check_text_value(record_id, path, item)
        return
    ok = value is None or isinstance(value, str | int | float | Mapping)
    if isinstance(value, bool) or (isinstance(value, float) and not math.isfinite(value)):
        ok = False
    if not ok:
        raise InvalidRecord(
            f"record {record_id!r}: text field {path!r} is {type_name(value)} ({value!r:.40}); "
            "expected str",
            hint="pass the text as a str (a list of str is joined with blank lines)",
        )


def _surrogate_error(record_id: str, record: Mapping[str, Any]) -> InvalidRecord:
    """InvalidRecord naming the first field (dotted path) holding a lone surrogate."""
    found = _first_bad(record, "", _surrogate_in)
    where = f"field {found[0]!r} {found[1]}" if found else "a field name"
    return InvalidRecord(
        f"record {record_id!r}: {where} holds a lone surrogate; nothing from this call was written",
        hint=SURROGATE_HINT,
    )


def _not_json_error(record_id: str, record: Mapping[str, Any], exc: Exception) -> InvalidRecord:
    """InvalidRecord naming the record and the first field (dotted path, e.g. ``stats.hp`` or
    ``scores[2]``) whose value JSON cannot hold: NaN, an infinity, or another type (a set...)."""
    found = _first_bad(record, "", _not_json)
    what = f"field {found[0]!r} {found[1]}" if found else f"a value is not JSON ({exc})"
    return InvalidRecord(
        f"record {record_id!r}: {what}; nothing from this call was written",
        hint="use strings, finite numbers, booleans, lists and objects (for a missing number, "
        "leave the field out or send null)",
    )


def _surrogate_in(value: Any) -> str | None:
    position = surrogate_at(value) if isinstance(value, str) else None
    return None if position is None else f"at character {position}"


def _not_json(value: Any) -> str | None:
    if isinstance(value, float) and not math.isfinite(value):
        return f"is {value!r}, which JSON cannot hold"
    if value is None or isinstance(value, str | int | float | Mapping | list | tuple):
        return None
    return f"is a {type_name(value)}, which is not a JSON value"


def _first_bad(value: Any, path: str, bad: Callable[[Any], str | None]) -> tuple[str, str] | None:
    """(dotted path, what is wrong) of the first value, depth first, that ``bad`` describes."""
    why = bad(value)
    if why is not None:
        return path, why
    items: Iterable[tuple[str, Any]] = ()
    if isinstance(value, Mapping):
        items = ((f"{path}.{k}" if path else str(k), v) for k, v in value.items())
    elif isinstance(value, list | tuple):
        items = ((f"{path}[{i}]", v) for i, v in enumerate(value))
    for sub_path, item in items:
        found = _first_bad(item, sub_path, bad)
        if found is not None:
            return found
    return None


def check_unique(prepared: list[PreparedRecord]) -> None:
    """Raise InvalidRecord when two records of one upsert share an id."""
    seen: set[str] = set()
    for record in prepared:
        if record.id in seen:
            raise InvalidRecord(
                f"record id {record.id!r} appears twice in one upsert",
                hint="ids must be unique; nothing was written",
            )
        seen.add(record.id)


def as_ids(ids: object, name: str = "ids") -> list[str]:
    """One id (str or int) or an iterable of ids, as a list of str.

    Raises:
        InvalidQuery: ``ids`` is None, a dict or another type, an item is not a str or int, or
            an id is not valid Unicode or holds a NUL.
    """
    if isinstance(ids, str | int) and not isinstance(ids, bool):
        items: list[object] = [ids]
    elif isinstance(ids, Iterable) and not isinstance(ids, Mapping | bytes):
        items = list(ids)
    else:
        raise InvalidQuery(
            f"{name} must be an id or a list of ids (str), got {type_name(ids)}",
            hint='e.g. get("notes/a.md") or get(["a", "b"])',
        )
    out = []
    for item in items:
        if isinstance(item, bool) or not isinstance(item, str | int):
            raise InvalidQuery(
                f"{name} must hold str ids, got {type_name(item)} ({item!r:.40})",
                hint='e.g. ["a", "b"]',
            )
        check_text("an id", str(item), no_nul=True)
        out.append(str(item))
    return out


def check_page(limit: object, offset: object, max_limit: int) -> None:
    """Raise InvalidQuery unless ``limit`` is an int in [1, max_limit] and ``offset`` in
    [0, 2**63 - 1] (what a store can bind)."""
    for name, value in (("limit", limit), ("offset", offset)):
        if isinstance(value, bool) or not isinstance(value, int):
            raise InvalidQuery(
                f"{name} must be an int, got {type_name(value)} ({value!r:.40})",
                hint=f"e.g. {name}={100 if name == 'limit' else 0}",
            )
    assert isinstance(limit, int) and isinstance(offset, int)  # for mypy: checked above
    if not 1 <= limit <= max_limit:
        raise InvalidQuery(
            f"limit must be in [1, {max_limit}], got {limit}",
            hint=f"e.g. limit={min(100, max_limit)}",
        )
    if not 0 <= offset < 2**63:
        raise InvalidQuery(
            f"offset must be >= 0 (and below 2**63), got {offset}",
            hint="e.g. offset=0 for the first page, offset=limit for the next",
        )


def order_fields(order_by: object, schema: Schema) -> list[tuple[str, bool]]:
    """``order_by`` (a field name, ``-name`` for descending, or a list of them) as
    (field, descending) pairs.

    Raises:
        InvalidQuery: ``order_by`` is not a str or a list of str.
        InvalidFilter: an undeclared field.
    """
    if order_by is None:
        return []
    names = [order_by] if isinstance(order_by, str) else order_by
    if not isinstance(names, list | tuple) or not all(isinstance(n, str) for n in names):
        raise InvalidQuery(
            f"order_by must be a field name or a list of them, got {type_name(order_by)}",
            hint='e.g. order_by="-level" or order_by=["school", "name"]',
        )
    out = []
    for name in names:
        field = name.removeprefix("-")
        if schema.field(field) is None:
            valid = ", ".join(f.name for f in schema.fields) or "none declared"
            raise InvalidFilter(
                f"cannot order by unknown field {field!r}", hint=f"declared fields: {valid}"
            )
        out.append((field, name.startswith("-")))
    return out
