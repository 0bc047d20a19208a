"""Turn `--where JSON` and repeated `--filter NAME=VALUE` options into one `where` object."""

from __future__ import annotations

import json
from typing import Any

from semsearch.errors import InvalidFilter
from semsearch.filters import FLOAT_VALUES, read_fraction
from semsearch.schema import Field, Schema

_TRUE, _FALSE = {"true", "1", "yes"}, {"false", "0", "no"}


def build_where(where: str | None, filters: list[str], schema: Schema) -> dict[str, Any] | None:
    """Combine a JSON ``--where`` with ``--filter`` pairs (values typed by the schema); ANDed.

    Raises:
        InvalidFilter: malformed JSON, a pair without ``=``, or a value of the wrong type.
    """
    parts: list[dict[str, Any]] = []
    if where:
        try:
            parsed = json.loads(where)
        except ValueError as exc:
            raise InvalidFilter(
                f"--where is not valid JSON: {exc}", hint='e.g. {"level": 3}'
            ) from exc
        parts.append(parsed)
    for item in filters:
        name, sep, raw = item.partition("=")
        if not sep or not name.strip():
            raise InvalidFilter(f"bad --filter {item!r}", hint="write NAME=VALUE, e.g. level_min=2")
        key = name.strip()
        field = schema.field(key) or schema.field(key.removesuffix("_min").removesuffix("_max"))
        parts.append({key: _typed(raw, field, key)})
    if not parts:
        return None
    return parts[0] if len(parts) == 1 else {"$and": parts}


def _typed(raw: str, field: Field | None, key: str) -> Any:
    if field is None:
        return raw  # parse_filter reports the unknown field with the valid choices
    try:
        if field.type == "int":
            return int(raw)
        if field.type == "float":
            value = read_fraction(raw)  # "1/4" (challenge ratings), else a number
            return value if isinstance(value, float) else float(raw)
        if field.type == "bool":
            if raw.lower() not in _TRUE | _FALSE:
                raise ValueError(raw)
            return raw.lower() in _TRUE
    except ValueError as exc:
        raise InvalidFilter(
            f"--filter {key}: {raw!r} is not a {field.type}",
            hint=f"give a {field.type} value"
            + (f" ({FLOAT_VALUES})" if field.type == "float" else ""),
        ) from exc
    return raw
